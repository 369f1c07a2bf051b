package transactions

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kiggy-io/kiggy/internal/testing/testtools"
)

// javaClasses compiles tests/java/src/kiggy/transactions once per run and
// returns the folder of the classes.
func javaClasses(t testing.TB) string {
	t.Helper()
	_, cp := testtools.JavaClasspath(t)
	javac := testtools.Javac(t)
	classesOnce.Do(func() {
		classesOnce.dir, classesOnce.err = compileJava(javac, cp)
	})
	if classesOnce.err != nil {
		t.Fatal(classesOnce.err)
	}
	return classesOnce.dir
}

var classesOnce struct {
	sync.Once
	dir string
	err error
}

func compileJava(javac, cp string) (string, error) {
	root, err := testtools.RepoRoot()
	if err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp("", "kiggy-txn-classes-")
	if err != nil {
		return "", err
	}
	cleanups = append(cleanups, func() { os.RemoveAll(dir) })
	files, _ := filepath.Glob(filepath.Join(root, "tests", "java", "src", "kiggy", "transactions", "*.java"))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	args := append([]string{"-cp", cp, "-d", dir}, files...)
	if out, err := exec.CommandContext(ctx, javac, args...).CombinedOutput(); err != nil {
		return "", fmt.Errorf("javac %s: %v\n%s", strings.Join(files, " "), err, out)
	}
	return dir, nil
}

// jvmFlags are the JVM options of every program the tests start: a small
// heap, fast start-up, warn-level logging.
var jvmFlags = []string{
	"-Xmx384m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xshare:auto",
	"-Djava.awt.headless=true", "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
}

// startJava starts a Java class with the Kafka 4.x classpath (and the
// classes of tests/java/src/kiggy/transactions when withClasses).
func startJava(t testing.TB, withClasses bool, class string, args ...string) *proc {
	t.Helper()
	java, cp := testtools.JavaClasspath(t)
	if withClasses {
		cp = javaClasses(t) + string(filepath.ListSeparator) + cp
	}
	jargs := append(append(append([]string(nil), jvmFlags...), "-cp", cp, class), args...)
	return startProc(t, java, jargs...)
}

// waitLine waits until a stdout line matches re and returns it; it fails t
// when the process exits first or timeout passes.
func (p *proc) waitLine(re *regexp.Regexp, timeout time.Duration) string {
	p.t.Helper()
	deadline := time.Now().Add(timeout)
	seen := 0
	for {
		lines := p.output()
		for ; seen < len(lines); seen++ {
			if re.MatchString(lines[seen]) {
				return lines[seen]
			}
		}
		select {
		case <-p.done:
			if lines := p.output(); len(lines) > seen {
				continue
			}
			p.t.Fatalf("%s exited (%v) before printing a line matching %s\n%s", p.name, p.exitErr(), re, p.describe())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("%s printed no line matching %s within %v\n%s", p.name, re, timeout, p.describe())
		}
	}
}

// exited reports whether the process has exited.
func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// kill ends the process with SIGKILL and waits until it is gone.
func (p *proc) kill() {
	_ = p.cmd.Process.Kill()
	<-p.done
}

// closeStdin ends the process's input (the helpers stop on it).
func (p *proc) closeStdin() { _ = p.stdin.Close() }
