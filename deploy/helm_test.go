package deploy

import (
	"bytes"
	"crypto/x509/pkix"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kiggy-io/kiggy/internal/testing/testcerts"
	"go.yaml.in/yaml/v3"
)

// helmVersion is the Helm release the chart is linted and rendered with,
// built from the Go module helm.sh/helm/v4 by .ci/install-test-tools.sh
// (HELM_VERSION there) into helmPath: move both together.
const helmVersion = "v4.3.2"

const (
	chartDir  = "helm/kiggy"
	namespace = "streaming"
	// kubeVersion renders for the oldest Kubernetes the chart supports
	// (Chart.yaml kubeVersion: the pod-index label).
	kubeVersion = "v1.28.0"
	podIndex    = "metadata.labels['apps.kubernetes.io/pod-index']"
)

// helmPath is where .ci/install-test-tools.sh puts the pinned helm:
// $KIGGY_HELM, else <user cache>/kiggy-tools/helm-<version>/helm.
func helmPath() string {
	if p := os.Getenv("KIGGY_HELM"); p != "" {
		return p
	}
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "kiggy-tools", "helm-"+helmVersion, "helm")
}

// helm returns the pinned helm binary, checking its version.
func helm(t *testing.T) string {
	t.Helper()
	p := helmPath()
	if p == "" {
		missing(t, "no user cache directory for helm")
	}
	if _, err := os.Stat(p); err != nil {
		missing(t, fmt.Sprintf("helm %s not at %s (go install helm.sh/helm/v4/cmd/helm@%s)", helmVersion, p, helmVersion))
	}
	// A go install build reports only the minor release (its ldflags set
	// the rest): read the module version from the build information.
	out, err := exec.Command("go", "version", "-m", p).Output()
	if err != nil {
		t.Fatalf("go version -m %s: %v", p, err)
	}
	if !strings.Contains(string(out), "\tmod\thelm.sh/helm/v4\t"+helmVersion+"\t") {
		t.Fatalf("%s is not helm.sh/helm/v4 %s (rerun .ci/install-test-tools.sh):\n%.400s", p, helmVersion, out)
	}
	return p
}

// valueSet is one configuration the chart is rendered with, and what the
// manifests must then hold.
type valueSet struct {
	name, file string
	replicas   int
	fullname   string
	listeners  []string // NAME:port
	adminPort  int
	secret     string   // the Secret the Iggy variables read
	chartMade  bool     // the chart renders that Secret
	token      bool     // KIGGY_IGGY_TOKEN instead of username and password
	pdb        bool     // a PodDisruptionBudget
	image      string   // "" = kiggy:<appVersion>
	sentinels  []string // secret values that must reach the pods through the Secret only
	mounts     []string // volumes mounted
}

var valueSets = []valueSet{
	{
		name: "defaults", replicas: 3, fullname: "rel-kiggy",
		listeners: []string{"PLAINTEXT:9092"}, adminPort: 9644,
		secret: "kiggy-iggy", pdb: true,
	},
	{
		name: "tls-sasl", file: "testdata/values-tls-sasl.yaml", replicas: 5, fullname: "rel-kiggy",
		listeners: []string{"INTERNAL:9092", "SASL_SSL:9093"}, adminPort: 9644,
		secret: "rel-kiggy-iggy", chartMade: true, pdb: true,
		sentinels: []string{"SENTINEL"},
		mounts:    []string{"tls", "sasl", "iggy-ca", "iggy-client"},
	},
	{
		name: "token", file: "testdata/values-token.yaml", replicas: 1, fullname: "gw",
		listeners: []string{"PLAINTEXT:9092"}, adminPort: 9700,
		secret: "iggy-pat", token: true, image: "registry.example/kiggy:0.1.0-test",
	},
}

