package bench

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/kiggy-io/kiggy/internal/testing/testtools"
)

// clockTicks is USER_HZ, the unit of utime and stime in /proc/<pid>/stat.
// Linux fixes it at 100 on every architecture Go supports (sysconf
// _SC_CLK_TCK returns the same constant), so it is not looked up.
const clockTicks = 100

// errNoProc means /proc is not available (not Linux): CPU and RSS are then
// reported as unknown rather than failing the run.
var errNoProc = errors.New("bench: /proc not available on this system")

// ProcCPU returns the CPU time (user + system, all threads) that process pid
// has used so far, from fields 14 and 15 of /proc/<pid>/stat.
func ProcCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		if os.IsNotExist(err) {
			if _, e := os.Stat("/proc/self/stat"); e != nil {
				return 0, errNoProc
			}
		}
		return 0, fmt.Errorf("bench: %w", err)
	}
	return parseStatCPU(b)
}

// parseStatCPU reads utime+stime from a /proc/<pid>/stat line. The command
// name (field 2) is in parentheses and may contain spaces and parentheses,
// so fields are counted from the last ')'.
func parseStatCPU(b []byte) (time.Duration, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, errors.New("bench: malformed /proc stat line")
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state); utime and stime are fields 14 and 15.
	if len(f) < 13 {
		return 0, errors.New("bench: short /proc stat line")
	}
	ut, err1 := strconv.ParseUint(f[11], 10, 64)
	st, err2 := strconv.ParseUint(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, errors.New("bench: malformed utime/stime in /proc stat line")
	}
	return time.Duration(ut+st) * time.Second / clockTicks, nil
}

// ProcPeakRSS returns process pid's peak resident set size in bytes, VmHWM
// from /proc/<pid>/status.
func ProcPeakRSS(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		if os.IsNotExist(err) {
			if _, e := os.Stat("/proc/self/status"); e != nil {
				return 0, errNoProc
			}
		}
		return 0, fmt.Errorf("bench: %w", err)
	}
	return testtools.ParseKB(b, "VmHWM")
}

// MachineCPU returns the machine's busy CPU time (every CPU, every process:
// all of /proc/stat's "cpu" line but idle and iowait) and its total CPU time
// (busy plus idle and iowait) since boot.
func MachineCPU() (busy, total time.Duration, err error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, errNoProc
	}
	return parseMachineCPU(b)
}

func parseMachineCPU(b []byte) (busy, total time.Duration, err error) {
	line, _, _ := bytes.Cut(b, []byte("\n"))
	f := strings.Fields(string(line))
	// cpu user nice system idle iowait irq softirq steal guest guest_nice;
	// guest time is already counted in user, so only the first 8 add up.
	if len(f) < 8 || f[0] != "cpu" {
		return 0, 0, errors.New("bench: malformed /proc/stat")
	}
	var idle, all uint64
	for i := 1; i < len(f) && i <= 8; i++ {
		v, err := strconv.ParseUint(f[i], 10, 64)
		if err != nil {
			return 0, 0, errors.New("bench: malformed /proc/stat")
		}
		all += v
		if i == 4 || i == 5 {
			idle += v
		}
	}
	tick := time.Second / clockTicks
	return time.Duration(all-idle) * tick, time.Duration(all) * tick, nil
}

// ProcSockets returns how many of process pid's file descriptors are
// sockets (their /proc/<pid>/fd link reads "socket:[inode]").
func ProcSockets(pid int) (int, error) {
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	ents, err := os.ReadDir(dir)
	if err != nil {
		if _, e := os.Stat("/proc/self/fd"); e != nil {
			return 0, errNoProc
		}
		return 0, fmt.Errorf("bench: %w", err)
	}
	n := 0
	for _, e := range ents {
		// A descriptor closed since ReadDir is not counted.
		if l, err := os.Readlink(dir + "/" + e.Name()); err == nil && strings.HasPrefix(l, "socket:") {
			n++
		}
	}
	return n, nil
}
