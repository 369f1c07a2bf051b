package engine

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"
)

// Spliced-response test APIs.
const (
	apiSplice    = 20 // RespondSpliced with arg splices (splicedParts)
	apiSpliceBad = 21 // RespondSpliced with splices out of order
)

// pinCounter counts unpins.
type pinCounter struct{ n atomic.Int64 }

func (p *pinCounter) Unpin() { p.n.Add(1) }

// spliceHandler serves apiSplice and apiSpliceBad and hands the rest to
// testHandler.
type spliceHandler struct {
	*testHandler
	pins    pinCounter
	spliced atomic.Int64 // splices handed to the engine
}

// splicedParts is the response of apiSplice with k splices: the correlation
// id, then for each splice i a run of i%5 own bytes and the splice's data
// (i*7919 % 70,001 bytes, some empty), then 3 own bytes; it returns the own
// buffer's bytes and the splices, and the whole body as the client reads it.
func splicedParts(corr int32, k int) (own []byte, data [][]byte, at []int, body []byte) {
	own = binary.BigEndian.AppendUint32(make([]byte, 4, 64), uint32(corr))
	body = binary.BigEndian.AppendUint32(nil, uint32(corr))
	for i := range k {
		for j := range i % 5 {
			own = append(own, byte('a'+j))
			body = append(body, byte('a'+j))
		}
		d := make([]byte, i*7919%70001)
		for j := range d {
			d[j] = byte(i + j*31)
		}
		data = append(data, d)
		at = append(at, len(own))
		body = append(body, d...)
	}
	own = append(own, 'e', 'n', 'd')
	body = append(body, 'e', 'n', 'd')
	return own, data, at, body
}

func (h *spliceHandler) Serve(r *Request) {
	f := r.Frame()
	api := int16(-1)
	if len(f) >= 12 {
		api = int16(binary.BigEndian.Uint16(f))
	}
	switch api {
	case apiSplice, apiSpliceBad:
		k := int(binary.BigEndian.Uint32(f[8:12]))
		own, data, at, _ := splicedParts(corrOf(f), k)
		b := append(r.ResponseBufferSize(len(own)), own[4:]...)
		sp := make([]Splice, k)
		for i := range k {
			sp[i] = Splice{At: at[i], Data: data[i], Pin: &h.pins}
		}
		if api == apiSpliceBad && k > 1 {
			sp[0].At, sp[1].At = sp[1].At+1, sp[0].At
		}
		h.spliced.Add(int64(k))
		r.RespondSpliced(b, sp)
	default:
		h.testHandler.Serve(r)
	}
}

// TestRespondSpliced: spliced responses of 0 to 300 splices (past the
// writev batch of maxIovecs and the net engine's buffers, several MiB, so
// writes end short) arrive whole, in order among plain ones, on plaintext
// and TLS listeners of both engines; every pin is unpinned once.
func TestRespondSpliced(t *testing.T) {
	forEach(t, func(t *testing.T, kind string) {
		fx := newTLSFixture(t)
		h := &spliceHandler{testHandler: newTestHandler()}
		ts := startServer(t, kind, Config{}, h)
		tlsAddr := ts.serveListener(t, "tls", fx.server, 10*time.Second)
		for _, conn := range []struct {
			name string
			dial func() net.Conn
		}{{"plain", func() net.Conn { return ts.dial(t) }}, {"tls", func() net.Conn { return dialTLS(t, tlsAddr, fx.client) }}} {
			t.Run(conn.name, func(t *testing.T) {
				c := conn.dial()
				ks := []int{0, 1, 3, 64, 65, 300, 7, 130}
				go func() {
					for i, k := range ks {
						c.Write(frameArg(apiSplice, int32(2*i), k))
						c.Write(frame(apiEcho, int32(2*i+1), 'x'))
					}
				}()
				br := bufio.NewReader(c)
				c.SetReadDeadline(time.Now().Add(30 * time.Second))
				for i, k := range ks {
					_, _, _, want := splicedParts(int32(2*i), k)
					corr, body, err := readResp(br)
					if err != nil {
						t.Fatal(err)
					}
					if corr != int32(2*i) || !bytes.Equal(append(binary.BigEndian.AppendUint32(nil, uint32(corr)), body...), want) {
						t.Fatalf("spliced response %d (%d splices): %d bytes, want %d, or different", i, k, len(body)+4, len(want))
					}
					if corr, _, err := readResp(br); err != nil || corr != int32(2*i+1) {
						t.Fatalf("echo after spliced response %d: corr %d, %v", i, corr, err)
					}
				}
			})
		}
		waitFor(t, 10*time.Second, "every splice unpinned", func() bool { return h.pins.n.Load() == h.spliced.Load() })
	})
}

