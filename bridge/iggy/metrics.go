package iggy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/kiggy-io/kiggy/bridge/iggy/proto"
	"github.com/kiggy-io/kiggy/internal/metric"
)

// commands are the Iggy commands the client sends, in the order of their
// metric slots; every other code counts in the last slot, "other".
var commands = [...]struct {
	code uint32
	name string
}{
	{proto.CodePing, "Ping"},
	{proto.CodeLoginRegister, "LoginRegister"},
	{proto.CodeLoginRegisterWithPAT, "LoginRegisterWithPat"},
	{proto.CodeCreatePAT, "CreatePersonalAccessToken"},
	{proto.CodeDeletePAT, "DeletePersonalAccessToken"},
	{proto.CodePollMessages, "PollMessages"},
	{proto.CodeSendMessages, "SendMessages"},
	{proto.CodeGetConsumerOffset, "GetConsumerOffset"},
	{proto.CodeStoreConsumerOffset, "StoreConsumerOffset"},
	{proto.CodeDeleteConsumerOffset, "DeleteConsumerOffset"},
	{proto.CodeGetStream, "GetStream"},
	{proto.CodeCreateStream, "CreateStream"},
	{proto.CodeGetTopic, "GetTopic"},
	{proto.CodeGetTopics, "GetTopics"},
	{proto.CodeCreateTopic, "CreateTopic"},
	{proto.CodeDeleteTopic, "DeleteTopic"},
	{proto.CodeUpdateTopic, "UpdateTopic"},
	{proto.CodeUpdateResource, "UpdateResource"},
	{proto.CodeBindSession, "BindSession"},
	{proto.CodeGetPartitionRoute, "GetPartitionRoute"},
	{proto.CodeCreatePartitions, "CreatePartitions"},
	{proto.CodeGetClusterMetadata, "GetClusterMetadata"},
	{proto.CodeWaitForMessages, "WaitForMessages"},
}

// numCommandSlots is len(commands) plus the "other" slot.
const numCommandSlots = len(commands) + 1

// commandIndex returns code's metric slot.
func commandIndex(code uint32) int {
	for i := range commands {
		if commands[i].code == code {
			return i
		}
	}
	return len(commands)
}

func commandName(code uint32) string {
	if i := commandIndex(code); i < len(commands) {
		return commands[i].name
	}
	return "command " + strconv.FormatUint(uint64(code), 10)
}

// errKind classifies a failed request for the error counters.
type errKind int

const (
	kindServer     errKind = iota // the server answered with an error code
	kindTimeout                   // no reply before the deadline
	kindConnection                // the connection failed (refused, reset, closed)
	kindProtocol                  // a reply kiggy cannot accept
	kindEvicted                   // the server evicted the session
	kindCanceled                  // the caller gave up (context)
	numErrKinds
)

var errKindNames = [numErrKinds]string{"server", "timeout", "connection", "protocol", "evicted", "canceled"}

func kindOf(err error) errKind {
	var ev *EvictionError
	var se *Error
	var big *replyTooLargeError
	switch {
	case errors.As(err, &ev):
		return kindEvicted
	case errors.As(err, &se):
		return kindServer
	case errors.Is(err, errTimeout):
		return kindTimeout
	case errors.Is(err, ErrProtocol), errors.Is(err, errDesync), errors.As(err, &big):
		return kindProtocol
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return kindCanceled
	}
	return kindConnection
}

