package kiggyproc

import (
	"errors"
	"net"
	"os"
	"strings"
	"testing"
)

func TestMain(m *testing.M) {
	code := m.Run()
	RemoveBinary()
	os.Exit(code)
}

func TestFlagValue(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
		ok   bool
	}{
		{nil, "", false},
		{[]string{"--listeners"}, "", false},
		{[]string{"--listeners", "A://x:1,B://y:2"}, "A://x:1,B://y:2", true},
		{[]string{"--listeners=A://x:1"}, "A://x:1", true},
		{[]string{"--listeners", "A://x:1", "--listeners=B://y:2"}, "B://y:2", true},
		{[]string{"--listeners-file", "f"}, "", false},
	} {
		if got, ok := flagValue(c.args, "--listeners"); got != c.want || ok != c.ok {
			t.Errorf("flagValue(%q) = %q, %v; want %q, %v", c.args, got, ok, c.want, c.ok)
		}
	}
}

func TestParseMetrics(t *testing.T) {
	m := ParseMetrics([]byte("# HELP a A.\n# TYPE a counter\na 1\nb{x=\"y z\"} 2.5\n\nbad\nc NaNx\n"))
	if len(m) != 2 || m["a"] != 1 || m[`b{x="y z"}`] != 2.5 {
		t.Errorf("ParseMetrics: %v", m)
	}
}

// TestStart runs the binary with two Kafka listeners and the admin one,
// reads all three from its log, scrapes /metrics and stops it. How it
// exits is not checked: kiggy logs its listeners before it installs its
// SIGTERM handler, so a SIGTERM at once may end it by the default action.
func TestStart(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs cmd/kiggy (-short)")
	}
	p := Start(t, Config{
		Args: []string{"--listeners", "PLAINTEXT://127.0.0.1:0,OTHER://127.0.0.1:0",
			"--listener-security-protocol-map", "PLAINTEXT:PLAINTEXT,OTHER:PLAINTEXT",
			"--admin-addr", "127.0.0.1:0"},
		MustLive: true,
	})
	if len(p.Listeners) != 2 || p.Listeners["PLAINTEXT"] == "" || p.Listeners["OTHER"] == "" || p.Addr == "" || p.Admin == "" {
		t.Fatalf("listeners %v, Addr %q, Admin %q\n%s", p.Listeners, p.Addr, p.Admin, p.Tail(20))
	}
	m, err := p.Metrics()
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := m["go_goroutines"]; !ok {
		t.Errorf("/metrics has no go_goroutines")
	}
	p.Stop(t)
	if !p.Exited() {
		t.Error("still running after Stop")
	}
}

// TestTryStartTakenPort: a process that cannot bind its port exits at start;
// TryStart returns ErrExitedAtStart with the log's reason (the cluster
// harnesses retry on it) and the test goes on, even with MustLive.
func TestTryStartTakenPort(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs cmd/kiggy (-short)")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	p, err := TryStart(t, Config{Args: []string{"--listen", ln.Addr().String(), "--admin-addr", ""}, MustLive: true})
	if p != nil || !errors.Is(err, ErrExitedAtStart) || !strings.Contains(err.Error(), "address already in use") {
		t.Fatalf("TryStart on a taken port: %v, %v", p, err)
	}
}
