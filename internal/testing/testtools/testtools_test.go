package testtools

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// fakeTB records what Require did; Skipf and Fatalf stop the caller the way
// the real ones do (by unwinding), so code after them is not reached.
type fakeTB struct {
	testing.TB
	skipped, failed string
}

type stop struct{}

func (f *fakeTB) Helper() {}
func (f *fakeTB) Skipf(format string, args ...any) {
	f.skipped = fmt.Sprintf(format, args...)
	panic(stop{})
}
func (f *fakeTB) Fatalf(format string, args ...any) {
	f.failed = fmt.Sprintf(format, args...)
	panic(stop{})
}

func runRequire(found bool) (f *fakeTB) {
	f = &fakeTB{}
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(stop); !ok {
				panic(r)
			}
		}
	}()
	Require(f, "frobnicator", found, "apt-get install frobnicator")
	return f
}

func TestRequire(t *testing.T) {
	t.Setenv(RequireEnv, "")
	if f := runRequire(true); f.skipped != "" || f.failed != "" {
		t.Fatalf("found tool: skipped %q failed %q", f.skipped, f.failed)
	}
	f := runRequire(false)
	if f.failed != "" || !strings.Contains(f.skipped, "frobnicator not available: apt-get install frobnicator") {
		t.Fatalf("missing tool without %s: skipped %q failed %q", RequireEnv, f.skipped, f.failed)
	}

	t.Setenv(RequireEnv, "1")
	f = runRequire(false)
	if f.skipped != "" || !strings.Contains(f.failed, "frobnicator not available: apt-get install frobnicator") {
		t.Fatalf("missing tool with %s=1: skipped %q failed %q", RequireEnv, f.skipped, f.failed)
	}
	if f := runRequire(true); f.skipped != "" || f.failed != "" {
		t.Fatalf("found tool with %s=1: skipped %q failed %q", RequireEnv, f.skipped, f.failed)
	}
}

func TestRepoRoot(t *testing.T) {
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil || !isModule(b) {
		t.Fatalf("%s/go.mod: %v, module line found: %v", root, err, isModule(b))
	}
	if _, err := os.Stat(filepath.Join(root, "internal", "testing", "testtools", "testtools.go")); err != nil {
		t.Fatalf("root %s does not hold this package: %v", root, err)
	}
}

func TestFindRootOutsideModule(t *testing.T) {
	t.Chdir(t.TempDir())
	if dir, err := findRoot(); err == nil {
		t.Fatalf("findRoot outside the module = %q, want an error", dir)
	}
}

func TestIsModule(t *testing.T) {
	for _, tc := range []struct {
		gomod string
		want  bool
	}{
		{"module github.com/kiggy-io/kiggy\n\ngo 1.26.0\n", true},
		{"// comment\nmodule \"github.com/kiggy-io/kiggy\"\n", true},
		{"module github.com/kiggy-io/kiggy/tools\n", false},
		{"module example.com/other\n", false},
		{"", false},
	} {
		if got := isModule([]byte(tc.gomod)); got != tc.want {
			t.Errorf("isModule(%q) = %v, want %v", tc.gomod, got, tc.want)
		}
	}
}

func TestLookupsFailWithoutPath(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	t.Setenv("JAVA_HOME", "")
	if p, err := FindKcat(); err == nil {
		t.Errorf("FindKcat with an empty PATH = %q", p)
	}
	if p, err := FindJavac(); err == nil {
		t.Errorf("FindJavac with an empty PATH = %q", p)
	}
	if j, cp, err := FindJava(); err == nil {
		t.Errorf("FindJava with an empty PATH = %q %q", j, cp)
	}
	t.Setenv("JAVA_HOME", t.TempDir())
	if p, err := FindJavac(); err == nil || !strings.Contains(err.Error(), "JAVA_HOME") {
		t.Errorf("FindJavac with an empty JAVA_HOME = %q, %v", p, err)
	}
}

// TestInstalledTools reports what this machine has; under
// KIGGY_REQUIRE_TOOLS=1 (CI) it fails unless every tool is installed.
func TestInstalledTools(t *testing.T) {
	t.Run("kcat", func(t *testing.T) { t.Log(Kcat(t)) })
	t.Run("java", func(t *testing.T) {
		java, cp := JavaClasspath(t)
		t.Log(java, cp)
		t.Log(Javac(t))
	})
	t.Run("python", func(t *testing.T) { t.Log(Python(t)) })
}

func TestParseKB(t *testing.T) {
	b := []byte("Name:\tkiggy\nVmHWM:\t   2048 kB\nVmRSS:\t    512 kB\nBad:\t12\n")
	for field, want := range map[string]int64{"VmHWM": 2 << 20, "VmRSS": 512 << 10} {
		if n, err := ParseKB(b, field); err != nil || n != want {
			t.Errorf("ParseKB(%s) = %d, %v; want %d", field, n, err, want)
		}
	}
	for _, field := range []string{"Bad", "VmSwap", "Vm"} {
		if n, err := ParseKB(b, field); err == nil {
			t.Errorf("ParseKB(%s) = %d, want an error", field, n)
		}
	}
	if _, err := os.Stat("/proc/self/status"); err == nil {
		if n, err := ProcStatusBytes(os.Getpid(), "VmRSS"); err != nil || n <= 0 {
			t.Errorf("ProcStatusBytes(self, VmRSS) = %d, %v", n, err)
		}
	}
	if p, err := GoTool(); err != nil || p == "" {
		t.Errorf("GoTool() = %q, %v", p, err)
	}
}

func TestEventually(t *testing.T) {
	n := 0
	if !Eventually(time.Second, func() bool { n++; return n >= 3 }) {
		t.Fatal("a condition that holds on the third poll did not count")
	}
	start := time.Now()
	if Eventually(50*time.Millisecond, func() bool { return false }) {
		t.Fatal("a condition that never holds counted")
	}
	if d := time.Since(start); d < 50*time.Millisecond {
		t.Fatalf("gave up after %v, before the 50ms timeout", d)
	}
}

func TestConsistently(t *testing.T) {
	start := time.Now()
	if !Consistently(50*time.Millisecond, func() bool { return true }) {
		t.Fatal("a condition that always holds did not count")
	}
	if d := time.Since(start); d < 50*time.Millisecond {
		t.Fatalf("stopped looking after %v, before 50ms", d)
	}
	n := 0
	if Consistently(time.Second, func() bool { n++; return n < 3 }) {
		t.Fatal("a condition that failed on the third poll counted")
	}
}

// TestFreePortBelowEphemeralRange: FreePort's ports are bindable and, where
// the kernel's ephemeral range leaves room, below it, so that no outgoing
// connection can take one before the server binds it.
func TestFreePortBelowEphemeralRange(t *testing.T) {
	low := ephemeralLow()
	for range 20 {
		p, err := FreePort()
		if err != nil {
			t.Fatal(err)
		}
		if low-freePortFloor >= 1000 && (p < freePortFloor || p >= low) {
			t.Fatalf("port %d, want one in [%d, %d)", p, freePortFloor, low)
		}
		ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			t.Fatalf("port %d: %v", p, err)
		}
		ln.Close()
	}
}