// TestHelmChart lints the chart and renders it for each value set, then
// checks the manifests: every pod gets a distinct node id and advertised
// address (its own DNS name, resolvable through the headless Service),
// every KIGGY_* variable is one kiggy reads, the probes point at the admin
// port, the Iggy addresses and credentials come from a Secret and no secret
// value appears anywhere else, the files kiggy is told to read are mounted.
func TestHelmChart(t *testing.T) {
	h := helm(t)
	known := configVariables(t)
	appVersion := chartAppVersion(t)
	kiggyBin = ""
	if !testing.Short() {
		kiggyBin = filepath.Join(t.TempDir(), "kiggy")
		if out, err := exec.Command("go", "build", "-o", kiggyBin, "../cmd/kiggy").CombinedOutput(); err != nil {
			t.Fatalf("go build ../cmd/kiggy: %v\n%s", err, out)
		}
	}
	for _, vs := range valueSets {
		t.Run(vs.name, func(t *testing.T) {
			args := []string{"lint", "--strict", chartDir}
			if vs.file != "" {
				args = append(args, "-f", vs.file)
			}
			if out, err := exec.Command(h, args...).CombinedOutput(); err != nil {
				t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
			}
			docs, err := render(h, vs.file)
			if err != nil {
				t.Fatal(err)
			}
			checkManifests(t, vs, docs, known, appVersion)
		})
	}
}

// TestHelmChartRefuses: value sets that cannot work fail at render time,
// naming the setting.
func TestHelmChartRefuses(t *testing.T) {
	h := helm(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--set-json", `listeners=[{"name":"PLAINTEXT","port":9092,"protocol":"SSL"}]`}, "set tls.secret"},
		{[]string{"--set-json", `listeners=[{"name":"PLAINTEXT","port":9092,"protocol":"SASL_PLAINTEXT"}]`}, "set sasl.secret"},
		{[]string{"--set-json", `listeners=[{"name":"plain","port":9092,"protocol":"PLAINTEXT"}]`}, "upper-case"},
		{[]string{"--set-json", `listeners=[{"name":"PLAINTEXT","port":9644,"protocol":"PLAINTEXT"}]`}, "not the admin port"},
		{[]string{"--set-json", `listeners=[{"name":"A","port":9092,"protocol":"PLAINTEXT"},{"name":"A","port":9093,"protocol":"PLAINTEXT"}]`}, "given twice"},
		{[]string{"--set", "replicaCount=0"}, "replicaCount must be at least 1"},
		{[]string{"--set", "iggy.existingSecret="}, "iggy.credentials.addr"},
		{[]string{"--set", "iggy.auth=cert"}, "iggy.auth"},
		{[]string{"--set", "config.KIGGY_IGGY_PASSWORD=hunter2"}, "set by the chart"},
		{[]string{"--set", "config.KIGGY_NODE_ID=7"}, "set by the chart"},
		{[]string{"--set", "config.LOG_LEVEL=debug"}, "only KIGGY_* variables"},
	} {
		args := []string{"template", "rel", chartDir, "--namespace", namespace, "--kube-version", kubeVersion}
		args = append(args, c.args...)
		out, err := exec.Command(h, args...).CombinedOutput()
		if err == nil || !strings.Contains(string(out), c.want) {
			t.Errorf("helm template %s: err %v, want a failure naming %q; output:\n%.600s", strings.Join(c.args, " "), err, c.want, out)
		}
	}
}

// render runs helm template and decodes the manifests.
func render(h, values string) ([]map[string]any, error) {
	args := []string{"template", "rel", chartDir, "--namespace", namespace, "--kube-version", kubeVersion}
	if values != "" {
		args = append(args, "-f", values)
	}
	var stderr bytes.Buffer
	cmd := exec.Command(h, args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("helm %s: %v\n%s", strings.Join(args, " "), err, stderr.Bytes())
	}
	var docs []map[string]any
	dec := yaml.NewDecoder(bytes.NewReader(out))
	for {
		var d map[string]any
		err := dec.Decode(&d)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("rendered manifests: %v\n%s", err, out)
		}
		if d != nil {
			docs = append(docs, d)
		}
	}
	return docs, nil
}

// configVariables returns the KIGGY_* variables kiggy reads
// (docs/CONFIGURATION.md; kiggy refuses any other).
func configVariables(t *testing.T) map[string]bool {
	t.Helper()
	b, err := os.ReadFile("../docs/CONFIGURATION.md")
	if err != nil {
		t.Fatal(err)
	}
	vars := map[string]bool{}
	for _, m := range regexp.MustCompile("(?m)^\\| `--[a-z-]+` \\| `(KIGGY_[A-Z0-9_]+)` \\|").FindAllStringSubmatch(string(b), -1) {
		vars[m[1]] = true
	}
	if len(vars) < 50 {
		t.Fatalf("only %d variables in docs/CONFIGURATION.md: has its table format changed?", len(vars))
	}
	return vars
}

