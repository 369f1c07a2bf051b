// Package kafkawire is the raw Kafka client of kiggy's tests: it sends
// franz-go kmsg requests at the version the test pins, over a real socket,
// and reads the responses back, so a test can provoke and check exactly the
// bytes a real client would send (or a hostile one, with Write).
//
// Request headers are v1, or v2 for flexible versions; response headers are
// v0, or v1 for flexible versions other than ApiVersions
// (docs/design/kafka-protocol.md §1.4).
package kafkawire

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Timeouts of one request's write and of waiting for its response.
const (
	WriteTimeout = 5 * time.Second
	ReadTimeout  = 10 * time.Second
)

// maxFrame bounds the response frames ReadFrame accepts.
const maxFrame = 256 << 20

// Conn is one raw Kafka connection. It is not safe for concurrent use.
type Conn struct {
	c        net.Conn
	br       *bufio.Reader
	clientID string
	corr     int32
}

// Dial connects to addr within timeout; requests carry clientID.
func Dial(addr, clientID string, timeout time.Duration) (*Conn, error) {
	c, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return nil, err
	}
	return NewConn(c, clientID), nil
}

// NewConn wraps an open connection; requests carry clientID.
func NewConn(c net.Conn, clientID string) *Conn {
	return &Conn{c: c, br: bufio.NewReader(c), clientID: clientID}
}

// NetConn returns the underlying connection.
func (k *Conn) NetConn() net.Conn { return k.c }

// Reader returns the buffered reader responses are read through.
func (k *Conn) Reader() *bufio.Reader { return k.br }

// Close closes the connection.
func (k *Conn) Close() error { return k.c.Close() }

// AppendRequest appends req, encoded at its version with correlation id corr
// and client id clientID, as a complete size-prefixed frame.
func AppendRequest(dst []byte, req kmsg.Request, corr int32, clientID string) []byte {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	dst = binary.BigEndian.AppendUint16(dst, uint16(req.Key()))
	dst = binary.BigEndian.AppendUint16(dst, uint16(req.GetVersion()))
	dst = binary.BigEndian.AppendUint32(dst, uint32(corr))
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(clientID)))
	dst = append(dst, clientID...)
	if req.IsFlexible() {
		dst = append(dst, 0) // request header v2: no tagged fields
	}
	dst = req.AppendTo(dst)
	binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-start-4))
	return dst
}

// Write sends raw bytes.
func (k *Conn) Write(b []byte) error {
	k.c.SetWriteDeadline(time.Now().Add(WriteTimeout))
	_, err := k.c.Write(b)
	return err
}

// Send writes req at its version and returns its correlation id.
func (k *Conn) Send(req kmsg.Request) (int32, error) {
	k.corr++
	return k.corr, k.Write(AppendRequest(nil, req, k.corr, k.clientID))
}

// ReadFrame reads one response frame, without its size prefix.
func (k *Conn) ReadFrame(timeout time.Duration) ([]byte, error) {
	k.c.SetReadDeadline(time.Now().Add(timeout))
	var size [4]byte
	if _, err := io.ReadFull(k.br, size[:]); err != nil {
		return nil, err
	}
	n := int32(binary.BigEndian.Uint32(size[:]))
	if n < 4 || n > maxFrame {
		return nil, fmt.Errorf("kafkawire: response frame size %d", n)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(k.br, b); err != nil {
		return nil, err
	}
	return b, nil
}

// Recv reads the response to the request with correlation id corr into resp,
// whose version the caller has set.
func (k *Conn) Recv(corr int32, resp kmsg.Response) error {
	b, err := k.ReadFrame(ReadTimeout)
	if err != nil {
		return err
	}
	if got := int32(binary.BigEndian.Uint32(b)); got != corr {
		return fmt.Errorf("kafkawire: correlation id %d, want %d", got, corr)
	}
	b = b[4:]
	if resp.IsFlexible() && resp.Key() != int16(kmsg.ApiVersions) {
		if len(b) == 0 || b[0] != 0 {
			return fmt.Errorf("kafkawire: response header tags % x, want none", b[:min(len(b), 4)])
		}
		b = b[1:]
	}
	if err := resp.ReadFrom(b); err != nil {
		return fmt.Errorf("kafkawire: decode %T v%d: %w", resp, resp.GetVersion(), err)
	}
	return nil
}

// RoundTrip sends req and returns its response, decoded at req's version.
func (k *Conn) RoundTrip(req kmsg.Request) (kmsg.Response, error) {
	corr, err := k.Send(req)
	if err != nil {
		return nil, err
	}
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	if err := k.Recv(corr, resp); err != nil {
		return nil, err
	}
	return resp, nil
}

// ExpectClosed waits up to timeout for the server to close the connection
// and reports what arrived instead, if anything: a closed connection reads
// EOF (or a reset, when unread bytes were still queued on the server's side).
func (k *Conn) ExpectClosed(timeout time.Duration) error {
	k.c.SetReadDeadline(time.Now().Add(timeout))
	b, err := io.ReadAll(k.br)
	switch {
	case len(b) > 0:
		return fmt.Errorf("got %d bytes (% x...) instead of a close", len(b), b[:min(len(b), 16)])
	case err == nil, errors.Is(err, syscall.ECONNRESET):
		return nil
	case errors.Is(err, os.ErrDeadlineExceeded):
		return fmt.Errorf("still open after %v", timeout)
	}
	return err
}
