package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"os"

	"github.com/kiggy-io/kiggy/bridge/iggy"
	"github.com/kiggy-io/kiggy/bridge/iggy/proto"
	"github.com/kiggy-io/kiggy/bridge/store"
)

// openIggy connects to Iggy and says plainly which start-up failure it was.
func openIggy(ctx context.Context, o options, logger *slog.Logger) (store.Log, error) {
	durability, err := store.ParseDurability(o.iggyDurability)
	if err != nil {
		return nil, fmt.Errorf("--iggy-durability: %w", err)
	}
	if durability == store.DurabilityBuffered {
		logger.Warn("--iggy-durability buffered: Iggy confirms writes from its in-memory journal, so an iggy-server crash can lose acknowledged records")
	}
	protocol, err := iggyProtocol(o.iggyProtocol)
	if err != nil {
		return nil, fmt.Errorf("--iggy-protocol: %w", err)
	}
	tlsConfig, err := iggyTLSConfig(o)
	if err != nil {
		return nil, err
	}
	cacheBytes := o.iggyReadCacheBytes
	if cacheBytes == 0 {
		cacheBytes = -1 // --iggy-read-cache-bytes 0: off
	}
	fetchBytes := o.iggyFetchCacheBytes
	if fetchBytes == 0 {
		fetchBytes = -1 // --iggy-fetch-cache-bytes 0: off
	}
	tailBytes := o.iggyTailWindowBytes
	if tailBytes == 0 {
		tailBytes = -1 // --iggy-tail-window-bytes 0: off
	}
	if o.iggySoleWriter && o.cluster.clustered() {
		// Each instance appends to the partitions it leads, and a
		// partition's leader changes: no instance is the sole writer.
		return nil, errors.New("--iggy-sole-writer: not with --cluster-membership (other instances append to the same topics)")
	}
	c, err := iggy.Open(ctx, iggy.Config{
		ReadCacheBytes:  cacheBytes,
		FetchCacheBytes: fetchBytes,
		TailWindowBytes: tailBytes,
		SoleWriter:      o.iggySoleWriter,
		TLS:             tlsConfig,
		Durability:      durability,
		Addr:            o.iggyAddr,
		Username:        o.iggyUsername,
		Password:        o.iggyPassword,
		Token:           o.iggyToken,
		PasswordLogins:  !o.iggySessionTokens,
		Stream:          o.iggyStream,
		PoolSize:        int(o.iggyPoolSize),
		ReadSessions:    int(o.iggyReadSessions),
		RequestTimeout:  o.iggyRequestTimeout,
		Logger:          logger,
		CommitTail:      clusterCommitTail(o),
		Protocol:        protocol,
	})
	switch {
	case err == nil:
		return c, nil
	case errors.Is(err, iggy.ErrUnreachable):
		return nil, fmt.Errorf("--iggy-addr %s: %w", o.iggyAddr, err)
	case errors.Is(err, iggy.ErrAuth):
		return nil, fmt.Errorf("--iggy-username/--iggy-password (or --iggy-token) rejected by the Iggy server at %s: %w", o.iggyAddr, err)
	case errors.Is(err, iggy.ErrProtocol):
		return nil, fmt.Errorf("the server at %s does not speak an Iggy protocol kiggy speaks (--iggy-protocol %s): %w", o.iggyAddr, o.iggyProtocol, err)
	}
	return nil, fmt.Errorf("connecting to Iggy at %s: %w", o.iggyAddr, err)
}

// iggyProtocol reads --iggy-protocol: auto (0) or a dialect.
func iggyProtocol(s string) (proto.Dialect, error) {
	if s == "auto" {
		return 0, nil
	}
	return proto.ParseDialect(s)
}

// iggyTLSConfig builds the TLS settings of --iggy-tls* (nil without
// --iggy-tls; docs/IGGY.md, "TLS").
func iggyTLSConfig(o options) (*tls.Config, error) {
	if !o.iggyTLS {
		if o.iggyTLSCAFile != "" || o.iggyTLSCertFile != "" || o.iggyTLSKeyFile != "" || o.iggyTLSServerName != "" {
			return nil, errors.New("--iggy-tls-* settings need --iggy-tls")
		}
		return nil, nil
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: o.iggyTLSServerName}
	if o.iggyTLSCAFile != "" {
		pem, err := os.ReadFile(o.iggyTLSCAFile)
		if err != nil {
			return nil, fmt.Errorf("--iggy-tls-ca-file: %w", err)
		}
		tc.RootCAs = x509.NewCertPool()
		if !tc.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--iggy-tls-ca-file %s: no PEM certificate in it", o.iggyTLSCAFile)
		}
	}
	if (o.iggyTLSCertFile == "") != (o.iggyTLSKeyFile == "") {
		return nil, errors.New("--iggy-tls-cert-file and --iggy-tls-key-file go together")
	}
	if o.iggyTLSCertFile != "" {
		cert, err := tls.LoadX509KeyPair(o.iggyTLSCertFile, o.iggyTLSKeyFile)
		if err != nil {
			return nil, fmt.Errorf("--iggy-tls-cert-file/--iggy-tls-key-file: %w", err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	return tc, nil
}
