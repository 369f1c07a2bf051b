package bridge

import (
	"context"
	"net"

	"github.com/kiggy-io/kiggy/bridge/store"
	"github.com/kiggy-io/kiggy/engine"
)

// Server is a Gateway behind a network engine: the one wiring of a running
// gateway, which cmd/kiggy serves and internal/testing/kiggytest starts for tests.
type Server struct {
	// Gateway is the Kafka request handler (metrics, Close).
	Gateway *Gateway
	// Engine owns the connections (Serve, Shutdown, Stats).
	Engine engine.Server
}

// NewServer builds a Gateway over backend behind an engine of the given kind
// ("" = the platform default). Where cfg leaves them zero, the gateway takes
// its frame limit (from which the decode budget is derived) and its logger
// from ecfg, so the two layers cannot disagree. On error nothing is left
// running.
func NewServer(kind string, ecfg engine.Config, cfg Config, backend store.Log) (*Server, error) {
	if cfg.MaxFrameSize == 0 {
		cfg.MaxFrameSize = ecfg.MaxFrameSize
	}
	if cfg.Logger == nil {
		cfg.Logger = ecfg.Logger
	}
	if cfg.ConnectionCreationRatePerIP == 0 {
		cfg.ConnectionCreationRatePerIP = ecfg.ConnectionCreationRatePerIP
	}
	gw := New(cfg, backend)
	if ecfg.ConnectionCreationRateOf == nil {
		ecfg.ConnectionCreationRateOf = gw.ConnectionCreationRate
	}
	srv, err := engine.New(kind, ecfg, gw)
	if err != nil {
		gw.Close()
		return nil, err
	}
	return &Server{Gateway: gw, Engine: srv}, nil
}

// Serve accepts Kafka connections on ln until Shutdown (engine.Server.Serve).
func (s *Server) Serve(ln net.Listener) error { return s.Engine.Serve(ln) }

// Shutdown drains the engine until ctx ends (its error then says so), then
// stops the gateway's workers. The backend is the caller's to close.
func (s *Server) Shutdown(ctx context.Context) error {
	err := s.Engine.Shutdown(ctx)
	s.Gateway.Close()
	return err
}
