// Command nullbroker runs the benchmark's null broker (package
// bench/nullbroker) until SIGINT or SIGTERM, printing the bound address on
// stdout. kbench starts it as a separate process so that its CPU time and
// peak RSS can be read from /proc like every other target's.
//
//	nullbroker -listen 127.0.0.1:0 -partitions 16
package main

import (
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/kiggy-io/kiggy/bench/nullbroker"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:9092", "TCP address to listen on (port 0 = any free port)")
	partitions := flag.Int("partitions", 1, "partitions reported for every topic")
	verbose := flag.Bool("v", false, "log connections closed for bad input")
	flag.Parse()

	level := slog.LevelWarn
	if *verbose {
		level = slog.LevelInfo
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	if *partitions < 1 || *partitions > 1<<16 {
		fmt.Fprintln(os.Stderr, "nullbroker: -partitions must be in [1, 65536]")
		os.Exit(2)
	}
	srv := nullbroker.New(nullbroker.Config{Partitions: int32(*partitions), Logger: logger})
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintln(os.Stderr, "nullbroker:", err)
		os.Exit(1)
	}
	fmt.Println(ln.Addr().String())
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	select {
	case <-sig:
	case err := <-errc:
		fmt.Fprintln(os.Stderr, "nullbroker:", err)
		os.Exit(1)
	}
	srv.Close()
	st := srv.Stats()
	logger.Info("nullbroker stopped", "connections", st.Connections, "requests", st.Requests,
		"produce_requests", st.ProduceRequests, "records", st.Records, "record_bytes", st.RecordBytes)
}
