//go:build !unix

package main

import "errors"

// profileOnSignal needs SIGUSR1/SIGUSR2, which only Unix has.
func profileOnSignal(*cpuProfiler) (func(), error) {
	return nil, errors.New("--profile-on-signal needs a Unix system")
}
