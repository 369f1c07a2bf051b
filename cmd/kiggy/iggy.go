package main

import (
	"context"
	"errors"
	"log/slog"

	"github.com/kiggy-io/kiggy/bridge"
)

// openIggy connects to Iggy. Wired when bridge/iggy lands.
func openIggy(ctx context.Context, o options, logger *slog.Logger) (bridge.Log, error) {
	return nil, errors.New("--iggy-addr: the Iggy backend is not built into this binary yet")
}
