package testtools

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// GoTool returns the go command to build kiggy's binaries with: $GOROOT/bin/go
// when GOROOT is set (the toolchain running the test), else go on PATH.
func GoTool() (string, error) {
	if root := os.Getenv("GOROOT"); root != "" {
		p := filepath.Join(root, "bin", "go")
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p, nil
		}
	}
	p, err := exec.LookPath("go")
	if err != nil {
		return "", errors.New("testtools: the go command is neither in $GOROOT/bin nor on PATH")
	}
	return p, nil
}

// ProcStatusBytes returns a "Vm*:  N kB" field of /proc/<pid>/status (for
// example "VmRSS" or "VmHWM") in bytes.
func ProcStatusBytes(pid int, field string) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	return ParseKB(b, field)
}

// ParseKB returns the "field:  N kB" line of a /proc file in the
// /proc/<pid>/status or /proc/meminfo format, in bytes.
func ParseKB(b []byte, field string) (int64, error) {
	key := field + ":"
	for line := range strings.Lines(string(b)) {
		if !strings.HasPrefix(line, key) {
			continue
		}
		f := strings.Fields(line[len(key):])
		if len(f) != 2 || f[1] != "kB" {
			break
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			break
		}
		return kb << 10, nil
	}
	return 0, fmt.Errorf("testtools: no %s line in a kB format", key)
}

// LastLines returns the last n lines of b (a log), without the final
// newline.
func LastLines(b []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// FileTail returns the last n lines of the file at path, or the error
// reading it as text.
func FileTail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	return LastLines(b, n)
}

// FreePort returns a loopback TCP port that was free a moment ago, for a
// server process started next.
//
// The port is drawn below the kernel's ephemeral range
// (net.ipv4.ip_local_port_range), from which the kernel hands out the
// local ports of outgoing connections and of listeners on port 0: a port
// of that range can be taken between this probe and the server's bind by
// any connection on the machine (CI lost a Connect worker's REST port so),
// one below it only by another FreePort caller's server. Where the range
// leaves no room below it, the kernel picks.
func FreePort() (int, error) {
	if low := ephemeralLow(); low-freePortFloor >= 1000 {
		for range 64 {
			p := freePortFloor + rand.IntN(low-freePortFloor)
			if ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p)); err == nil {
				ln.Close()
				return p, nil
			}
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// freePortFloor is the lowest port FreePort draws: above the well-known
// ports tests and tools use (Kafka's 9092, kiggy's admin 9644, Iggy's 8090
// and 3000).
const freePortFloor = 20000

// ephemeralLow returns the first port of the kernel's ephemeral range, 0
// when it cannot be read (not Linux).
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 0
	}
	low, err := strconv.Atoi(f[0])
	if err != nil {
		return 0
	}
	return low
}
