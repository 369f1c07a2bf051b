package iggy

import (
	"context"
	"errors"
	"time"

	"github.com/kiggy-io/kiggy/bridge/message"
	"github.com/kiggy-io/kiggy/bridge/store"
)

// The read-only store.Log methods. In a cluster, a read that failed because
// the connection to the primary broke is sent again to the new primary, within
// the caller's deadline, once the client has found it (docs/IGGY.md, "Iggy
// clusters"); a single server keeps the first answer.

// readAttempts bounds how often one read is sent.
const readAttempts = 3

// retryRead runs read until it succeeds, fails for another reason than an
// unreachable primary, the primary did not move, or readAttempts are spent.
func (c *Client) retryRead(ctx context.Context, read func() error) error {
	for attempt := 1; ; attempt++ {
		_, gen := c.target()
		err := read()
		if err == nil || attempt == readAttempts || !errors.Is(err, store.ErrUnavailable) || !c.clustered() || ctx.Err() != nil {
			return err
		}
		if c.awaitPrimary(ctx) != nil {
			return err
		}
		if _, now := c.target(); now == gen {
			return err // the same primary: no failover to retry on
		}
	}
}

// Read polls one partition by offset (PollMessages, strategy Offset, a fixed
// single consumer kind 1 id 0, auto_commit 0) and calls fn for each message
// from offset on. See store.Log.Read. Messages alias the session's reply
// buffer and are valid only during fn. A read that delivered messages before
// it failed is not retried.
func (c *Client) Read(ctx context.Context, topic string, partition int32, offset int64, maxBytes int,
	fn func(*message.Message) bool) (store.Watermarks, error) {
	return c.ReadAt(ctx, time.Time{}, topic, partition, offset, maxBytes, fn)
}

// ReadAt is Read with the clock read by the caller (store.ClockedReads):
// the read cache judges its chunks' age and notes the partition's last
// read at now (the zero time: the clock now). A retried read reads the
// clock anew.
func (c *Client) ReadAt(ctx context.Context, now time.Time, topic string, partition int32, offset int64, maxBytes int,
	fn func(*message.Message) bool) (store.Watermarks, error) {
	if !c.clustered() {
		return c.read(ctx, now, topic, partition, offset, maxBytes, fn)
	}
	var wm store.Watermarks
	var readErr error
	delivered := false
	err := c.retryRead(ctx, func() error {
		wm, readErr = c.read(ctx, now, topic, partition, offset, maxBytes, func(m *message.Message) bool {
			delivered = true
			return fn(m)
		})
		now = time.Time{} // a retry reads the clock anew
		if delivered {
			return nil // fn saw messages: sending again would repeat them
		}
		return readErr
	})
	if err == nil {
		err = readErr
	}
	return wm, err
}

// Watermarks returns a partition's log start and high watermark (GetTopic).
func (c *Client) Watermarks(ctx context.Context, topic string, partition int32) (wm store.Watermarks, err error) {
	err = c.retryRead(ctx, func() error {
		wm, err = c.watermarks(ctx, topic, partition)
		return err
	})
	return wm, err
}

// OffsetForTime returns the first offset whose origin timestamp is ≥ ts.
func (c *Client) OffsetForTime(ctx context.Context, topic string, partition int32, ts uint64) (off int64, ok bool, err error) {
	err = c.retryRead(ctx, func() error {
		off, ok, err = c.offsetForTime(ctx, topic, partition, ts)
		return err
	})
	return off, ok, err
}

// FetchOffset returns a group's committed offset (see store.Log).
func (c *Client) FetchOffset(ctx context.Context, group, topic string, partition int32) (off int64, meta string, ok bool, err error) {
	err = c.retryRead(ctx, func() error {
		off, meta, ok, err = c.fetchOffset(ctx, group, topic, partition)
		return err
	})
	return off, meta, ok, err
}

// Topics lists every topic of the stream.
func (c *Client) Topics(ctx context.Context) (list []store.TopicInfo, err error) {
	err = c.retryRead(ctx, func() error {
		list, err = c.listTopics(ctx)
		return err
	})
	return list, err
}

// Topic describes one topic, or fails with store.ErrUnknownTopic.
func (c *Client) Topic(ctx context.Context, name string) (info store.TopicInfo, err error) {
	err = c.retryRead(ctx, func() error {
		info, err = c.topic(ctx, name)
		return err
	})
	return info, err
}
