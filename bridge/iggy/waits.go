package iggy

// Readiness waits (store.AppendWaiter; docs/IGGY.md, "Waiting for
// appends"): protocol 0.12's WaitForMessages (code 107, §9) asks the server
// to answer when one of up to 1000 partitions of a topic holds a message at
// a start point, or when the wait has passed (iggy_binary_protocol
// 0.11.1-edge.4 requests/messages/wait_for_messages.rs: "Waits until at
// least one partition holds a message at its start point. Reads and commits
// nothing.").
//
// A wait holds its connection for as long as it waits, so waits run on
// sessions of their own, outside the pool (Config.WaitSessions): a parked
// Fetch never holds a session a Produce waits for. Each wait session has a
// worker goroutine; the caller hands it a job and selects on the result and
// its context, so a caller whose context ends returns at once. Its worker
// then cancels the wait on the server: CancelDeferredRequest (code 108)
// names the wait's request number on the same connection (consensus/
// request.rs deferred_cancellation: "A fire-and-forget cancellation for this
// deferred request. It must follow the original frame on the same
// connection"). The crate does not say whether the server answers the
// cancelled request itself; a session is one request in lockstep (§1.8), so
// the worker reads on for cancelGrace: a reply to the wait keeps the
// session in step and it serves the next wait; none closes it (the next
// wait reconnects).
//
// Partitions are waited on where their reads go (routes.go): partitions
// with a route of their own on their node, the others on the metadata
// primary, one wait per node and per 1000 partitions, all at once; the
// first that answers ready decides.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/kiggy-io/kiggy/bridge/iggy/proto"
	"github.com/kiggy-io/kiggy/bridge/store"
)

// cancelGrace is how long a worker reads on for the reply to a wait it
// cancelled before it closes the session.
const cancelGrace = 2 * time.Second

// ErrWaitBusy means every wait session is parked on another wait: the
// caller polls instead. It wraps store.ErrUnavailable.
var ErrWaitBusy = fmt.Errorf("%w: iggy: every wait session is busy (Config.WaitSessions)", store.ErrUnavailable)

var _ store.AppendWaiter = (*Client)(nil)

// waits are the client's wait sessions and their workers.
type waits struct {
	idle chan *waiter
	// scan serialises idleWaiter: a scan holds several idle waiters out of
	// idle for a moment, and another caller finding idle empty meanwhile
	// would be told every session is busy.
	scan  sync.Mutex
	all   []*waiter
	calls sync.Pool // *waitCall
}

// waiter is one wait session and its worker goroutine.
type waiter struct {
	c     *Client
	s     *session
	ctx   context.Context // the client's lifetime (connect, login)
	start chan struct{}   // a job is in the fields below

	// The job, written by the caller while the waiter is idle.
	pool    *nodePool // where the partitions' reads go; nil = the metadata primary
	frame   []byte    // header space, then the WaitForMessages body
	parts   []uint32  // the job's partitions, ascending (the reply is checked against them)
	offs    []uint64  // and their offsets
	timeout time.Duration

	mu        sync.Mutex
	call      *waitCall // the call the running job answers; nil when idle
	abandoned bool      // its caller left: the result is dropped
	sent      uint64    // request number of the wait on the wire, 0 when none
	conn      interface {
		Write([]byte) (int, error)
		SetReadDeadline(time.Time) error
	} // the connection the wait was sent on
	cancel [proto.HeaderSize]byte // its CancelDeferredRequest frame
}

// waitCall is one WaitForAppend: the jobs it handed out and their results.
type waitCall struct {
	results chan waitResult // capacity: every wait session
	ws      []*waiter       // the waiters of its jobs
	pools   []*nodePool     // scratch: the distinct routes of its partitions
	pairs   []waitPair      // scratch: one route's partitions and offsets
}

type waitPair struct {
	partition uint32
	offset    uint64
}

// waitResult is a job's outcome: ready, or the error.
type waitResult struct {
	ready bool
	err   error
}