func chartAppVersion(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(chartDir, "Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		AppVersion string `yaml:"appVersion"`
	}
	if err := yaml.Unmarshal(b, &c); err != nil || c.AppVersion == "" {
		t.Fatalf("Chart.yaml appVersion: %q, %v", c.AppVersion, err)
	}
	return c.AppVersion
}

// Accessors over decoded YAML: a missing or mistyped step gives the zero
// value, which the checks then report.
func m(v any, path ...string) map[string]any {
	for _, p := range path {
		mm, _ := v.(map[string]any)
		v = mm[p]
	}
	mm, _ := v.(map[string]any)
	return mm
}

func list(v any) []any { l, _ := v.([]any); return l }

func str(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case nil:
		return ""
	}
	return fmt.Sprint(v)
}

func num(v any) int {
	n, err := strconv.Atoi(str(v))
	if err != nil {
		return -1
	}
	return n
}

func checkManifests(t *testing.T, vs valueSet, docs []map[string]any, known map[string]bool, appVersion string) {
	byKind := map[string][]map[string]any{}
	for _, d := range docs {
		k := str(d["kind"])
		byKind[k] = append(byKind[k], d)
		if ns := str(m(d, "metadata")["namespace"]); ns != "" && ns != namespace {
			t.Errorf("%s %s in namespace %s", k, str(m(d, "metadata")["name"]), ns)
		}
	}
	if len(byKind["StatefulSet"]) != 1 || len(byKind["Service"]) != 2 {
		t.Fatalf("want one StatefulSet and two Services, got %d and %d", len(byKind["StatefulSet"]), len(byKind["Service"]))
	}
	sts := byKind["StatefulSet"][0]
	name := str(m(sts, "metadata")["name"])
	if name != vs.fullname {
		t.Errorf("StatefulSet %q, want %q", name, vs.fullname)
	}
	spec := m(sts, "spec")
	if num(spec["replicas"]) != vs.replicas {
		t.Errorf("replicas %v, want %d", spec["replicas"], vs.replicas)
	}
	podLabels := m(spec, "template", "metadata", "labels")
	for k, v := range m(spec, "selector", "matchLabels") {
		if podLabels[k] != v {
			t.Errorf("selector %s=%v does not match the pod labels %v", k, v, podLabels)
		}
	}

	// The headless Service that gives each pod its DNS name.
	headless := str(spec["serviceName"])
	var hsvc map[string]any
	for _, s := range byKind["Service"] {
		if str(m(s, "metadata")["name"]) == headless {
			hsvc = s
		}
	}
	if hsvc == nil || str(m(hsvc, "spec")["clusterIP"]) != "None" {
		t.Fatalf("serviceName %q: no headless Service of that name", headless)
	}
	if m(hsvc, "spec")["publishNotReadyAddresses"] != true {
		t.Errorf("headless Service: publishNotReadyAddresses should be true (a broker's name must resolve before it is ready)")
	}

	pod := m(spec, "template", "spec")
	containers := list(pod["containers"])
	if len(containers) != 1 {
		t.Fatalf("%d containers, want 1", len(containers))
	}
	c := m(containers[0])
	wantImage := vs.image
	if wantImage == "" {
		wantImage = "kiggy:" + appVersion
	}
	if str(c["image"]) != wantImage {
		t.Errorf("image %q, want %q", c["image"], wantImage)
	}

	// Container ports by name.
	ports := map[string]int{}
	for _, p := range list(c["ports"]) {
		ports[str(m(p)["name"])] = num(m(p)["containerPort"])
	}
	for _, svc := range byKind["Service"] {
		for _, p := range list(m(svc, "spec")["ports"]) {
			if tp := str(m(p)["targetPort"]); ports[tp] == 0 {
				t.Errorf("Service %s: targetPort %q names no container port", str(m(svc, "metadata")["name"]), tp)
			}
		}
		for k, v := range m(svc, "spec", "selector") {
			if podLabels[k] != v {
				t.Errorf("Service %s selects %s=%v, not on the pods", str(m(svc, "metadata")["name"]), k, v)
			}
		}
	}

	// The environment, in order.
	type envVar struct {
		name, value string
		from        map[string]any
	}
	var env []envVar
	index := map[string]int{}
	for i, e := range list(c["env"]) {
		ev := envVar{name: str(m(e)["name"]), value: str(m(e)["value"]), from: m(e, "valueFrom")}
		if _, dup := index[ev.name]; dup {
			t.Errorf("%s set twice", ev.name)
		}
		index[ev.name] = i
		env = append(env, ev)
		if strings.HasPrefix(ev.name, "KIGGY_") && !known[ev.name] {
			t.Errorf("%s: kiggy reads no such variable (and refuses to start on an unknown KIGGY_*)", ev.name)
		}
	}
	get := func(name string) envVar {
		i, ok := index[name]
		if !ok {
			t.Errorf("%s not set", name)
			return envVar{}
		}
		return env[i]
	}
	if v := get("KIGGY_CLUSTER_MEMBERSHIP").value; v != "iggy" {
		t.Errorf("KIGGY_CLUSTER_MEMBERSHIP %q, want iggy", v)
	}
	for _, n := range []string{"KIGGY_PEERS", "KIGGY_LISTEN", "KIGGY_ADVERTISED_HOST", "KIGGY_ADVERTISED_PORT", "KIGGY_INSTANCE_ID"} {
		if _, ok := index[n]; ok {
			t.Errorf("%s set: the chart gives listeners and node ids only through KIGGY_LISTENERS, KIGGY_ADVERTISED_LISTENERS and KIGGY_NODE_ID", n)
		}
	}
	if p := str(m(get("KIGGY_NODE_ID").from, "fieldRef")["fieldPath"]); p != podIndex {
		t.Errorf("KIGGY_NODE_ID from %q, want the pod ordinal (%s)", p, podIndex)
	}
	if p := str(m(get("POD_NAME").from, "fieldRef")["fieldPath"]); p != "metadata.name" {
		t.Errorf("POD_NAME from %q, want metadata.name", p)
	}
	if p := str(m(get("POD_NAMESPACE").from, "fieldRef")["fieldPath"]); p != "metadata.namespace" {
		t.Errorf("POD_NAMESPACE from %q, want metadata.namespace", p)
	}

	// Listeners: bound on all interfaces, one container port each.
	bound := parseListeners(t, "KIGGY_LISTENERS", get("KIGGY_LISTENERS").value)
	var names []string
	for _, l := range bound {
		names = append(names, l.name+":"+l.port)
		if l.host != "0.0.0.0" {
			t.Errorf("listener %s binds %s: want 0.0.0.0 (reachable from other pods)", l.name, l.host)
		}
		if p, _ := strconv.Atoi(l.port); !hasPort(ports, p) {
			t.Errorf("listener %s port %s is no container port (%v)", l.name, l.port, ports)
		}
	}
	if strings.Join(names, ",") != strings.Join(vs.listeners, ",") {
		t.Errorf("listeners %v, want %v", names, vs.listeners)
	}
	protoMap := get("KIGGY_LISTENER_SECURITY_PROTOCOL_MAP").value
	for _, l := range bound {
		if !strings.Contains(","+protoMap+",", ","+l.name+":") {
			t.Errorf("listener %s has no security protocol in %q", l.name, protoMap)
		}
	}

	// Every pod: a distinct node id and its own advertised addresses.
	adv := get("KIGGY_ADVERTISED_LISTENERS")
	for _, ref := range regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`).FindAllStringSubmatch(adv.value, -1) {
		if i, ok := index[ref[1]]; !ok || i > index["KIGGY_ADVERTISED_LISTENERS"] {
			t.Errorf("KIGGY_ADVERTISED_LISTENERS refers to $(%s), not defined before it (Kubernetes leaves it unexpanded)", ref[1])
		}
	}
	nodeIDs, addrs := map[int]string{}, map[string]string{}
	for ord := 0; ord < vs.replicas; ord++ {
		podName := fmt.Sprintf("%s-%d", name, ord)
		vars := map[string]string{"POD_NAME": podName, "POD_NAMESPACE": namespace}
		nodeID := ord // KIGGY_NODE_ID = the apps.kubernetes.io/pod-index label = the ordinal
		if other, dup := nodeIDs[nodeID]; dup {
			t.Errorf("pods %s and %s share node id %d", other, podName, nodeID)
		}
		nodeIDs[nodeID] = podName
		advertised := parseListeners(t, "KIGGY_ADVERTISED_LISTENERS", expand(adv.value, vars))
		if len(advertised) != len(bound) {
			t.Errorf("%s advertises %d listeners, binds %d", podName, len(advertised), len(bound))
		}
		wantHost := fmt.Sprintf("%s.%s.%s.svc.cluster.local", podName, headless, namespace)
		for i, a := range advertised {
			if i < len(bound) && (a.name != bound[i].name || a.port != bound[i].port) {
				t.Errorf("%s advertises %s:%s for listener %s:%s", podName, a.name, a.port, bound[i].name, bound[i].port)
			}
			if a.host != wantHost {
				t.Errorf("%s advertises host %q, want its own DNS name %q", podName, a.host, wantHost)
			}
			addr := net.JoinHostPort(a.host, a.port)
			if other, dup := addrs[addr]; dup {
				t.Errorf("pods %s and %s both advertise %s", other, podName, addr)
			}
			addrs[addr] = podName
		}
	}
	if len(addrs) != vs.replicas*len(bound) {
		t.Errorf("%d distinct advertised addresses, want %d", len(addrs), vs.replicas*len(bound))
	}

	// Admin port and probes.
	adminAddr := get("KIGGY_ADMIN_ADDR").value
	host, port, err := net.SplitHostPort(adminAddr)
	if err != nil || host != "0.0.0.0" || num(port) != vs.adminPort {
		t.Errorf("KIGGY_ADMIN_ADDR %q, want 0.0.0.0:%d", adminAddr, vs.adminPort)
	}
	if ports["admin"] != vs.adminPort {
		t.Errorf("container port admin %d, want %d", ports["admin"], vs.adminPort)
	}
	for probe, path := range map[string]string{"livenessProbe": "/healthz", "readinessProbe": "/readyz"} {
		g := m(c, probe, "httpGet")
		if str(g["path"]) != path {
			t.Errorf("%s path %q, want %s", probe, g["path"], path)
		}
		p := num(g["port"])
		if named, ok := ports[str(g["port"])]; ok {
			p = named
		}
		if p != vs.adminPort {
			t.Errorf("%s port %v (%d), want the admin port %d", probe, g["port"], p, vs.adminPort)
		}
	}

	// Iggy addresses and credentials: from the Secret, never plain.
	creds := []string{"KIGGY_IGGY_ADDR", "KIGGY_IGGY_USERNAME", "KIGGY_IGGY_PASSWORD"}
	if vs.token {
		creds = []string{"KIGGY_IGGY_ADDR", "KIGGY_IGGY_TOKEN"}
		for _, n := range []string{"KIGGY_IGGY_USERNAME", "KIGGY_IGGY_PASSWORD"} {
			if _, ok := index[n]; ok {
				t.Errorf("%s set beside KIGGY_IGGY_TOKEN", n)
			}
		}
	}
	secretKeys := map[string]string{}
	for _, n := range creds {
		e := get(n)
		ref := m(e.from, "secretKeyRef")
		if e.value != "" || ref == nil {
			t.Errorf("%s: want valueFrom.secretKeyRef and no value, got value %q from %v", n, e.value, e.from)
			continue
		}
		if str(ref["name"]) != vs.secret {
			t.Errorf("%s from Secret %q, want %q", n, ref["name"], vs.secret)
		}
		secretKeys[n] = str(ref["key"])
	}
	secretish := regexp.MustCompile(`(?i)password|token|secret|credential`)
	for _, e := range env {
		if secretish.MatchString(e.name) && e.from == nil {
			t.Errorf("%s has a plain value: secrets come from Secrets", e.name)
		}
	}
	var secrets []map[string]any
	for _, s := range byKind["Secret"] {
		secrets = append(secrets, s)
		if s["stringData"] != nil {
			t.Errorf("Secret %s uses stringData", str(m(s, "metadata")["name"]))
		}
	}
	switch {
	case vs.chartMade && len(secrets) != 1:
		t.Errorf("%d Secrets rendered, want the Iggy one", len(secrets))
	case !vs.chartMade && len(secrets) != 0:
		t.Errorf("%d Secrets rendered with an existing Secret given", len(secrets))
	}
	for _, s := range secrets {
		if str(m(s, "metadata")["name"]) != vs.secret {
			t.Errorf("Secret %q rendered, the pods read %q", str(m(s, "metadata")["name"]), vs.secret)
		}
		data := m(s, "data")
		for n, key := range secretKeys {
			b, err := base64.StdEncoding.DecodeString(str(data[key]))
			if err != nil || len(b) == 0 {
				t.Errorf("%s: Secret key %q missing or not base64: %v", n, key, err)
			}
		}
	}
	for _, d := range docs {
		if str(d["kind"]) == "Secret" {
			continue
		}
		b, err := yaml.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range vs.sentinels {
			if bytes.Contains(b, []byte(s)) {
				t.Errorf("%s %s holds the secret value %q in plain", d["kind"], str(m(d, "metadata")["name"]), s)
			}
		}
	}

	// Files kiggy is told to read lie in mounted volumes, each a Secret.
	volumes := map[string]bool{}
	for _, v := range list(pod["volumes"]) {
		volumes[str(m(v)["name"])] = true
		if str(m(v, "secret")["secretName"]) == "" {
			t.Errorf("volume %s is not a Secret", str(m(v)["name"]))
		}
	}
	var mounts []string
	mountPaths := map[string]string{}
	for _, vm := range list(c["volumeMounts"]) {
		n := str(m(vm)["name"])
		mounts = append(mounts, n)
		mountPaths[n] = str(m(vm)["mountPath"])
		if !volumes[n] {
			t.Errorf("volumeMount %s has no volume", n)
		}
		if m(vm)["readOnly"] != true {
			t.Errorf("volumeMount %s is writable", n)
		}
	}
	if strings.Join(mounts, ",") != strings.Join(vs.mounts, ",") {
		t.Errorf("mounts %v, want %v", mounts, vs.mounts)
	}
	for _, e := range env {
		if !strings.HasPrefix(e.name, "KIGGY_") || !strings.HasSuffix(e.name, "_FILE") {
			continue
		}
		in := false
		for _, p := range mountPaths {
			in = in || strings.HasPrefix(e.value, p+"/")
		}
		if !in {
			t.Errorf("%s=%s lies in no mounted volume (%v)", e.name, e.value, mountPaths)
		}
	}

	// Pod hardening, resources, shutdown.
	if m(pod, "securityContext")["runAsNonRoot"] != true || m(c, "securityContext")["readOnlyRootFilesystem"] != true {
		t.Errorf("want runAsNonRoot and a read-only root filesystem")
	}
	if m(c, "resources", "requests") == nil {
		t.Errorf("no resource requests")
	}
	drain := strings.TrimSuffix(get("KIGGY_DRAIN_TIMEOUT").value, "s")
	if num(pod["terminationGracePeriodSeconds"]) <= num(drain) {
		t.Errorf("terminationGracePeriodSeconds %v not above the drain timeout %ss", pod["terminationGracePeriodSeconds"], drain)
	}

	// PodDisruptionBudget.
	pdbs := byKind["PodDisruptionBudget"]
	if vs.pdb != (len(pdbs) == 1) {
		t.Fatalf("%d PodDisruptionBudgets, want %v", len(pdbs), vs.pdb)
	}
	for _, p := range pdbs {
		for k, v := range m(p, "spec", "selector", "matchLabels") {
			if podLabels[k] != v {
				t.Errorf("PodDisruptionBudget selects %s=%v, not on the pods", k, v)
			}
		}
		if num(m(p, "spec")["maxUnavailable"]) != 1 {
			t.Errorf("PodDisruptionBudget maxUnavailable %v, want 1", m(p, "spec")["maxUnavailable"])
		}
	}
	// kiggy itself accepts pod 0's environment, the Secrets' values and
	// mounted files filled with stand-ins (certificates from testcerts).
	if kiggyBin != "" {
		var kenv []string
		vars := map[string]string{}
		files := standInFiles(t)
		for _, e := range env {
			v := e.value
			switch {
			case m(e.from, "fieldRef") != nil:
				v = map[string]string{"metadata.name": name + "-0", "metadata.namespace": namespace, podIndex: "0"}[str(m(e.from, "fieldRef")["fieldPath"])]
			case m(e.from, "secretKeyRef") != nil:
				v = "stand-in"
				if e.name == "KIGGY_IGGY_ADDR" {
					v = "127.0.0.1:1" // nothing listens: kiggy gets past its configuration, then fails to connect
				}
			case strings.HasSuffix(e.name, "_FILE"):
				f, ok := files[e.name]
				if !ok {
					t.Errorf("%s: no stand-in file for it", e.name)
				}
				v = f
			default:
				v = expand(v, vars)
			}
			vars[e.name] = v
			kenv = append(kenv, e.name+"="+v)
		}
		acceptsEnv(t, kiggyBin, kenv)
	}

	t.Logf("%d manifests; %d pods with node ids 0..%d; advertised %d addresses, e.g. %s", len(docs), vs.replicas, vs.replicas-1, len(addrs), expand(adv.value, map[string]string{"POD_NAME": name + "-0", "POD_NAMESPACE": namespace}))
}

func hasPort(ports map[string]int, p int) bool {
	for _, q := range ports {
		if q == p {
			return true
		}
	}
	return false
}

type listener struct{ name, host, port string }

// parseListeners reads NAME://host:port,... as kiggy's --listeners and
// --advertised-listeners take it.
func parseListeners(t *testing.T, what, s string) []listener {
	t.Helper()
	var out []listener
	for _, part := range strings.Split(s, ",") {
		name, addr, ok := strings.Cut(part, "://")
		host, port, err := net.SplitHostPort(addr)
		if !ok || err != nil || name == "" || num(port) <= 0 {
			t.Errorf("%s %q: entry %q is not NAME://host:port", what, s, part)
			continue
		}
		out = append(out, listener{name, host, port})
	}
	return out
}

// expand replaces $(VAR) as Kubernetes does in an env value ($$ escapes).
func expand(s string, vars map[string]string) string {
	re := regexp.MustCompile(`\$\$|\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)
	return re.ReplaceAllStringFunc(s, func(ref string) string {
		if ref == "$$" {
			return "$"
		}
		if v, ok := vars[ref[2:len(ref)-1]]; ok {
			return v
		}
		return ref
	})
}

