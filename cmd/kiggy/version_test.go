package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

func TestWantVersion(t *testing.T) {
	for _, c := range []struct {
		args []string
		want bool
	}{
		{nil, false},
		{[]string{"version"}, true},
		{[]string{"--version"}, true},
		{[]string{"-version"}, true},
		{[]string{"--listen", "version"}, false},
		{[]string{"--help"}, false},
	} {
		if got := wantVersion(c.args); got != c.want {
			t.Errorf("wantVersion(%q) = %v, want %v", c.args, got, c.want)
		}
	}
}

func TestVersionText(t *testing.T) {
	const protos = "iggy protocols: 0.12.0 (Iggy 0.10), 0.11.0 (Iggy 0.9)\n"
	got := versionText(nil, false)
	want := "kiggy " + version + "\ncommit: unknown\ngo: " + runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH + "\n" + protos
	if got != want {
		t.Fatalf("without build info:\n%s\nwant:\n%s", got, want)
	}
	bi := &debug.BuildInfo{GoVersion: "go1.99.1", Settings: []debug.BuildSetting{
		{Key: "vcs", Value: "git"},
		{Key: "vcs.revision", Value: "0123456789abcdef0123456789abcdef01234567"},
		{Key: "vcs.modified", Value: "false"},
	}}
	got = versionText(bi, true)
	if !strings.Contains(got, "\ncommit: 0123456789abcdef0123456789abcdef01234567\n") || !strings.Contains(got, "\ngo: go1.99.1 ") || !strings.HasSuffix(got, protos) {
		t.Fatalf("with a revision:\n%s", got)
	}
	bi.Settings[2].Value = "true"
	if got = versionText(bi, true); !strings.Contains(got, "\ncommit: 0123456789abcdef0123456789abcdef01234567 (modified)\n") {
		t.Fatalf("modified tree:\n%s", got)
	}
	// A build without VCS stamping (-buildvcs=false, a tarball).
	if got = versionText(&debug.BuildInfo{GoVersion: "go1.99.1"}, true); !strings.Contains(got, "\ncommit: unknown\n") {
		t.Fatalf("no revision:\n%s", got)
	}
	// ... given its revision by -ldflags -X main.commit (the container build).
	defer func(c string) { commit = c }(commit)
	commit = "feedface"
	if got = versionText(&debug.BuildInfo{GoVersion: "go1.99.1"}, true); !strings.Contains(got, "\ncommit: feedface\n") {
		t.Fatalf("-X main.commit:\n%s", got)
	}
	if got = versionText(bi, true); !strings.Contains(got, "\ncommit: 0123456789abcdef0123456789abcdef01234567 (modified)\n") {
		t.Fatalf("the VCS stamp should win over -X main.commit:\n%s", got)
	}
}

// TestVersionCommand builds the binary from the git checkout and runs
// `kiggy version` and `kiggy --version`: the commit is HEAD's.
func TestVersionCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git not on PATH: no VCS stamp to check")
	}
	head, err := exec.Command(git, "rev-parse", "HEAD").Output()
	if err != nil {
		t.Skipf("not a git checkout: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "kiggy")
	build := exec.Command("go", "build", "-buildvcs=true", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for _, arg := range []string{"version", "--version"} {
		out, err := exec.Command(bin, arg).Output()
		if err != nil {
			t.Fatalf("kiggy %s: %v", arg, err)
		}
		s := string(out)
		if !strings.HasPrefix(s, "kiggy "+version+"\ncommit: "+strings.TrimSpace(string(head))) ||
			!strings.Contains(s, "\ngo: go") || !strings.Contains(s, "0.12.0 (Iggy 0.10), 0.11.0 (Iggy 0.9)") {
			t.Fatalf("kiggy %s:\n%s", arg, s)
		}
	}
}

// TestVersionMatchesChart: the Helm chart deploys this version
// (deploy/helm/kiggy/Chart.yaml appVersion).
func TestVersionMatchesChart(t *testing.T) {
	b, err := os.ReadFile("../../deploy/helm/kiggy/Chart.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "appVersion:"); ok {
			if v = strings.Trim(strings.TrimSpace(v), `"'`); v != version {
				t.Fatalf("Chart.yaml appVersion %q, kiggy version %q: move them together", v, version)
			}
			return
		}
	}
	t.Fatal("Chart.yaml has no appVersion")
}