// TestRespondSplicedDropped: the pins of a spliced response are unpinned
// when it is never written: the client went away before the handler
// answered, or while the response was still being written to it (it reads
// nothing); a response whose splices are out of order closes the
// connection as a protocol error, its pins unpinned too.
func TestRespondSplicedDropped(t *testing.T) {
	forEach(t, func(t *testing.T, kind string) {
		h := &spliceHandler{testHandler: newTestHandler()}
		ts := startServer(t, kind, Config{}, h)

		// A held request answered after its client closed.
		c := ts.dial(t)
		c.Write(frame(apiHold, 1))
		var held *Request
		select {
		case held = <-h.held:
		case <-time.After(10 * time.Second):
			t.Fatal("the held request never arrived")
		}
		c.Close()
		ts.waitClosed(t, ReasonPeerClosed, 1)
		own, data, at, _ := splicedParts(1, 3)
		var pins pinCounter
		sp := []Splice{{At: at[0], Data: data[0], Pin: &pins}, {At: at[1], Data: data[1], Pin: &pins}, {At: at[2], Data: data[2], Pin: &pins}}
		held.RespondSpliced(append(held.ResponseBufferSize(len(own)), own[4:]...), sp)
		waitFor(t, 10*time.Second, "the late response's splices unpinned", func() bool { return pins.n.Load() == 3 })

		// Responses far larger than the socket buffers (about 10 MiB
		// each), to a client that reads none of them and closes.
		pausedBefore := ts.srv.Stats().Pauses[PauseOutputBytes]
		c = ts.dial(t)
		for i := range 4 {
			c.Write(frameArg(apiSplice, int32(i), 300))
		}
		// The engine stops reading behind unwritten responses: at least
		// the first is served, and the next queue unread before the client
		// closes (the reads pause at MaxOutputBytes, or all four are
		// answered).
		waitFor(t, 10*time.Second, "a response served", func() bool { return h.spliced.Load() >= 300 })
		waitFor(t, 10*time.Second, "the next responses queued unread", func() bool {
			return h.spliced.Load() >= 4*300 || ts.srv.Stats().Pauses[PauseOutputBytes] > pausedBefore
		})
		c.Close()
		waitFor(t, 10*time.Second, "the second connection closed", func() bool {
			var n uint64
			for _, k := range ts.srv.Stats().Closes {
				n += k
			}
			return n >= 2 // peer_closed, or io_error when a write failed first
		})
		waitFor(t, 10*time.Second, "the unwritten responses' splices unpinned", func() bool { return h.pins.n.Load() == h.spliced.Load() })
		base := h.spliced.Load()

		// Out of order: protocol error, pins unpinned.
		c = ts.dial(t)
		c.Write(frameArg(apiSpliceBad, 9, 4))
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := io.ReadAll(c); err != nil {
			t.Fatalf("want the connection closed, got %v", err)
		}
		waitFor(t, 10*time.Second, "the refused response's splices unpinned", func() bool { return h.pins.n.Load() == base+4 })
	})
}
