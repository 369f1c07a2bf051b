package bench

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"

	"github.com/kiggy-io/kiggy/internal/testing/testtools"
)

// Host describes the machine a run measured: the figures are this machine's.
type Host struct {
	CPUModel string `json:"cpu_model"`
	// CPUs is the number of logical CPUs the OS reports (nproc).
	CPUs        int    `json:"cpus"`
	MemTotalGiB string `json:"mem_total_gib"`
	Kernel      string `json:"kernel"`
	GoVersion   string `json:"go_version"`
	Java        string `json:"java,omitempty"`
	// LoadAvgStart and LoadAvgEnd are /proc/loadavg's 1, 5 and 15 minute
	// load averages when the run started and ended: other work on the
	// machine competes with the targets and the load generator.
	LoadAvgStart string `json:"loadavg_start,omitempty"`
	LoadAvgEnd   string `json:"loadavg_end,omitempty"`
}

// loadAvg returns the first three fields of /proc/loadavg.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

// String is the one-line hardware summary used in the report and in
// docs/BENCHMARKS.md.
func (h Host) String() string {
	s := fmt.Sprintf("%s, %d CPUs, %s GiB RAM, Linux %s, %s", h.CPUModel, h.CPUs, h.MemTotalGiB, h.Kernel, h.GoVersion)
	if h.Java != "" {
		s += ", " + h.Java
	}
	return s
}

// hostInfo reads the hardware summary from /proc (what lscpu, nproc and
// free -h print) and the java launcher's version.
func hostInfo(java string) Host {
	h := Host{CPUModel: "unknown CPU", CPUs: runtime.NumCPU(), MemTotalGiB: "?", GoVersion: runtime.Version(), LoadAvgStart: loadAvg()}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.Lines(string(b)) {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				h.CPUModel = strings.TrimSpace(v)
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		if n, err := testtools.ParseKB(b, "MemTotal"); err == nil {
			h.MemTotalGiB = fmt.Sprintf("%.1f", float64(n)/(1<<30))
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		h.Kernel = strings.TrimSpace(string(b))
	}
	if java != "" {
		if out, err := exec.Command(java, "-version").CombinedOutput(); err == nil {
			for line := range strings.Lines(string(out)) {
				if strings.Contains(line, "version") {
					h.Java = strings.TrimSpace(line)
					break
				}
			}
		}
	}
	return h
}