// kiggyBin is kiggy built for TestHelmChart ("" under -short).
var kiggyBin string

// acceptsEnv runs kiggy with env: a configuration kiggy refuses stops it at
// once (status 2, or 1 when the backend's settings are wrong); an accepted
// one gets it as far as dialling Iggy at the stand-in address, where nothing
// listens (or still retrying when stopped).
func acceptsEnv(t *testing.T, bin string, env []string) {
	t.Helper()
	cmd := exec.Command(bin)
	cmd.Env = env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		// Accepted: it got as far as dialling the stand-in Iggy address.
		if !strings.Contains(out.String(), "dial tcp 127.0.0.1:1: ") {
			t.Errorf("kiggy refuses the chart's environment (%v):\n%s", err, out.String())
		}
	case <-time.After(3 * time.Second):
		cmd.Process.Kill()
		<-done
	}
}

// standInFiles writes what the chart's Secrets would mount: a CA, a server
// and a client certificate, PLAIN and SCRAM users files, by the variable
// that names each.
func standInFiles(t *testing.T) map[string]string {
	t.Helper()
	dir := t.TempDir()
	ca := testcerts.NewCA(t, dir, "ca")
	server := ca.Server(t, dir, "server")
	client := ca.Client(t, dir, "client", pkix.Name{CommonName: "kiggy"})
	users := filepath.Join(dir, "users")
	if err := os.WriteFile(users, []byte("alice:alice-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return map[string]string{
		"KIGGY_SSL_CERT_FILE":                   server.CertFile,
		"KIGGY_SSL_KEY_FILE":                    server.KeyFile,
		"KIGGY_SSL_CA_FILE":                     ca.File,
		"KIGGY_IGGY_TLS_CA_FILE":                ca.File,
		"KIGGY_IGGY_TLS_CERT_FILE":              client.CertFile,
		"KIGGY_IGGY_TLS_KEY_FILE":               client.KeyFile,
		"KIGGY_SASL_PLAIN_USERS_FILE":           users,
		"KIGGY_SASL_SCRAM_BOOTSTRAP_USERS_FILE": users,
	}
}
