package kclient

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kiggy-io/kiggy/wire"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fakeReq is one request a fake server read.
type fakeReq struct {
	hdr  wire.RequestHeader
	body []byte
}

// fakeAnswer is what a fake's handler decides: a body to answer with after
// delay, or drop (close the connection without answering), or silent (never
// answer, keep reading).
type fakeAnswer struct {
	body   []byte
	delay  time.Duration
	drop   bool
	silent bool
	// after, if set, holds the answer (and the ones after it) until
	// closed.
	after <-chan struct{}
	// headerTags, for a flexible response, are header tagged-field bytes
	// in place of the empty section (count first).
	headerTags []byte
}

// fake is a small Kafka server: it parses request frames with
// wire.ParseRequestHeader and answers each connection's requests in order
// (a writer goroutine per connection, so requests are read while earlier
// answers wait: clients can pipeline).
type fake struct {
	t       *testing.T
	ln      net.Listener
	handle  func(r fakeReq) fakeAnswer
	sasl    *SASL // credentials the fake requires; nil = none
	accepts atomic.Int32
	reqs    atomic.Int32
	wg      sync.WaitGroup
	mu      sync.Mutex
	conns   []net.Conn
}

func newFake(t *testing.T, handle func(fakeReq) fakeAnswer) *fake {
	t.Helper()
	return newFakeSASL(t, nil, handle)
}

// newFakeSASL is newFake requiring SASL PLAIN with the credentials of sasl.
func newFakeSASL(t *testing.T, sasl *SASL, handle func(fakeReq) fakeAnswer) *fake {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &fake{t: t, ln: ln, handle: handle, sasl: sasl}
	f.wg.Add(1)
	go f.accept()
	t.Cleanup(f.close)
	return f
}

func (f *fake) addr() string { return f.ln.Addr().String() }

func (f *fake) close() {
	f.ln.Close()
	f.mu.Lock()
	for _, c := range f.conns {
		c.Close()
	}
	f.mu.Unlock()
	f.wg.Wait()
}

func (f *fake) accept() {
	defer f.wg.Done()
	for {
		nc, err := f.ln.Accept()
		if err != nil {
			return
		}
		f.accepts.Add(1)
		f.mu.Lock()
		f.conns = append(f.conns, nc)
		f.mu.Unlock()
		f.wg.Add(1)
		go f.serve(nc)
	}
}

// respond frames body under the response header of h's API and version.
func respond(h wire.RequestHeader, body, headerTags []byte) []byte {
	out := wire.AppendResponseHeader([]byte{0, 0, 0, 0}, h.APIKey, h.APIVersion, h.CorrelationID)
	if headerTags != nil && h.APIKey != wire.KeyAPIVersions && wire.Flexible(h.APIKey, h.APIVersion) {
		out = append(out[:len(out)-1], headerTags...)
	}
	out = append(out, body...)
	binary.BigEndian.PutUint32(out, uint32(len(out)-4))
	return out
}

func (f *fake) serve(nc net.Conn) {
	defer f.wg.Done()
	defer nc.Close()
	br := bufio.NewReader(nc)
	read := func() (fakeReq, bool) {
		var size [4]byte
		if _, err := io.ReadFull(br, size[:]); err != nil {
			return fakeReq{}, false
		}
		frame := make([]byte, binary.BigEndian.Uint32(size[:]))
		if _, err := io.ReadFull(br, frame); err != nil {
			return fakeReq{}, false
		}
		h, body, err := wire.ParseRequestHeader(frame)
		if err != nil {
			f.t.Errorf("fake: request header: %v", err)
			return fakeReq{}, false
		}
		return fakeReq{h, body}, true
	}
	if f.sasl != nil && !f.authenticate(nc, read) {
		return
	}
	out := make(chan fakeAnswer, 1024) // body: the framed answer
	done := make(chan struct{})
	go func() { // the writer: answers in order
		defer close(done)
		for a := range out {
			if a.after != nil {
				<-a.after
			}
			time.Sleep(a.delay)
			if a.drop {
				nc.Close()
				return
			}
			if _, err := nc.Write(a.body); err != nil {
				return
			}
		}
	}()
	defer func() { close(out); <-done }()
	for {
		r, ok := read()
		if !ok {
			return
		}
		f.reqs.Add(1)
		a := f.handle(r)
		switch {
		case a.drop:
			out <- a
			return
		case a.silent:
			continue
		}
		a.body = respond(r.hdr, a.body, a.headerTags)
		out <- a
	}
}

