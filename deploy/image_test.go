package deploy

import (
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// instruction is one Containerfile instruction, continuation lines joined.
type instruction struct{ cmd, args string }

func containerfile(t *testing.T) []instruction {
	t.Helper()
	b, err := os.ReadFile("Containerfile")
	if err != nil {
		t.Fatal(err)
	}
	var out []instruction
	var cur string
	for _, line := range strings.Split(string(b), "\n") {
		trimmed := strings.TrimSpace(line)
		if cur == "" && (trimmed == "" || strings.HasPrefix(trimmed, "#")) {
			continue
		}
		if strings.HasSuffix(trimmed, "\\") {
			cur += strings.TrimSuffix(trimmed, "\\") + " "
			continue
		}
		cur += trimmed
		cmd, args, _ := strings.Cut(cur, " ")
		out = append(out, instruction{strings.ToUpper(cmd), strings.TrimSpace(args)})
		cur = ""
	}
	return out
}

// TestContainerfile checks the image recipe without a container runtime:
// a static build from every package cmd/kiggy needs, a scratch runtime as a
// non-root user, the ports and KIGGY_* defaults, and the version label the
// chart's appVersion carries. TestImage builds and runs the image.
func TestContainerfile(t *testing.T) {
	ins := containerfile(t)
	known := configVariables(t)
	var froms, copies []string
	var user, expose, entrypoint, run, label, health string
	env := map[string]string{}
	for _, in := range ins {
		switch in.cmd {
		case "FROM":
			froms = append(froms, in.args)
		case "COPY":
			copies = append(copies, in.args)
		case "USER":
			user = in.args
		case "EXPOSE":
			expose += " " + in.args
		case "ENTRYPOINT":
			entrypoint = in.args
		case "HEALTHCHECK":
			health = in.args
		case "RUN":
			run += " " + in.args
		case "LABEL":
			label += " " + in.args
		case "ENV":
			for _, kv := range strings.Fields(in.args) {
				k, v, _ := strings.Cut(kv, "=")
				env[k] = v
			}
		}
	}
	if len(froms) != 2 || !strings.HasSuffix(froms[0], " AS build") || froms[1] != "scratch" {
		t.Errorf("stages %q: want a build stage, then scratch", froms)
	}
	uid, _, _ := strings.Cut(user, ":")
	if n, err := strconv.Atoi(uid); err != nil || n == 0 {
		t.Errorf("USER %q: want a numeric non-root uid (runAsNonRoot can check only a number)", user)
	}
	for _, p := range []string{"9092", "9644"} {
		if !strings.Contains(expose+" ", " "+p+" ") {
			t.Errorf("EXPOSE%s: want %s", expose, p)
		}
	}
	if env["KIGGY_LISTEN"] != "0.0.0.0:9092" || env["KIGGY_ADMIN_ADDR"] != "0.0.0.0:9644" {
		t.Errorf("ENV %v: the listeners must bind all interfaces in a container", env)
	}
	for k := range env {
		if strings.HasPrefix(k, "KIGGY_") && !known[k] {
			t.Errorf("ENV %s: kiggy reads no such variable", k)
		}
	}
	if !strings.HasSuffix(health, `CMD ["/usr/local/bin/kiggy", "probe"]`) {
		t.Errorf("HEALTHCHECK%s: want kiggy probe (/readyz)", health)
	}
	if entrypoint != `["/usr/local/bin/kiggy"]` {
		t.Errorf("ENTRYPOINT %s", entrypoint)
	}
	if !strings.Contains(run, "CGO_ENABLED=0 go build") || !strings.Contains(run, "-X main.commit=${COMMIT}") {
		t.Errorf("RUN%s: want a static build (CGO_ENABLED=0) given the commit", run)
	}
	if want := `org.opencontainers.image.version="` + chartAppVersion(t) + `"`; !strings.Contains(label, want) {
		t.Errorf("LABEL%s: want %s (the chart's appVersion, kiggy version)", label, want)
	}
	// Every top-level directory of the packages cmd/kiggy is built from.
	out, err := exec.Command("go", "list", "-deps", "../cmd/kiggy").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	const mod = "github.com/kiggy-io/kiggy/"
	for _, pkg := range strings.Fields(string(out)) {
		rest, ok := strings.CutPrefix(pkg, mod)
		if !ok {
			continue
		}
		dir, _, _ := strings.Cut(rest, "/")
		if !contains(copies, dir+"/ "+dir+"/") {
			t.Errorf("cmd/kiggy needs %s, which the build stage does not COPY (COPY %s/ %s/)", pkg, dir, dir)
		}
	}
}

// TestStaticBinary builds kiggy as the Containerfile does and checks that
// the binary needs nothing from a root filesystem (the runtime stage is
// scratch: no dynamic loader, no libc) and prints the commit it was given.
func TestStaticBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := filepath.Join(t.TempDir(), "kiggy")
	cmd := exec.Command("go", "build", "-trimpath", "-buildvcs=false", "-ldflags", "-s -w -X main.commit=c0ffee", "-o", bin, "../cmd/kiggy")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	f, err := elf.Open(bin)
	if err != nil {
		t.Skipf("not an ELF platform: %v", err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			t.Errorf("binary has a %v segment: it is not static", p.Type)
		}
	}
	if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
		t.Errorf("binary links %v", libs)
	}
	out, err := exec.Command(bin, "version").Output()
	if err != nil || !strings.Contains(string(out), "\ncommit: c0ffee\n") {
		t.Errorf("kiggy version: %v\n%s", err, out)
	}
}