// clientMetrics are the Iggy client's counters (issue: "Iggy backend request
// latency, errors, reconnects, sessions in use"): fixed arrays of atomics
// indexed by command slot and error kind, one or two atomic adds per request.
type clientMetrics struct {
	latency         [numCommandSlots]metric.Histogram
	errors          [numCommandSlots][numErrKinds]atomic.Uint64
	connects        atomic.Uint64 // logins that succeeded
	reconnects      atomic.Uint64 // of those, by a session that had been connected before
	rebinds         atomic.Uint64 // sessions bound to a new connection to learn a lost write's outcome
	connectFailures atomic.Uint64
	staleSessions   atomic.Uint64 // idle sessions whose connection the server had closed (stale.go)
	readRetries     atomic.Uint64 // reads sent again after their connection was lost under them
	retries         atomic.Uint64 // transient statuses replayed (§1.8)
	// refusalWaits counts partition writes every node refused (58) that
	// were sent again while their partition elected a primary;
	// refusalsWaitedOut, those of them then taken (retryRefused).
	refusalWaits, refusalsWaitedOut atomic.Uint64
	sessionWaits                    atomic.Uint64 // requests that waited for a free session
	readSessionWaits                atomic.Uint64 // reads that waited for their share of the sessions (acquireRead)
	loginWaits                      atomic.Uint64 // requests whose session had to log in and waited for the login turn (logins.go)
	inUse                           atomic.Int64
	connected                       atomic.Int64
	bufferedTopics                  atomic.Int64  // topics seen whose writes are confirmed before they are written
	bufferedAppends                 atomic.Uint64 // appends confirmed by such topics
	// staleIncarnations counts poll replies dropped as an earlier
	// incarnation's (incarnation.go).
	staleIncarnations atomic.Uint64
	// waitCancels counts readiness waits cancelled on the server after
	// their caller left; waitsBusy calls that found every wait session
	// parked (waits.go).
	waitCancels, waitsBusy atomic.Uint64
}

// observe records one request's outcome.
func (m *clientMetrics) observe(code uint32, d time.Duration, err error) {
	i := commandIndex(code)
	m.latency[i].Observe(d)
	if err != nil {
		m.errors[i][kindOf(err)].Add(1)
	}
}