// authenticate is the server side of SaslHandshake v1 and SaslAuthenticate
// v2 with PLAIN; it reports whether the client got in.
func (f *fake) authenticate(nc net.Conn, read func() (fakeReq, bool)) bool {
	r, ok := read()
	if !ok {
		return false // the client gave up
	}
	if r.hdr.APIKey != wire.KeySaslHandshake || r.hdr.APIVersion != 1 {
		f.t.Errorf("fake: first request %+v, want SaslHandshake v1", r.hdr)
		return false
	}
	var hs wire.SaslHandshakeRequest
	if err := hs.Decode(r.body, 1); err != nil {
		f.t.Errorf("fake: SaslHandshake: %v", err)
		return false
	}
	hsResp := wire.SaslHandshakeResponse{Mechanisms: []string{"PLAIN"}}
	if hs.Mechanism != "PLAIN" {
		hsResp.ErrorCode = wire.UnsupportedSaslMechanism
	}
	nc.Write(respond(r.hdr, hsResp.AppendTo(nil, 1), nil))
	if hsResp.ErrorCode != wire.NoError {
		return false
	}
	r, ok = read()
	if !ok || r.hdr.APIKey != wire.KeySaslAuthenticate || r.hdr.APIVersion != 2 {
		f.t.Errorf("fake: second request %+v, want SaslAuthenticate v2", r.hdr)
		return false
	}
	var au wire.SaslAuthenticateRequest
	if err := au.Decode(r.body, 2); err != nil {
		f.t.Errorf("fake: SaslAuthenticate: %v", err)
		return false
	}
	auResp := wire.SaslAuthenticateResponse{}
	if string(au.AuthBytes) != "\x00"+f.sasl.Username+"\x00"+f.sasl.Password {
		auResp.ErrorCode = wire.SaslAuthenticationFailed
		auResp.ErrorMessage = wire.NullString{S: "Authentication failed: Invalid username or password", Valid: true}
	}
	nc.Write(respond(r.hdr, auResp.AppendTo(nil, 2), nil))
	return auResp.ErrorCode == wire.NoError
}

// echoMarkers answers a WriteTxnMarkers request with one result per marker,
// carrying its producer id: the caller can tell whose answer it got.
func echoMarkers(r fakeReq) fakeAnswer {
	var req wire.WriteTxnMarkersRequest
	if err := req.Decode(r.body, r.hdr.APIVersion); err != nil {
		return fakeAnswer{drop: true}
	}
	var resp wire.WriteTxnMarkersResponse
	for _, m := range req.Markers {
		resp.Markers = append(resp.Markers, wire.WriteTxnMarkerResult{ProducerID: m.ProducerID})
	}
	return fakeAnswer{body: resp.AppendTo(nil, r.hdr.APIVersion)}
}

func newPool(t *testing.T, addrs func(int32) (string, bool), sasl *SASL) *Pool {
	t.Helper()
	p := New(Config{ClientID: "kiggy-test", Resolve: addrs, DialTimeout: 5 * time.Second, SASL: sasl})
	t.Cleanup(func() { p.Close() })
	return p
}

func at(addr string) func(int32) (string, bool) {
	return func(int32) (string, bool) { return addr, true }
}

