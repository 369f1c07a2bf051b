package deploy

import (
	"os"
	"os/exec"
	"testing"
)

// requireTools reports whether a missing tool fails the test instead of
// skipping it.
func requireTools() bool {
	return os.Getenv("CI") != "" || os.Getenv("KIGGY_REQUIRE_TOOLS") == "1"
}

// missing skips t for a tool that is not there, or fails it under CI or
// KIGGY_REQUIRE_TOOLS=1.
func missing(t *testing.T, why string) {
	t.Helper()
	why += " (.ci/install-test-tools.sh installs it)"
	if requireTools() {
		t.Fatal(why)
	}
	t.Skipf("skipping: %s; CI or KIGGY_REQUIRE_TOOLS=1 fails instead", why)
}

// promtool returns Prometheus's promtool (Debian package prometheus).
func promtool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("promtool")
	if err != nil {
		missing(t, "promtool not on PATH (Debian package prometheus)")
	}
	return p
}
