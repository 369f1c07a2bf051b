// Command iggytest runs kiggy's in-memory Iggy test server (package
// bridge/iggy/iggytest) until interrupted, printing the bound address.
//
//	iggytest -addr 127.0.0.1:8090 -username iggy -password iggy
//	iggytest -cluster 3   # a 3-node cluster on free ports; prints "a,b,c"
package main

import (
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/kiggy-io/kiggy/bridge/iggy/iggytest"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8090", "TCP address to listen on")
	user := flag.String("username", "iggy", "root username")
	pass := flag.String("password", "iggy", "root password")
	tokens := flag.String("tokens", "", "comma-separated personal access tokens to accept")
	verbose := flag.Bool("v", false, "log every request")
	cluster := flag.Int("cluster", 0, "run an iggytest.Cluster of this many nodes on free loopback ports instead (-addr ignored)")
	flag.Parse()

	level := slog.LevelWarn
	if *verbose {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	var toks []string
	if *tokens != "" {
		toks = strings.Split(*tokens, ",")
	}
	cfg := iggytest.Config{Username: *user, Password: *pass, Tokens: toks, Logger: log}
	if *cluster > 0 {
		c := iggytest.NewCluster(*cluster, cfg)
		if err := c.Start(); err != nil {
			fmt.Fprintln(os.Stderr, "iggytest:", err)
			os.Exit(1)
		}
		fmt.Println(strings.Join(c.Addrs(), ","))
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
		<-sig
		c.Close()
		return
	}
	srv := iggytest.New(cfg)
	bound, err := srv.Start(*addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "iggytest:", err)
		os.Exit(1)
	}
	fmt.Println(bound.String())
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	<-sig
	srv.Close()
}
