package bridge

import (
	"bytes"
	"context"
	"maps"
	"testing"

	"github.com/kiggy-io/kiggy/bridge/store"
)

// TestMemSystem: the in-memory system store keeps puts, drops deletes,
// keeps namespaces apart and hands out copies.
func TestMemSystem(t *testing.T) {
	ctx := context.Background()
	m := newMemSystem()
	v := []byte("v1")
	if err := m.PutSystem(ctx, "acl", "k", v); err != nil {
		t.Fatal(err)
	}
	v[0] = 'X' // the store kept its own copy
	m.PutSystem(ctx, "acl", "gone", []byte("x"))
	m.PutSystem(ctx, "acl", "gone", nil)
	m.PutSystem(ctx, "scram", "k", []byte("s"))
	got, _ := m.LoadSystem(ctx, "acl")
	if want := map[string][]byte{"k": []byte("v1")}; !maps.EqualFunc(got, want, bytes.Equal) {
		t.Fatalf("acl = %q, want %q", got, want)
	}
	got["k"][0] = 'Y' // and hands out copies
	again, _ := m.LoadSystem(ctx, "acl")
	if string(again["k"]) != "v1" {
		t.Fatalf("a loaded value aliases the store: %q", again["k"])
	}
	if none, _ := m.LoadSystem(ctx, "none"); len(none) != 0 {
		t.Fatalf("unknown namespace: %q", none)
	}
}

// systemLog is a Log that keeps its own system store.
type systemLog struct {
	store.Log
	*memSystem
}

// TestSystemOf: the gateway uses a backend's own system store when it has
// one and an in-memory one otherwise.
func TestSystemOf(t *testing.T) {
	own := systemLog{memSystem: newMemSystem()}
	if got := systemOf(own); got != store.SystemStore(own) {
		t.Fatalf("systemOf(a SystemStore backend) = %T", got)
	}
	if _, ok := systemOf(struct{ store.Log }{}).(*memSystem); !ok {
		t.Fatal("systemOf(a plain Log) is not the in-memory store")
	}
}
