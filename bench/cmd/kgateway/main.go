// Command kgateway is a bench-only kiggy gateway: the same packages as
// cmd/kiggy (bridge, engine, memlog, and bridge/iggy with --iggy-addr) with
// cmd/kiggy's defaults, plus a CPU profile written on SIGINT/SIGTERM. kbench
// runs it instead of cmd/kiggy when given -profile, so the gateway can be
// profiled under the benchmark's load without adding profiling to the real
// binary. It accepts the subset of cmd/kiggy's flags that kbench passes.
//
// With --profile-on-signal, profiling covers only what kbench measures: each
// SIGUSR1 starts a profile into <cpuprofile>-<n>.pprof (n = 1, 2, ...) and
// SIGUSR2 stops it.
//
//	kgateway --listen 127.0.0.1:9092 --cpuprofile kiggy.pprof
//	go tool pprof -top kiggy.pprof
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"runtime/pprof"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/kiggy-io/kiggy/bridge"
	"github.com/kiggy-io/kiggy/bridge/iggy"
	"github.com/kiggy-io/kiggy/bridge/memlog"
	"github.com/kiggy-io/kiggy/engine"
)

func main() {
	os.Exit(run())
}

func run() int {
	listen := flag.String("listen", "127.0.0.1:9092", "address the Kafka listener binds")
	engineKind := flag.String("engine", "", `network engine: "epoll" or "net" (empty = the default for this OS)`)
	partitionBytes := flag.Int64("memlog-partition-bytes", 1<<30, "bytes kept per embedded-log partition")
	totalBytes := flag.Int64("memlog-total-bytes", 0, "memory the embedded log's data may hold (0 = a quarter of the machine's memory)")
	iggyAddr := flag.String("iggy-addr", "", "Iggy server address; empty = the embedded log")
	iggyUser := flag.String("iggy-username", "iggy", "Iggy user")
	iggyPass := flag.String("iggy-password", "iggy", "Iggy password")
	iggyStream := flag.String("iggy-stream", "kafka", "Iggy stream holding the Kafka topics")
	iggyDurability := flag.String("iggy-durability", "written", "when Iggy confirms a write: written, fsync or buffered (docs/IGGY.md, \"Durability\")")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile here, from start to SIGINT/SIGTERM")
	onSignal := flag.Bool("profile-on-signal", false, "profile only between SIGUSR1 and SIGUSR2, into <cpuprofile>-<n>.pprof")
	flag.String("admin-addr", "", "ignored (kgateway has no admin listener)")
	logLevel := flag.String("log-level", "warn", "debug, info, warn or error")
	flag.Parse()

	var lv slog.Level
	if err := lv.UnmarshalText([]byte(*logLevel)); err != nil {
		fmt.Fprintf(os.Stderr, "kgateway: --log-level %q: %v\n", *logLevel, err)
		return 2
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: lv}))

	switch {
	case *cpuProfile != "" && *onSignal:
		stop := profileOnSignal(*cpuProfile, logger)
		defer stop()
	case *cpuProfile != "":
		f, err := os.Create(*cpuProfile)
		if err != nil {
			logger.Error("kgateway: cpu profile", "err", err)
			return 1
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			logger.Error("kgateway: cpu profile", "err", err)
			return 1
		}
		defer func() {
			pprof.StopCPUProfile()
			f.Close()
		}()
	}

	ctx := context.Background()
	var log bridge.Log
	if *iggyAddr != "" {
		durability, err := bridge.ParseDurability(*iggyDurability)
		if err != nil {
			fmt.Fprintln(os.Stderr, "kgateway: --iggy-durability:", err)
			os.Exit(2)
		}
		c, err := iggy.Open(ctx, iggy.Config{Addr: *iggyAddr, Username: *iggyUser, Password: *iggyPass, Stream: *iggyStream,
			Durability: durability, Logger: logger})
		if err != nil {
			logger.Error("kgateway: --iggy-addr", "err", err)
			return 1
		}
		log = c
	} else {
		log = memlog.New(memlog.Config{PartitionBytes: *partitionBytes, TotalBytes: *totalBytes})
	}
	defer log.Close()

	// cmd/kiggy's defaults (docs/CONFIGURATION.md) are the zero values of
	// bridge.Config and engine.Config; bridge.NewServer is cmd/kiggy's wiring.
	s, err := bridge.NewServer(*engineKind, engine.Config{Logger: logger}, bridge.Config{}, log)
	if err != nil {
		logger.Error("kgateway: --engine", "err", err)
		return 2
	}
	defer s.Gateway.Close()
	srv := s.Engine
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		logger.Error("kgateway: --listen", "err", err)
		return 1
	}
	logger.Info("kgateway listening", "addr", ln.Addr().String())

	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	select {
	case err := <-errc:
		logger.Error("kgateway: serve", "err", err)
		return 1
	case <-sig:
	}
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_ = srv.Shutdown(dctx)
	<-errc
	return 0
}

// profileOnSignal starts a CPU profile into <path>-<n>.pprof on each SIGUSR1
// and stops it on SIGUSR2. The returned function stops a profile still
// running.
func profileOnSignal(path string, logger *slog.Logger) func() {
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, syscall.SIGUSR1, syscall.SIGUSR2)
	var mu sync.Mutex
	var cur *os.File
	n := 0
	stop := func() {
		if cur != nil {
			pprof.StopCPUProfile()
			cur.Close()
			logger.Info("kgateway: cpu profile written", "file", cur.Name())
			cur = nil
		}
	}
	go func() {
		for s := range sigs {
			mu.Lock()
			switch s {
			case syscall.SIGUSR1:
				stop()
				n++
				f, err := os.Create(fmt.Sprintf("%s-%d.pprof", strings.TrimSuffix(path, ".pprof"), n))
				if err == nil {
					err = pprof.StartCPUProfile(f)
					if err != nil {
						f.Close()
					} else {
						cur = f
					}
				}
				if err != nil {
					logger.Error("kgateway: cpu profile", "err", err)
				}
			case syscall.SIGUSR2:
				stop()
			}
			mu.Unlock()
		}
	}()
	return func() {
		signal.Stop(sigs)
		mu.Lock()
		defer mu.Unlock()
		stop()
	}
}
