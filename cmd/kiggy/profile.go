package main

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime/pprof"
	"strings"
	"sync"
)

// cpuProfiler writes CPU profiles for --cpuprofile (docs/BENCHMARKS.md,
// "How a run goes"): one profile from start to stop, or, with
// --profile-on-signal, one profile per window between a start and a stop
// signal (SIGUSR1 and SIGUSR2 on Unix), into <path>-<n>.pprof, so that kbench
// profiles exactly its measurement windows.
type cpuProfiler struct {
	path   string
	logger *slog.Logger
	mu     sync.Mutex
	cur    *os.File
	n      int
}

// begin starts a profile: into path itself, or into path-<n>.pprof when
// numbered (one per signal window).
func (p *cpuProfiler) begin(numbered bool) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.endLocked()
	name := p.path
	if numbered {
		p.n++
		name = fmt.Sprintf("%s-%d.pprof", strings.TrimSuffix(p.path, ".pprof"), p.n)
	}
	f, err := os.Create(name)
	if err != nil {
		return fmt.Errorf("--cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return fmt.Errorf("--cpuprofile: %w", err)
	}
	p.cur = f
	return nil
}

// end stops the profile being written, if any.
func (p *cpuProfiler) end() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.endLocked()
}

func (p *cpuProfiler) endLocked() {
	if p.cur == nil {
		return
	}
	pprof.StopCPUProfile()
	p.cur.Close()
	p.logger.Info("cpu profile written", "file", p.cur.Name())
	p.cur = nil
}

// startProfiling starts --cpuprofile; the returned function stops it.
func startProfiling(path string, onSignal bool, logger *slog.Logger) (func(), error) {
	if path == "" {
		if onSignal {
			return nil, errors.New("--profile-on-signal needs --cpuprofile")
		}
		return func() {}, nil
	}
	p := &cpuProfiler{path: path, logger: logger}
	if onSignal {
		return profileOnSignal(p)
	}
	if err := p.begin(false); err != nil {
		return nil, err
	}
	return p.end, nil
}
