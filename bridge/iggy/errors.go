package iggy

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/kiggy-io/kiggy/bridge/iggy/proto"
	"github.com/kiggy-io/kiggy/bridge/store"
)

// Start-up errors Open reports, so the operator sees which failure it was.
var (
	// ErrUnreachable means no TCP connection could be made to Config.Addr.
	ErrUnreachable = errors.New("iggy: server unreachable (check --iggy-addr and that iggy-server is running)")
	// ErrAuth means the server refused the credentials (Eviction reason 9
	// InvalidCredentials or 10 InvalidToken).
	ErrAuth = errors.New("iggy: login refused (wrong Iggy username/password or personal access token)")
	// ErrProtocol means the server speaks an incompatible protocol version
	// (Eviction reason 14) or something that is not the Iggy 0.9 protocol.
	ErrProtocol = errors.New("iggy: incompatible protocol (kiggy speaks Iggy binary protocol 0.11, Iggy 0.9, and 0.12.0, Iggy 0.10)")
	// ErrClosed means the Client was closed.
	ErrClosed = errors.New("iggy: client closed")
)

// errTimeout means a request got no reply before its deadline.
var errTimeout = errors.New("iggy: request timed out (connection dropped)")

// Error is an error code the Iggy server returned for a request, in a reply
// status, a result section, or an Eviction reason mapped to its code.
type Error struct {
	// Code is the Iggy error code (docs/design/iggy-protocol.md §5).
	Code proto.Code
	// Command names the request.
	Command string
}

// Unwrap gives the codes of Iggy 0.10 whose meaning is already a storage
// outcome their store error: a write refused before it was applied
// (LifecycleBusy: "retry as a new request"; HistoryUnavailable: the
// partition was deleted or recreated, looked up again on the next try) is
// store.ErrUnavailable, one whose outcome the server itself does not know
// (RequestTooOld, OperationUncertain) store.ErrUnknownOutcome. Other codes
// are returned as they are (a Kafka client sees them as an unknown server
// error, never as a success).
func (e *Error) Unwrap() error {
	switch e.Code {
	case proto.CodeLifecycleBusy, proto.CodeHistoryUnavailable:
		return store.ErrUnavailable
	case proto.CodeRequestTooOld, proto.CodeOperationUncertain:
		return store.ErrUnknownOutcome
	}
	return nil
}

// Error implements error.
func (e *Error) Error() string {
	name := e.Code.String()
	if name == "code "+strconv.FormatUint(uint64(e.Code), 10) {
		return "iggy: " + e.Command + ": " + name
	}
	return "iggy: " + e.Command + ": " + name + " (code " + strconv.FormatUint(uint64(e.Code), 10) + ")"
}

// EvictionError is an Eviction frame: the server ended the session (§1.6).
type EvictionError struct {
	Reason uint8
	// ServerProtocol and ServerProtocolMin are the accepted protocol window,
	// sent only with reason 14 IncompatibleProtocol.
	ServerProtocol, ServerProtocolMin uint32
	// Sent is the protocol version the evicted session logged in with.
	Sent uint32
}

// Error implements error.
func (e *EvictionError) Error() string {
	s := "iggy: session evicted: " + proto.ReasonName(e.Reason) + " (reason " + strconv.Itoa(int(e.Reason)) + ")"
	if e.Reason == proto.EvictIncompatibleProtocol {
		s += "; the server accepts protocol " + proto.FormatVersion(e.ServerProtocolMin) + " to " + proto.FormatVersion(e.ServerProtocol) +
			", kiggy sent " + proto.FormatVersion(e.Sent) + "; kiggy speaks " + proto.FormatVersion(proto.Dialect011.Version()) +
			" (Iggy 0.9) and " + proto.FormatVersion(proto.Dialect012.Version()) + " (Iggy 0.10)"
	}
	return s
}

// Unwrap maps the reasons operators must tell apart to ErrAuth and
// ErrProtocol.
func (e *EvictionError) Unwrap() error {
	switch e.Reason {
	case proto.EvictInvalidCredentials, proto.EvictInvalidToken, proto.EvictUserInactive:
		return ErrAuth
	case proto.EvictIncompatibleProtocol, proto.EvictMalformedLogin:
		return ErrProtocol
	}
	return nil
}

// codeOf returns the Iggy code carried by err, or 0.
func codeOf(err error) proto.Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return 0
}

// errDesync means a live connection stopped making sense: a reply that does
// not answer the request sent, a frame of impossible size or kind, a reply
// without its result section. The connection is dropped and the next request
// reconnects. It is not ErrProtocol, which is the start-up diagnosis of a
// server that speaks another protocol version (a login refused or answered
// with something that is not a 0.9 reply).
var errDesync = errors.New("iggy: connection out of step with the server")

// Reply-shape errors.
var (
	errDeadSession     = errors.New("iggy: SendMessages answered with an empty body (dead session)")
	errBadConfirmation = errors.New("iggy: malformed SendMessages confirmation")
	errBadPoll         = errors.New("iggy: malformed PollMessages reply")
	errNoResult        = fmt.Errorf("%w: reply without a valid result section", errDesync)
)

// replyTooLargeError is a reply larger than the client reads (the frame
// limit): its bytes were read past, so the session is still in step and the
// caller can ask for less (a PollMessages of fewer messages). Iggy bounds a
// poll by its message count only, so too many large messages make one.
type replyTooLargeError struct {
	Size  uint32 // the reply's frame size, header included
	Limit uint32 // the largest frame the client reads
}

func (e *replyTooLargeError) Error() string {
	return fmt.Sprintf("iggy: a reply of %d bytes exceeds the frame limit of %d", e.Size, e.Limit)
}
