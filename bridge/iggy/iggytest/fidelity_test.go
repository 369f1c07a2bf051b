package iggytest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

// requireTools makes a missing tool a failure instead of a skip (CI sets it).
const requireTools = "KIGGY_REQUIRE_TOOLS"

func skipOrFail(t *testing.T, reason string) {
	t.Helper()
	if os.Getenv(requireTools) == "1" {
		t.Fatalf("%s (and %s=1)", reason, requireTools)
	}
	t.Skip(reason)
}

// TestFidelityOfficialClient runs tests/iggy_fidelity/fidelity.py, which
// drives iggytest with the official Iggy client (the apache-iggy Python
// package wrapping the Rust SDK) and checks every answer.
func TestFidelityOfficialClient(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		skipOrFail(t, "python3 not found")
	}
	if out, err := exec.Command(py, "-c", "import apache_iggy").CombinedOutput(); err != nil {
		skipOrFail(t, "python package apache-iggy not installed (pip install apache-iggy==0.9.0): "+string(out))
	}
	_, file, _, _ := runtime.Caller(0)
	script := filepath.Join(filepath.Dir(file), "..", "..", "..", "tests", "iggy_fidelity", "fidelity.py")

	s := New(Config{})
	addr, err := s.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, py, script, addr.String())
	out, err := cmd.CombinedOutput()
	t.Logf("fidelity.py output:\n%s", out)
	if err != nil {
		t.Fatalf("fidelity.py failed: %v", err)
	}
}