// startWaits creates the wait sessions and runs their workers.
func (c *Client) startWaits() {
	n := c.cfg.WaitSessions
	if n <= 0 {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	c.waits.idle = make(chan *waiter, n)
	c.waits.calls.New = func() any { return &waitCall{results: make(chan waitResult, n)} }
	for range n {
		w := &waiter{c: c, s: newSession(c), ctx: ctx, start: make(chan struct{}, 1),
			frame: make([]byte, proto.HeaderSize, 512)}
		c.waits.all = append(c.waits.all, w)
		c.waits.idle <- w
		c.wg.Add(1)
		go w.run()
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		<-c.done
		cancel()
		// A worker reading a parked wait's reply stops now.
		for _, w := range c.waits.all {
			w.mu.Lock()
			if w.conn != nil {
				_ = w.conn.SetReadDeadline(time.Now())
			}
			w.mu.Unlock()
		}
	}()
}

// WaitForAppend implements store.AppendWaiter with WaitForMessages: it
// returns ready once one of partitions holds a message at its offset or
// past it, not ready when wait passed, and ctx's error at once when ctx
// ends (the server's wait is cancelled in the background). On protocol
// 0.11 (Iggy 0.9, which has no such command: it answers code 107 with 3
// InvalidCommand) it returns store.ErrUnsupported without a round trip;
// with every wait session busy, ErrWaitBusy. In steady state it does not
// allocate.
func (c *Client) WaitForAppend(ctx context.Context, topic string, partitions []int32, offsets []int64, wait time.Duration) (bool, error) {
	switch {
	case len(partitions) != len(offsets):
		return false, fmt.Errorf("iggy: WaitForAppend: %d partitions but %d offsets", len(partitions), len(offsets))
	case len(partitions) == 0:
		return false, errors.New("iggy: WaitForAppend: no partitions")
	case !validName(topic):
		return false, fmt.Errorf("%w: %q", store.ErrUnknownTopic, topic)
	case c.closed.Load():
		return false, unavailable(ErrClosed)
	case c.waits.idle == nil:
		return false, fmt.Errorf("%w: iggy: no wait sessions (Config.WaitSessions < 0)", store.ErrUnsupported)
	}
	for _, p := range partitions {
		if p < 0 {
			return false, fmt.Errorf("%w: %q partition %d", store.ErrUnknownPartition, topic, p)
		}
	}
	if d := c.Dialect(); d != proto.Dialect012 {
		return false, errNoWaits(d)
	}
	if err := ctx.Err(); err != nil {
		return false, err
	}
	if dl, ok := ctx.Deadline(); ok {
		wait = min(wait, time.Until(dl))
	}
	waitUS := uint64(max(wait, 0) / time.Microsecond)
	waitUS = min(waitUS, proto.MaxDeferredWaitMicros)
	// The server answers an idle wait at its end, within the reply margin;
	// kiggy gives it RequestTimeout (≥ the margin) past the wait.
	margin := max(c.cfg.RequestTimeout, time.Duration(proto.MinDeferredReplyMarginMicros)*time.Microsecond)
	timeoutUS := min(waitUS+uint64(margin/time.Microsecond), proto.MaxDeferredTimeoutMicros)

	call := c.waits.calls.Get().(*waitCall)
	defer c.waits.calls.Put(call)
	if err := c.dispatchWait(call, topic, partitions, offsets, waitUS, timeoutUS); err != nil {
		return false, err
	}
	received := 0
	for received < len(call.ws) {
		select {
		case r := <-call.results:
			received++
			if r.err != nil {
				c.abandonWait(call, received)
				return false, c.waitError(topic, r.err)
			}
			if r.ready {
				c.abandonWait(call, received)
				// Iggy holds more than what the read cache may take
				// for the exact high watermark: the next Reads poll.
				c.cache.moved(topic, partitions)
				return true, nil
			}
		case <-ctx.Done():
			c.abandonWait(call, received)
			return false, ctx.Err()
		case <-c.done:
			c.abandonWait(call, received)
			return false, unavailable(ErrClosed)
		}
	}
	call.ws = call.ws[:0]
	return false, nil
}

// errNoWaits is WaitForAppend's answer on a dialect without readiness
// waits.
func errNoWaits(d proto.Dialect) error {
	return fmt.Errorf("%w: iggy: WaitForMessages needs protocol 0.12 (Iggy 0.10); the server speaks %s (%s)", store.ErrUnsupported, d, d.Release())
}

// dispatchWait hands the call's jobs to idle waiters: the partitions
// grouped by where their reads go, sorted, a partition named twice kept at
// its lower offset, at most MaxPartitionsPerRequest a job.
func (c *Client) dispatchWait(call *waitCall, topic string, partitions []int32, offsets []int64, waitUS, timeoutUS uint64) error {
	call.ws, call.pools = call.ws[:0], call.pools[:0]
	for _, p := range partitions {
		if np := c.routeOf(topic, p); !slices.Contains(call.pools, np) {
			call.pools = append(call.pools, np)
		}
	}
	for _, np := range call.pools {
		pairs := call.pairs[:0]
		for i, p := range partitions {
			if len(call.pools) == 1 || c.routeOf(topic, p) == np {
				pairs = append(pairs, waitPair{uint32(p), uint64(max(offsets[i], 0))})
			}
		}
		slices.SortFunc(pairs, func(a, b waitPair) int {
			switch {
			case a.partition < b.partition:
				return -1
			case a.partition > b.partition:
				return 1
			case a.offset < b.offset:
				return -1
			case a.offset > b.offset:
				return 1
			}
			return 0
		})
		pairs = slices.CompactFunc(pairs, func(a, b waitPair) bool { return a.partition == b.partition }) // keeps the first: the lower offset
		call.pairs = pairs
		for len(pairs) > 0 {
			chunk := pairs[:min(len(pairs), proto.MaxPartitionsPerRequest)]
			pairs = pairs[len(chunk):]
			w := c.idleWaiter(np)
			if w == nil {
				c.abandonWait(call, 0)
				c.metrics.waitsBusy.Add(1)
				return ErrWaitBusy
			}
			w.pool = np
			w.parts, w.offs = w.parts[:0], w.offs[:0]
			for _, t := range chunk {
				w.parts = append(w.parts, t.partition)
				w.offs = append(w.offs, t.offset)
			}
			// The body is built here, while the caller's topic is valid
			// (it may alias a request frame the gateway reuses).
			w.frame = proto.AppendWaitForMessages(w.frame[:proto.HeaderSize], c.cfg.Stream, topic, waitUS, timeoutUS, w.parts, w.offs)
			if err := proto.ValidateWait(waitUS, timeoutUS, w.parts); err != nil {
				// Not reached: the limits above keep every wait valid.
				c.waits.idle <- w
				c.abandonWait(call, 0)
				return err
			}
			w.timeout = time.Duration(timeoutUS) * time.Microsecond
			w.mu.Lock()
			w.call, w.abandoned, w.sent = call, false, 0
			w.mu.Unlock()
			call.ws = append(call.ws, w)
			w.start <- struct{}{}
		}
	}
	return nil
}

// abandonWait leaves the call's jobs that have not answered (received
// results already taken): each still waiting is cancelled by its worker,
// and the results already sent are drained, so the call can be reused.
func (c *Client) abandonWait(call *waitCall, received int) {
	pending := 0
	for _, w := range call.ws {
		w.mu.Lock()
		if w.call == call {
			w.abandoned = true
			if w.sent != 0 && w.conn != nil {
				// The wait is on the wire: cancel it, and give its reply
				// cancelGrace to come (see the top of this file).
				_, _ = w.conn.Write(w.cancel[:])
				_ = w.conn.SetReadDeadline(time.Now().Add(cancelGrace))
				c.metrics.waitCancels.Add(1)
			}
		} else {
			pending++ // answered: its result is in the channel
		}
		w.mu.Unlock()
	}
	for range pending - received {
		<-call.results
	}
	call.ws = call.ws[:0]
}

// waiterScan bounds how many idle waiters idleWaiter looks through for one
// already connected where the job goes.
const waiterScan = 8

// idleWaiter takes an idle waiter for a job on np (nil: the metadata
// primary), or returns nil when every waiter is busy. It prefers one whose
// session is on np already: a waiter sent to another node than its last
// job's reconnects and logs in again, so partitions routed to several nodes
// (routes.go) would otherwise cost a login per wait as the waiters rotate.
func (c *Client) idleWaiter(np *nodePool) *waiter {
	c.waits.scan.Lock()
	defer c.waits.scan.Unlock()
	var seen [waiterScan]*waiter
	n := 0
	var pick *waiter
	for n < waiterScan {
		var w *waiter
		select {
		case w = <-c.waits.idle:
		default:
		}
		if w == nil {
			break
		}
		// An idle waiter's worker is parked: its session is not in use.
		if w.s.node == np && w.s.conn != nil {
			pick = w
			break
		}
		seen[n] = w
		n++
	}
	for _, w := range seen[:n] {
		if pick == nil {
			pick = w // none on np: the first, which connects there
			continue
		}
		c.waits.idle <- w // never blocks: capacity is every waiter
	}
	return pick
}

// run is a waiter's worker: one job at a time, until the client closes.
func (w *waiter) run() {
	defer w.c.wg.Done()
	defer w.s.close()
	for {
		var res waitResult
		select {
		case <-w.start:
			res = w.serve()
		case <-w.c.done:
			select {
			case <-w.start:
				res = waitResult{err: unavailable(ErrClosed)}
			default:
				return
			}
		}
		w.mu.Lock()
		if !w.abandoned {
			w.call.results <- res // never blocks: capacity is every waiter
		}
		w.call, w.sent, w.conn = nil, 0, nil
		w.mu.Unlock()
		w.c.waits.idle <- w
	}
}

// serve runs the job: connect the session to its node, send the wait,
// read the reply.
func (w *waiter) serve() waitResult {
	s, c := w.s, w.c
	if s.node != w.pool {
		// Another node than the last job's: connect there. A first login
		// on that node, not a reconnect: the node did not restart, and
		// the read cache stays (see the end of dialLogin).
		s.close()
		s.node, s.wasUp = w.pool, false
	}
	c.dropIfStale(s)
	if err := s.ensure(w.ctx); err != nil {
		return waitResult{err: unavailable(err)}
	}
	if s.dialect != proto.Dialect012 {
		return waitResult{err: errNoWaits(s.dialect)}
	}
	if c.cfg.PingInterval > 0 && time.Since(s.lastUsed) >= c.cfg.PingInterval {
		// The keep-alive loop pings only the pool: check a wait session
		// idle that long before parking a wait on it.
		c.ping(s)
		if err := s.ensure(w.ctx); err != nil {
			return waitResult{err: unavailable(err)}
		}
	}
	start := time.Now()
	w.mu.Lock()
	if w.abandoned {
		w.mu.Unlock()
		return waitResult{}
	}
	req := s.putHeader(w.frame, nil, proto.OpNonReplicated, proto.CodeWaitForMessages)
	_ = s.conn.SetDeadline(start.Add(w.timeout))
	_, werr := s.conn.Write(w.frame)
	if werr == nil {
		w.sent, w.conn = req, s.conn
		proto.PutRequestHeader(w.cancel[:], 0, s.clientID, req, proto.OpNonReplicated, s.sessionID, proto.CodeCancelDeferredRequest)
		if c.closed.Load() {
			// Close set the deadlines of the waits on the wire before this
			// one was: stop it too.
			_ = s.conn.SetReadDeadline(time.Now())
		}
	}
	w.mu.Unlock()
	if werr != nil {
		s.lost(werr)
		err := s.ioError(werr)
		c.metrics.observe(proto.CodeWaitForMessages, time.Since(start), err)
		return waitResult{err: unavailable(err)}
	}
	h, body, err := s.readReply()
	w.mu.Lock()
	abandoned := w.abandoned
	w.sent, w.conn = 0, nil
	w.mu.Unlock()
	ready, err := w.reply(h, body, err, req, abandoned)
	c.metrics.observe(proto.CodeWaitForMessages, time.Since(start), err)
	return waitResult{ready: ready, err: err}
}

// reply checks a wait's reply: it answers request req and names only
// partitions the job asked for. A session out of step is closed.
func (w *waiter) reply(h proto.ReplyHeader, body []byte, err error, req uint64, abandoned bool) (bool, error) {
	s := w.s
	if err != nil {
		if abandoned {
			// No reply within cancelGrace of the cancel: the server does
			// not answer cancelled waits; the stream may still carry one.
			s.close()
			return false, context.Canceled
		}
		s.lost(err)
		return false, err
	}
	if h.Request != req || h.Operation != proto.OpNonReplicated {
		s.close()
		return false, fmt.Errorf("%w: the reply does not echo the request (request %d, reply request %d op %d)", errDesync, req, h.Request, h.Operation)
	}
	s.lastUsed = time.Now()
	if h.Status != 0 {
		return false, &Error{Code: proto.Code(h.Status), Command: "WaitForMessages"}
	}
	rep, err := proto.DecodeWaitReply(body)
	if err != nil {
		s.close()
		return false, fmt.Errorf("%w: %w", errDesync, err)
	}
	for i := range rep.Len() {
		if _, ok := slices.BinarySearch(w.parts, rep.Partition(i)); !ok {
			s.close()
			return false, fmt.Errorf("%w: WaitForMessages names partition %d, which it was not asked for", errDesync, rep.Partition(i))
		}
	}
	return rep.Len() > 0, nil
}

// waitError maps a wait's failure to a store error.
func (c *Client) waitError(topic string, err error) error {
	switch codeOf(err) {
	case 0:
		return err
	case proto.CodeStreamIDNotFound, proto.CodeTopicIDNotFound, proto.CodeStreamNameNotFound, proto.CodeTopicNameNotFound:
		c.forget(topic)
		c.cache.invalidateTopic(topic)
		return fmt.Errorf("%w: %q: %w", store.ErrUnknownTopic, topic, err)
	case proto.CodePartitionNotFound:
		return fmt.Errorf("%w: %q: %w", store.ErrUnknownPartition, topic, err)
	case proto.CodeInvalidCommand, proto.CodeFeatureUnavailable:
		// A server that does not take the wait as kiggy sends it.
		return fmt.Errorf("%w: %w", store.ErrUnsupported, err)
	}
	return unavailable(err)
}
