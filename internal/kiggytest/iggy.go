package kiggytest

import (
	"testing"

	"github.com/kiggy-io/kiggy/bridge"
)

// startIggy starts an in-process iggytest server and returns the Iggy
// client connected to it. Wired when bridge/iggy lands.
func startIggy(t testing.TB) bridge.Log {
	t.Helper()
	t.Fatal("kiggytest: Iggy mode is not wired yet")
	return nil
}
