package iggy

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"testing"

	"github.com/kiggy-io/kiggy/bridge/iggy/iggytest"
)

// serveEnv makes the test binary run iggytest instead of the tests, so
// allocation tests can keep the server's allocations out of the process they
// measure.
const serveEnv = "KIGGY_IGGYTEST_SERVE"

func TestMain(m *testing.M) {
	if os.Getenv(serveEnv) == "1" {
		srv := iggytest.New(iggytest.Config{})
		addr, err := srv.Start("127.0.0.1:0")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Println(addr.String())
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, os.Interrupt)
		// Exit when the parent closes our stdin or interrupts us.
		go func() {
			buf := make([]byte, 1)
			os.Stdin.Read(buf)
			sig <- os.Interrupt
		}()
		<-sig
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// startServerProcess runs iggytest in a child process and returns its address.
func startServerProcess(t testing.TB) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), serveEnv+"=1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		cmd.Wait()
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(line)
}