// WriteMetrics writes the client's metrics in the Prometheus text format
// (store.MetricsWriter: the gateway's /metrics includes them).
func (c *Client) WriteMetrics(w io.Writer) {
	m := &c.metrics
	metric.Header(w, "kiggy_iggy_request_duration_seconds", "histogram", "Iggy request latency (send to reply, transient replays included), by command.")
	for i := range m.latency {
		m.latency[i].Write(w, "kiggy_iggy_request_duration_seconds", "command", slotName(i))
	}
	metric.Header(w, "kiggy_iggy_request_errors_total", "counter", "Iggy requests that failed, by command and kind (server, timeout, connection, protocol, evicted, canceled).")
	for i := range m.errors {
		for k := range m.errors[i] {
			if n := m.errors[i][k].Load(); n > 0 {
				fmt.Fprintf(w, "kiggy_iggy_request_errors_total{command=%q,kind=%q} %d\n", slotName(i), errKindNames[k], n)
			}
		}
	}
	metric.Single(w, "kiggy_iggy_connects_total", "counter", "Iggy sessions connected and logged in.", m.connects.Load())
	metric.Single(w, "kiggy_iggy_reconnects_total", "counter", "Iggy sessions connected again after losing their connection.", m.reconnects.Load())
	metric.Single(w, "kiggy_iggy_session_rebinds_total", "counter", "Iggy 0.10 sessions bound to a new connection (BindSession) to learn the outcome of a write whose reply was lost.", m.rebinds.Load())
	metric.Single(w, "kiggy_iggy_stale_sessions_total", "counter", "Idle Iggy sessions found, before use, with a connection the server had closed (an iggy-server restart); connected again before their request.", m.staleSessions.Load())
	metric.Single(w, "kiggy_iggy_read_retries_total", "counter", "Iggy reads (polls, pings, metadata) sent again on a new connection after the server closed theirs under them.", m.readRetries.Load())
	metric.Single(w, "kiggy_iggy_connect_failures_total", "counter", "Failed attempts to connect and log in to Iggy.", m.connectFailures.Load())
	metric.Single(w, "kiggy_iggy_transient_retries_total", "counter", "Requests replayed after a transient Iggy status (57, 58).", m.retries.Load())
	metric.Single(w, "kiggy_iggy_refused_writes_retried_total", "counter", "Partition writes (appends, consumer offset stores and deletions) every Iggy node refused with nothing stored (58: the partition had no primary) that were sent again within their request's deadline while it elected one.", m.refusalWaits.Load())
	metric.Single(w, "kiggy_iggy_refused_writes_taken_total", "counter", "Of those, writes then taken.", m.refusalsWaitedOut.Load())
	metric.Single(w, "kiggy_iggy_stale_incarnation_polls_total", "counter", "Poll replies dropped because the server answered them from a deleted topic's partitions with the same ids (docs/IGGY.md, \"Topic incarnations\").", m.staleIncarnations.Load())
	metric.Single(w, "kiggy_iggy_session_waits_total", "counter", "Requests that waited for a free Iggy session (pool exhausted).", m.sessionWaits.Load())
	metric.Single(w, "kiggy_iggy_read_session_waits_total", "counter", "Reads of records (polls) that waited because reads held their whole share of the Iggy sessions (--iggy-read-sessions); the rest are kept for appends, commits and metadata.", m.readSessionWaits.Load())
	metric.Single(w, "kiggy_iggy_login_waits_total", "counter", "Requests whose Iggy session had to log in (after a restart or at start) and waited for another session's login: one logs in at a time.", m.loginWaits.Load())
	var refused uint64
	if c.tokens != nil {
		refused = c.tokens.refused.Load()
	}
	metric.Single(w, "kiggy_iggy_session_token_refusals_total", "counter", "Iggy logins with kiggy's session token that the server refused (it lost the token, or it was deleted), then made with the password.", refused)
	metric.Single(w, "kiggy_iggy_sessions", "gauge", "Iggy sessions in the pool (--iggy-pool-size).", len(c.sessions))
	metric.Single(w, "kiggy_iggy_sessions_connected", "gauge", "Iggy sessions with a live connection.", m.connected.Load())
	metric.Single(w, "kiggy_iggy_sessions_in_use", "gauge", "Iggy sessions serving a request now.", m.inUse.Load())
	metric.Single(w, "kiggy_iggy_wait_sessions", "gauge", "Iggy sessions for readiness waits (WaitForMessages, protocol 0.12), outside the pool.", len(c.waits.all))
	metric.Single(w, "kiggy_iggy_wait_cancels_total", "counter", "Readiness waits cancelled on the server (CancelDeferredRequest) after their caller left.", m.waitCancels.Load())
	metric.Single(w, "kiggy_iggy_waits_busy_total", "counter", "Readiness waits not started because every wait session was parked.", m.waitsBusy.Load())
	c.writeClusterMetrics(w)
	if d := c.Dialect(); d != 0 {
		metric.Header(w, "kiggy_iggy_protocol", "gauge", "The Iggy binary protocol the server took at the last login (docs/IGGY.md, \"Versions\"): always 1, the protocol is the label.")
		fmt.Fprintf(w, "kiggy_iggy_protocol{protocol=%q} 1\n", d.String())
	}
	metric.Single(w, "kiggy_iggy_durability_level", "gauge", "The --iggy-durability level topics are created with: 1 written, 2 fsync, 3 buffered.", int64(c.cfg.Durability))
	metric.Single(w, "kiggy_iggy_buffered_topics", "gauge", "Topics in use whose Iggy options confirm writes before they are written (created outside kiggy or with --iggy-durability buffered) while the gateway promises more.", m.bufferedTopics.Load())
	metric.Single(w, "kiggy_iggy_buffered_appends_total", "counter", "Appends confirmed by such buffered topics: an iggy-server crash can lose them.", m.bufferedAppends.Load())
	c.cache.writeMetrics(w)
}

func slotName(i int) string {
	if i < len(commands) {
		return commands[i].name
	}
	return "other"
}
