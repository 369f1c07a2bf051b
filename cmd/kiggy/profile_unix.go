//go:build unix

package main

import (
	"os"
	"os/signal"
	"syscall"
)

// profileOnSignal profiles between each SIGUSR1 and the next SIGUSR2.
func profileOnSignal(p *cpuProfiler) (func(), error) {
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, syscall.SIGUSR1, syscall.SIGUSR2)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for s := range sigs {
			if s == syscall.SIGUSR1 {
				if err := p.begin(true); err != nil {
					p.logger.Error("cpu profile", "err", err)
				}
			} else {
				p.end()
			}
		}
	}()
	return func() {
		signal.Stop(sigs)
		close(sigs)
		<-done
		p.end()
	}, nil
}
