package iggy

import (
	"math/rand/v2"

	"github.com/kiggy-io/kiggy/bridge/iggy/proto"
)

// Dialects: the client speaks binary protocol 0.11 (Iggy 0.9) and 0.12
// (Iggy 0.10). A session logs in in one; the first login that succeeds
// teaches the client which, and later sessions log in with it. What differs
// between them is listed in docs/design/iggy-protocol.md §9; docs/IGGY.md,
// "Versions", says how each was verified.

// loginDialect is the dialect a new session logs in with: Config.Protocol
// when set, else the one the server last took, else the newest.
func (c *Client) loginDialect() proto.Dialect {
	if c.cfg.Protocol != 0 {
		return c.cfg.Protocol
	}
	if d := proto.Dialect(c.dialect.Load()); d != 0 {
		return d
	}
	return proto.Dialects[0]
}

// learnDialect records that the server took a login in d, logging a change.
func (c *Client) learnDialect(d proto.Dialect) {
	if old := proto.Dialect(c.dialect.Swap(uint32(d))); old != d && old != 0 {
		c.log.Warn("iggy: the server now speaks another protocol", "was", old.String(), "now", d.String())
	}
}

// Dialect returns the protocol dialect the server took at the last login (0
// before the first).
func (c *Client) Dialect() proto.Dialect { return proto.Dialect(c.dialect.Load()) }

// requestIdentifier returns a random non-zero u128, low half first: a 0.12
// request_checksum (§9: "Random identifier for a logical metadata or session
// request. The client keeps it across retries and reconnect resends").
func requestIdentifier() (lo, hi uint64) {
	for {
		lo, hi = rand.Uint64(), rand.Uint64()
		if lo|hi != 0 {
			return lo, hi
		}
	}
}