// markers calls WriteTxnMarkers v1 (flexible) with one marker of producer
// id pid and returns the producer id answered.
func markers(ctx context.Context, p *Pool, pid int64) (int64, error) {
	req := wire.WriteTxnMarkersRequest{Markers: []wire.WriteTxnMarker{{ProducerID: pid, TransactionResult: true,
		Topics: []wire.WriteTxnMarkerTopic{{Name: "t", PartitionIndexes: []int32{0}}}}}}
	body, err := p.Call(ctx, 1, int16(wire.KeyWriteTxnMarkers), 1, true, req.AppendTo(nil, 1))
	if err != nil {
		return 0, err
	}
	var resp wire.WriteTxnMarkersResponse
	if err := resp.Decode(body, 1); err != nil {
		return 0, err
	}
	if len(resp.Markers) != 1 {
		return 0, errors.New("not one marker result")
	}
	return resp.Markers[0].ProducerID, nil
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// TestPipelining: 100 concurrent Calls share one connection and each gets
// its own answer. The fake answers in order, and nothing before it has
// read all 100 requests: the Calls must be pipelined.
func TestPipelining(t *testing.T) {
	gate := make(chan struct{})
	var n atomic.Int32
	f := newFake(t, func(r fakeReq) fakeAnswer {
		a := echoMarkers(r)
		a.after = gate
		a.delay = 100 * time.Microsecond
		if n.Add(1) == 100 {
			close(gate)
		}
		return a
	})
	p := newPool(t, at(f.addr()), nil)
	ctx := ctxT(t)
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	for i := range 100 {
		wg.Go(func() {
			pid := int64(1000 + i)
			got, err := markers(ctx, p, pid)
			if err == nil && got != pid {
				err = errors.New("answer of another call")
			}
			if err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := f.accepts.Load(); n != 1 {
		t.Errorf("%d connections, want 1", n)
	}
	if n := f.reqs.Load(); n != 100 {
		t.Errorf("%d requests, want 100", n)
	}
}

// TestFrameMatchesKmsg: a request frame is what franz-go's formatter
// writes, with a classic and a flexible header.
func TestFrameMatchesKmsg(t *testing.T) {
	fm := kmsg.NewRequestFormatter(kmsg.FormatterClientID("kiggy-1"))
	for _, v := range []int16{0, 1} {
		k := kmsg.NewPtrWriteTxnMarkersRequest()
		k.Version = v
		m := kmsg.NewWriteTxnMarkersRequestMarker()
		m.ProducerID = 9
		k.Markers = append(k.Markers, m)
		want := fm.AppendRequest(nil, k, 42)
		got := appendFrame([]byte("x"), 27, v, v >= 1, 42, "kiggy-1", k.AppendTo(nil))
		if !bytes.Equal(got[1:], want) {
			t.Errorf("v%d:\n got % x\nwant % x", v, got[1:], want)
		}
	}
}

// TestContextTimeout: a Call whose context ends returns ctx.Err(); the
// connection is closed and the next Call redials.
func TestContextTimeout(t *testing.T) {
	var slow atomic.Bool
	slow.Store(true)
	f := newFake(t, func(r fakeReq) fakeAnswer {
		if slow.Load() {
			return fakeAnswer{silent: true}
		}
		return echoMarkers(r)
	})
	p := newPool(t, at(f.addr()), nil)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := markers(ctx, p, 1); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v, want context.DeadlineExceeded", err)
	}
	cctx, ccancel := context.WithCancel(context.Background())
	go func() {
		for f.reqs.Load() < 2 {
			time.Sleep(time.Millisecond)
		}
		ccancel()
	}()
	if _, err := markers(cctx, p, 1); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	slow.Store(false)
	if got, err := markers(ctxT(t), p, 7); err != nil || got != 7 {
		t.Fatalf("after the timeouts: %d, %v", got, err)
	}
	if n := f.accepts.Load(); n != 3 {
		t.Errorf("%d connections, want 3 (each ended call closes its connection)", n)
	}
}

// TestServerDrops: the server closing the connection mid-call fails the
// Call (and the others waiting on it); the next Call redials.
func TestServerDrops(t *testing.T) {
	var n atomic.Int32
	f := newFake(t, func(r fakeReq) fakeAnswer {
		switch n.Add(1) {
		case 1:
			return fakeAnswer{silent: true}
		case 2:
			return fakeAnswer{drop: true}
		}
		return echoMarkers(r)
	})
	p := newPool(t, at(f.addr()), nil)
	ctx := ctxT(t)
	first := make(chan error, 1)
	go func() { _, err := markers(ctx, p, 1); first <- err }()
	for f.reqs.Load() < 1 {
		time.Sleep(time.Millisecond)
	}
	if _, err := markers(ctx, p, 2); err == nil || ctx.Err() != nil {
		t.Fatalf("dropped call: %v", err)
	}
	if err := <-first; err == nil {
		t.Fatal("the other call on the dropped connection succeeded")
	}
	if got, err := markers(ctx, p, 3); err != nil || got != 3 {
		t.Fatalf("after the drop: %d, %v", got, err)
	}
	if n := f.accepts.Load(); n != 2 {
		t.Errorf("%d connections, want 2", n)
	}
}

// TestAddressChange: when Resolve answers another address the next Call
// goes there on a new connection.
func TestAddressChange(t *testing.T) {
	a, b := newFake(t, echoMarkers), newFake(t, echoMarkers)
	var addr atomic.Value
	addr.Store(a.addr())
	p := newPool(t, func(int32) (string, bool) { return addr.Load().(string), true }, nil)
	ctx := ctxT(t)
	for i := range 3 {
		if _, err := markers(ctx, p, int64(i)); err != nil {
			t.Fatal(err)
		}
	}
	addr.Store(b.addr())
	for i := range 3 {
		if _, err := markers(ctx, p, int64(i)); err != nil {
			t.Fatal(err)
		}
	}
	if a.reqs.Load() != 3 || b.reqs.Load() != 3 || a.accepts.Load() != 1 || b.accepts.Load() != 1 {
		t.Errorf("a: %d requests on %d connections, b: %d on %d; want 3 on 1 each",
			a.reqs.Load(), a.accepts.Load(), b.reqs.Load(), b.accepts.Load())
	}
	if _, err := New(Config{Resolve: func(int32) (string, bool) { return "", false }}).Call(ctx, 5, 27, 1, true, nil); err == nil {
		t.Error("a node without an address: no error")
	}
}

func TestSASLPlain(t *testing.T) {
	creds := &SASL{Mechanism: "PLAIN", Username: "kiggy", Password: "secret"}
	f := newFakeSASL(t, creds, echoMarkers)
	p := newPool(t, at(f.addr()), creds)
	ctx := ctxT(t)
	for i := range 3 {
		if got, err := markers(ctx, p, int64(i)); err != nil || got != int64(i) {
			t.Fatalf("%d, %v", got, err)
		}
	}
	if f.accepts.Load() != 1 || f.reqs.Load() != 3 {
		t.Errorf("%d connections, %d requests after SASL; want 1, 3", f.accepts.Load(), f.reqs.Load())
	}

	bad := newPool(t, at(f.addr()), &SASL{Mechanism: "PLAIN", Username: "kiggy", Password: "wrong"})
	_, err := markers(ctx, bad, 1)
	var ae *AuthError
	if !errors.As(err, &ae) || ae.Code != wire.SaslAuthenticationFailed || ae.API != wire.KeySaslAuthenticate ||
		!strings.Contains(err.Error(), "SASL_AUTHENTICATION_FAILED") {
		t.Fatalf("wrong password: %v", err)
	}
	t.Log(err)

	mech := newPool(t, at(f.addr()), &SASL{Mechanism: "SCRAM-SHA-256", Username: "kiggy", Password: "secret"})
	if _, err := markers(ctx, mech, 1); err == nil || !strings.Contains(err.Error(), "not implemented") {
		t.Fatalf("SCRAM: %v", err)
	}
}

// TestCloseFailsWaiters: Close fails the Calls waiting for an answer with
// ErrClosed, and later Calls too.
func TestCloseFailsWaiters(t *testing.T) {
	f := newFake(t, func(fakeReq) fakeAnswer { return fakeAnswer{silent: true} })
	p := New(Config{ClientID: "kiggy-test", Resolve: at(f.addr())})
	ctx := ctxT(t)
	errs := make(chan error, 5)
	for i := range 5 {
		go func() { _, err := markers(ctx, p, int64(i)); errs <- err }()
	}
	for f.reqs.Load() < 5 {
		time.Sleep(time.Millisecond)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		if err := <-errs; !errors.Is(err, ErrClosed) {
			t.Errorf("waiter: %v, want ErrClosed", err)
		}
	}
	if _, err := markers(ctx, p, 1); !errors.Is(err, ErrClosed) {
		t.Errorf("after Close: %v", err)
	}
	if err := p.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// TestAPIVersions: ApiVersions v0 end to end (header v0 both ways), read
// by kmsg; and v3 (flexible) whose response header is still v0.
func TestAPIVersions(t *testing.T) {
	f := newFake(t, func(r fakeReq) fakeAnswer {
		resp := wire.APIVersionsResponse{APIKeys: []wire.APIVersionsKey{{APIKey: wire.KeyWriteTxnMarkers, MinVersion: 0, MaxVersion: 1}}}
		return fakeAnswer{body: resp.AppendTo(nil, r.hdr.APIVersion)}
	})
	p := newPool(t, at(f.addr()), nil)
	for _, v := range []int16{0, 3} {
		req := kmsg.NewPtrApiVersionsRequest()
		req.Version = v
		req.ClientSoftwareName, req.ClientSoftwareVersion = "kiggy", "test"
		body, err := p.Call(ctxT(t), 1, 18, v, v >= 3, req.AppendTo(nil))
		if err != nil {
			t.Fatalf("v%d: %v", v, err)
		}
		resp := kmsg.NewPtrApiVersionsResponse()
		resp.Version = v
		if err := resp.ReadFrom(body); err != nil {
			t.Fatalf("v%d: %v", v, err)
		}
		if len(resp.ApiKeys) != 1 || resp.ApiKeys[0].ApiKey != 27 || resp.ApiKeys[0].MaxVersion != 1 {
			t.Errorf("v%d: %+v", v, resp.ApiKeys)
		}
	}
}

// TestResponseHeaderTags: a flexible response header's tagged fields are
// skipped by their sizes.
func TestResponseHeaderTags(t *testing.T) {
	f := newFake(t, func(r fakeReq) fakeAnswer {
		a := echoMarkers(r)
		a.headerTags = []byte{2, 0, 3, 'a', 'b', 'c', 5, 0}
		return a
	})
	p := newPool(t, at(f.addr()), nil)
	if got, err := markers(ctxT(t), p, 77); err != nil || got != 77 {
		t.Fatalf("%d, %v", got, err)
	}
}

// TestBadFrames: an oversized response, a wrong correlation id and a
// truncated header fail the Call and the connection.
func TestBadFrames(t *testing.T) {
	cases := map[string]func(h wire.RequestHeader) []byte{
		"oversized": func(wire.RequestHeader) []byte { return []byte{0x10, 0, 0, 0} },
		"undersized": func(wire.RequestHeader) []byte {
			return []byte{0, 0, 0, 2, 0, 0}
		},
		"correlation": func(h wire.RequestHeader) []byte {
			h.CorrelationID++
			return respond(h, nil, nil)
		},
		"header tags": func(h wire.RequestHeader) []byte {
			return []byte{0, 0, 0, 6, 0, 0, 0, byte(h.CorrelationID), 1, 1}
		},
	}
	for name, frame := range cases {
		t.Run(name, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			go func() {
				nc, err := ln.Accept()
				if err != nil {
					return
				}
				defer nc.Close()
				br := bufio.NewReader(nc)
				var size [4]byte
				io.ReadFull(br, size[:])
				b := make([]byte, binary.BigEndian.Uint32(size[:]))
				io.ReadFull(br, b)
				h, _, _ := wire.ParseRequestHeader(b)
				nc.Write(frame(h))
				io.Copy(io.Discard, br)
			}()
			p := newPool(t, at(ln.Addr().String()), nil)
			_, err = markers(ctxT(t), p, 1)
			if err == nil {
				t.Fatal("no error")
			}
			t.Log(err)
		})
	}
}
