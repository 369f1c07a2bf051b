// Package testtools locates the third-party tools that kiggy's interop tests
// and benchmarks drive (kcat, a JVM with the Kafka 4.x jars, python3 with the
// apache-iggy SDK), all installed by .ci/install-test-tools.sh.
//
// The testing.TB helpers skip a test whose tool is missing and say why and how
// to install it; with KIGGY_REQUIRE_TOOLS=1 in the environment they fail it
// instead, so CI cannot go green by skipping. The Find* functions do the same
// lookups without a testing.TB, for the benchmark harness.
package testtools

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// Module is the module path whose go.mod marks the repository root.
const Module = "github.com/kiggy-io/kiggy"

// RequireEnv is the environment variable that turns a missing tool into a
// test failure instead of a skip when set to "1".
const RequireEnv = "KIGGY_REQUIRE_TOOLS"

// Install is how to get every tool this package looks for.
const Install = "run .ci/install-test-tools.sh (as root) from the repository root"

// Require skips t when found is false, printing which tool is missing and how
// to get it; when KIGGY_REQUIRE_TOOLS=1 it fails t instead.
func Require(t testing.TB, name string, found bool, how string) {
	t.Helper()
	if found {
		return
	}
	msg := fmt.Sprintf("%s not available: %s", name, how)
	if os.Getenv(RequireEnv) == "1" {
		t.Fatalf("%s (%s=1, so a missing tool fails the test)", msg, RequireEnv)
	}
	t.Skipf("skipping: %s (set %s=1 to fail instead)", msg, RequireEnv)
}

var rootOnce struct {
	sync.Once
	dir string
	err error
}

// RepoRoot returns the repository root: the nearest directory at or above the
// working directory whose go.mod declares module github.com/kiggy-io/kiggy.
func RepoRoot() (string, error) {
	rootOnce.Do(func() {
		rootOnce.dir, rootOnce.err = findRoot()
	})
	return rootOnce.dir, rootOnce.err
}

func findRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("testtools: %w", err)
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && isModule(b) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("testtools: no go.mod declaring module " + Module + " at or above the working directory")
		}
		dir = parent
	}
}

func isModule(gomod []byte) bool {
	for line := range strings.Lines(string(gomod)) {
		f := strings.Fields(line)
		if len(f) == 2 && f[0] == "module" && strings.Trim(f[1], `"`) == Module {
			return true
		}
	}
	return false
}

// Root returns the repository root or fails t.
func Root(t testing.TB) string {
	t.Helper()
	dir, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// FindKcat returns the path of kcat (or of its old name, kafkacat).
func FindKcat() (string, error) {
	for _, name := range []string{"kcat", "kafkacat"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", errors.New("testtools: kcat not on PATH (Debian package kcat)")
}

// Kcat returns the path of kcat, or skips (fails under KIGGY_REQUIRE_TOOLS=1).
func Kcat(t testing.TB) string {
	t.Helper()
	p, err := FindKcat()
	Require(t, "kcat", err == nil, Install)
	return p
}

// JavaLib is the folder, relative to the repository root, that
// .ci/install-test-tools.sh fills with the Kafka 4.x jars.
const JavaLib = "tests/java/lib"

// FindJava returns the java launcher ($JAVA_HOME/bin/java if JAVA_HOME is set,
// else java on PATH) and a classpath naming every jar of tests/java/lib: the
// Kafka 4.x clients, tools and broker.
func FindJava() (java, classpath string, err error) {
	java, err = findJDKTool("java")
	if err != nil {
		return "", "", err
	}
	root, err := RepoRoot()
	if err != nil {
		return "", "", err
	}
	lib := filepath.Join(root, JavaLib)
	for _, pattern := range []string{"kafka-clients-4.*.jar", "kafka-tools-4.*.jar", "kafka_2.13-4.*.jar"} {
		m, _ := filepath.Glob(filepath.Join(lib, pattern))
		if len(m) == 0 {
			return "", "", fmt.Errorf("testtools: no %s in %s", pattern, lib)
		}
	}
	return java, filepath.Join(lib, "*"), nil
}

// FindJavac returns the javac compiler ($JAVA_HOME/bin/javac if JAVA_HOME is
// set, else javac on PATH).
func FindJavac() (string, error) {
	return findJDKTool("javac")
}

func findJDKTool(name string) (string, error) {
	if home := os.Getenv("JAVA_HOME"); home != "" {
		p := filepath.Join(home, "bin", name)
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p, nil
		}
		return "", fmt.Errorf("testtools: JAVA_HOME=%s has no bin/%s", home, name)
	}
	p, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("testtools: %s not on PATH", name)
	}
	return p, nil
}

// JavaClasspath returns the java launcher and the Kafka 4.x classpath (see
// FindJava), or skips (fails under KIGGY_REQUIRE_TOOLS=1).
func JavaClasspath(t testing.TB) (java, cp string) {
	t.Helper()
	java, cp, err := FindJava()
	Require(t, "Java with the Kafka 4.x jars", err == nil, errText(err)+"; "+Install)
	return java, cp
}

// Javac returns the javac compiler, or skips (fails under
// KIGGY_REQUIRE_TOOLS=1).
func Javac(t testing.TB) string {
	t.Helper()
	p, err := FindJavac()
	Require(t, "javac", err == nil, errText(err)+"; "+Install)
	return p
}

// IggyModule is the import name of the official Iggy Python SDK (PyPI
// package apache-iggy).
const IggyModule = "apache_iggy"

var pythonOnce struct {
	sync.Once
	path string
	err  error
}

// FindPython returns a python3 that can import the official Iggy SDK
// (apache_iggy).
func FindPython() (string, error) {
	pythonOnce.Do(func() {
		p, err := exec.LookPath("python3")
		if err != nil {
			pythonOnce.err = errors.New("testtools: python3 not on PATH")
			return
		}
		out, err := exec.Command(p, "-c", "import "+IggyModule).CombinedOutput()
		if err != nil {
			pythonOnce.err = fmt.Errorf("testtools: %s cannot import %s: %v: %s", p, IggyModule, err, strings.TrimSpace(string(out)))
			return
		}
		pythonOnce.path = p
	})
	return pythonOnce.path, pythonOnce.err
}

// Python returns a python3 that can import apache_iggy, or skips (fails under
// KIGGY_REQUIRE_TOOLS=1).
func Python(t testing.TB) string {
	t.Helper()
	p, err := FindPython()
	Require(t, "python3 with apache-iggy", err == nil, errText(err)+"; "+Install)
	return p
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// SyncBuffer is a bytes.Buffer safe for concurrent writers: a log sink for
// a component with goroutines of its own.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns what was written so far.
func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
