package kiggytest

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/kiggy-io/kiggy/bridge"
	"github.com/kiggy-io/kiggy/bridge/iggy"
	"github.com/kiggy-io/kiggy/bridge/iggy/iggytest"
)

// startIggy starts an in-process iggytest server and returns the Iggy
// client connected to it, and the server (for fault tests).
func startIggy(t testing.TB, opts *Options) (bridge.Log, *iggytest.Server) {
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
func connectIggy(t testing.TB, srv *iggytest.Server, opts *Options) bridge.Log {
	t.Helper()
	addr := srv.Addr()
	if addr == nil {
		t.Fatal("kiggytest: iggytest server is stopped")
	}
	return dialIggy(t, addr.String(), opts)
}

// dialIggy opens the Iggy client to addr (one or several seeds, comma
// separated).
func dialIggy(t testing.TB, addr string, opts *Options) bridge.Log {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := iggy.Open(ctx, iggy.Config{Addr: addr, RequestTimeout: 5 * time.Second, Durability: opts.IggyDurability,
		ReadCacheBytes:      opts.IggyReadCacheBytes,
		FetchCacheBytes:     opts.IggyFetchCacheBytes,
		ReconnectBackoffMax: 500 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatalf("kiggytest: iggy client: %v", err)
	}
	return c
}