// TestComposeFile checks deploy/compose.yaml without a container runtime:
// it parses, builds the image from deploy/Containerfile, points kiggy at
// the iggy service with variables kiggy reads, mounts files that exist, and
// its Prometheus scrapes kiggy's admin port with a configuration and rules
// promtool accepts.
func TestComposeFile(t *testing.T) {
	b, err := os.ReadFile("compose.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Services map[string]struct {
			Image string `yaml:"image"`
			Build struct {
				Context    string `yaml:"context"`
				Dockerfile string `yaml:"dockerfile"`
			} `yaml:"build"`
			Environment map[string]string `yaml:"environment"`
			Ports       []string          `yaml:"ports"`
			Volumes     []string          `yaml:"volumes"`
			DependsOn   []string          `yaml:"depends_on"`
		} `yaml:"services"`
	}
	if err := yaml.Unmarshal(b, &c); err != nil {
		t.Fatalf("compose.yaml: %v", err)
	}
	for _, s := range []string{"iggy", "kiggy", "prometheus"} {
		if _, ok := c.Services[s]; !ok {
			t.Fatalf("no service %s", s)
		}
	}
	k := c.Services["kiggy"]
	if df := filepath.Join(k.Build.Context, k.Build.Dockerfile); df != "../deploy/Containerfile" {
		t.Errorf("kiggy builds %s, want ../deploy/Containerfile", df)
	}
	known := configVariables(t)
	for name := range k.Environment {
		if !known[name] {
			t.Errorf("kiggy: %s is no variable kiggy reads", name)
		}
	}
	if host, _, _ := strings.Cut(k.Environment["KIGGY_IGGY_ADDR"], ":"); c.Services[host].Image == "" {
		t.Errorf("KIGGY_IGGY_ADDR %q names no service", k.Environment["KIGGY_IGGY_ADDR"])
	}
	if !contains(k.Ports, k.Environment["KIGGY_ADVERTISED_PORT"]+":9092") {
		t.Errorf("kiggy advertises port %s, publishes %v", k.Environment["KIGGY_ADVERTISED_PORT"], k.Ports)
	}
	for name, s := range c.Services {
		for _, v := range s.Volumes {
			src, _, _ := strings.Cut(v, ":")
			if strings.HasPrefix(src, ".") {
				if _, err := os.Stat(src); err != nil {
					t.Errorf("%s mounts %s: %v", name, src, err)
				}
			}
		}
	}
	cfg, err := os.ReadFile("prometheus/prometheus.yml")
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`targets: \["kiggy:9644"\]`).Match(cfg) {
		t.Errorf("prometheus.yml does not scrape kiggy:9644")
	}
	p := promtool(t)
	if out, err := exec.Command(p, "check", "config", "prometheus/prometheus.yml").CombinedOutput(); err != nil {
		t.Fatalf("promtool check config: %v\n%s", err, out)
	}
}
