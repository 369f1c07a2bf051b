package kiggytest

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/kiggy-io/kiggy/bridge/iggy"
	"github.com/kiggy-io/kiggy/bridge/iggy/iggytest"
	"github.com/kiggy-io/kiggy/bridge/store"
	"github.com/kiggy-io/kiggy/internal/testing/iggyserver"
)

// IggyEnv chooses the Iggy server of Iggy-backend tests: "server" (a real
// iggy-server; a missing binary skips the test, or fails it under
// KIGGY_REQUIRE_TOOLS=1), "model" (the in-process iggytest), or unset (the
// real server when internal/testing/iggyserver finds one, the model otherwise).
const IggyEnv = "KIGGY_TEST_IGGY"

var noServerOnce sync.Once

// RealIggy reports whether Iggy-backend gateways of this run use a real
// iggy-server (IggyEnv).
func RealIggy(t testing.TB) bool {
	t.Helper()
	switch os.Getenv(IggyEnv) {
	case "model":
		return false
	case "server":
		iggyserver.Require(t)
		return true
	}
	if iggyserver.Available() {
		return true
	}
	noServerOnce.Do(func() {
		fmt.Fprintf(os.Stderr, "kiggytest: no iggy-server (%s): Iggy-backend tests run on the iggytest model\n", iggyserver.Env)
	})
	return false
}

// startIggy starts an in-process iggytest server and returns the Iggy
// client connected to it, and the server (for fault tests).
func startIggy(t testing.TB, opts *Options) (store.Log, *iggytest.Server) {
	t.Helper()
	srv := iggytest.New(iggytest.Config{})
	_, err := srv.Start("127.0.0.1:0")
	if err != nil {
		t.Fatalf("kiggytest: iggytest: %v", err)
	}
	t.Cleanup(srv.Close)
	return connectIggy(t, srv, opts), srv
}

// connectIggy opens the Iggy client to a running iggytest server.
// opts give the client's --iggy-durability (DurabilityDefault = written) and
// read cache bound.
func connectIggy(t testing.TB, srv *iggytest.Server, opts *Options) store.Log {
	t.Helper()
	addr := srv.Addr()
	if addr == nil {
		t.Fatal("kiggytest: iggytest server is stopped")
	}
	return dialIggy(t, addr.String(), opts)
}

// dialIggy opens the Iggy client to addr (one or several seeds, comma
// separated).
func dialIggy(t testing.TB, addr string, opts *Options) store.Log {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var ping time.Duration // the client's default
	if opts.IggyNoKeepAlive {
		ping = -1
	}
	c, err := iggy.Open(ctx, iggy.Config{Addr: addr, RequestTimeout: 5 * time.Second, Durability: opts.IggyDurability,
		PingInterval: ping,
		Username:     iggyserver.Username, Password: iggyserver.Password,
		ReadCacheBytes:      opts.IggyReadCacheBytes,
		FetchCacheBytes:     opts.IggyFetchCacheBytes,
		TailWindowBytes:     opts.IggyTailWindowBytes,
		SoleWriter:          opts.IggySoleWriter,
		ReconnectBackoffMax: 500 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatalf("kiggytest: iggy client: %v", err)
	}
	return c
}
