package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/kiggy-io/kiggy/bridge"
	"github.com/kiggy-io/kiggy/bridge/iggy"
)

// openIggy connects to Iggy and says plainly which start-up failure it was.
func openIggy(ctx context.Context, o options, logger *slog.Logger) (bridge.Log, error) {
	durability, err := bridge.ParseDurability(o.iggyDurability)
	if err != nil {
		return nil, fmt.Errorf("--iggy-durability: %w", err)
	}
	if durability == bridge.DurabilityBuffered {
		logger.Warn("--iggy-durability buffered: Iggy confirms writes from its in-memory journal, so an iggy-server crash can lose acknowledged records")
	}
	c, err := iggy.Open(ctx, iggy.Config{
		Durability:     durability,
		Addr:           o.iggyAddr,
		Username:       o.iggyUsername,
		Password:       o.iggyPassword,
		Token:          o.iggyToken,
		Stream:         o.iggyStream,
		PoolSize:       int(o.iggyPoolSize),
		RequestTimeout: o.iggyRequestTimeout,
		Logger:         logger,
	})
	switch {
	case err == nil:
		return c, nil
	case errors.Is(err, iggy.ErrUnreachable):
		return nil, fmt.Errorf("--iggy-addr %s: %w", o.iggyAddr, err)
	case errors.Is(err, iggy.ErrAuth):
		return nil, fmt.Errorf("--iggy-username/--iggy-password (or --iggy-token) rejected by the Iggy server at %s: %w", o.iggyAddr, err)
	case errors.Is(err, iggy.ErrProtocol):
		return nil, fmt.Errorf("the server at %s does not speak the Iggy 0.9 protocol kiggy needs: %w", o.iggyAddr, err)
	}
	return nil, fmt.Errorf("connecting to Iggy at %s: %w", o.iggyAddr, err)
}
