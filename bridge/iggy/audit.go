package iggy

import (
	"context"
	"log/slog"
)

// auditOn reports whether confirmed appends are logged (debug logging). It
// is the only cost of the audit when debug logging is off.
func (c *Client) auditOn(ctx context.Context) bool {
	return c.log.Enabled(ctx, slog.LevelDebug)
}

// auditAppend logs one append Iggy confirmed: which records (stream, topic,
// partition, the confirmed base offset and count), on which node and
// session the confirmation came, and which primary the client held at that
// moment (docs/IGGY.md "Iggy clusters"). It is called with the session still
// held, so s describes the connection that carried the append. Together with
// the producers' acknowledgements it tells, per record, whether an
// acknowledged record was one Iggy confirmed (docs/MANUAL_TESTING.md).
func (c *Client) auditAppend(ctx context.Context, s *session, topic string, partition int32, base int64, count int) {
	primary, gen := c.target()
	c.log.LogAttrs(ctx, slog.LevelDebug, "iggy: append confirmed",
		slog.String("stream", c.cfg.Stream),
		slog.String("topic", topic),
		slog.Int("partition", int(partition)),
		slog.Int64("base", base),
		slog.Int("count", count),
		slog.String("node", s.addr),
		slog.Uint64("node_gen", s.gen),
		slog.String("primary", primary),
		slog.Uint64("primary_gen", gen),
		slog.Uint64("session", s.sessionID),
		slog.Uint64("request", s.next-1),
	)
}
