package engine

import (
	"encoding/binary"
	"sync/atomic"
)

// Framing (docs/design/style.md habit 6).
//
// A framer turns a connection's byte stream into request frames: an int32
// big-endian size that excludes itself, then that many bytes (docs/design/kafka-protocol.md
// §1.1). It peeks the size, checks it against the limit and for negatives
// before any buffer is sized from it, then copies the frame body out of the
// caller's read buffer into a pooled size-class buffer that the Request owns
// until completion. Each byte of a small frame is copied exactly once (read
// buffer -> frame buffer); nothing is ever compacted. A frame body that is
// still large when its size is known is read by the caller straight into the
// frame buffer (tail/filled), skipping the read buffer.
//
// The frame buffer of a large frame does not take the declared size at once:
// it starts at initialFrameChunk and doubles as bytes actually arrive, so a
// peer that declares 100 MiB and sends nothing costs 64 KiB, not 100 MiB.
// A connection whose largest complete frame so far was at least half the
// declared size gets the whole buffer at once (it has shown it sends frames
// of that size).
// When the reader can tell how many bytes are already waiting in the socket
// (SIOCINQ, set in avail), the buffer grows to hold them in one step: bytes
// the kernel holds are not a promise, they have arrived, and a 1 MiB Produce
// then moves once instead of through every power of two.

// initialFrameChunk is the first allocation for a frame body larger than it.
const initialFrameChunk = 64 << 10

// directReadMin is the remaining body size from which the caller should read
// directly into the frame buffer rather than through its read buffer.
const directReadMin = 16 << 10

// reasonNone is "no close reason" in framer results.
const reasonNone = NumCloseReasons

// framer assembles frames. The zero value is ready after max is set. Owned by
// the connection's reader (an epoll loop, or the net reader goroutine).
type framer struct {
	max int32 // MaxFrameSize
	// authMax is Listener.MaxFrameBeforeAuth while it applies (0 = not):
	// dropped at the first frame over it after authed became true.
	authMax int32
	authed  *atomic.Bool // the connection's ConnInfo.authenticated
	hdr     [4]byte      // size prefix bytes seen so far
	hdrN    int
	body    *[]byte // pooled buffer of the frame in progress; nil between frames
	size    int     // declared size of the frame in progress
	have    int     // body bytes received
	// avail is how many body bytes beyond have are known to be waiting
	// (0 = unknown), set by the reader before tail when wantsRoom.
	avail int
	// peak is the size of the connection's largest complete frame.
	peak int
}

// inFrame reports whether part of a frame (even one size byte) has arrived.
func (f *framer) inFrame() bool { return f.hdrN > 0 || f.body != nil }

// checkSize applies the frame-size rules of docs/design/kafka-protocol.md §1.1.
func (f *framer) checkSize(s int32) CloseReason {
	switch {
	case s < 0:
		return ReasonNegativeSize // "also close on a negative size"
	case s > f.max:
		return ReasonFrameTooLarge // "closes the connection when a frame exceeds socket.request.max.bytes"
	case f.authMax > 0 && s > f.authMax:
		if !f.authed.Load() {
			return ReasonFrameTooLarge // sasl.server.max.receive.size, before authentication
		}
		f.authMax = 0
	}
	return reasonNone
}

// limitBeforeAuth applies Listener.MaxFrameBeforeAuth (max > 0) to the
// connection of info.
func (f *framer) limitBeforeAuth(max int32, info *ConnInfo) {
	if max > 0 {
		f.authMax, f.authed = max, &info.authenticated
	}
}

// start begins a frame of size s (already checked). Small frames get their
// exact class at once; large ones start at initialFrameChunk and grow,
// unless the connection's largest frame so far was at least half as large:
// a buffer of the declared size at once saves the copies of growing to it
// (docs/BENCHMARKS.md, "Where kiggy's CPU goes"). The largest, not the last: a producer's requests carry
// whatever batches are ready, one partition's or sixteen's, so a 16 MiB
// request after a 1 MiB one would otherwise copy 14 MiB on its way up
// (docs/BENCHMARKS.md, "Where kiggy's CPU goes"). A peer gets that only
// for a size it has already sent in full.
func (f *framer) start(s int) {
	f.size, f.have = s, 0
	f.body = getBuf(min(s, max(initialFrameChunk, 2*f.peak)))
}

// grow makes room for at least one more body byte, doubling up to size.
func (f *framer) grow() {
	if f.have < len(*f.body) {
		return
	}
	nb := getBuf(min(f.size, max(2*len(*f.body), f.have+f.avail)))
	f.avail = 0
	copy(*nb, (*f.body)[:f.have])
	putBuf(f.body)
	f.body = nb
}

// wantsRoom reports whether the next tail will grow the frame buffer, the
// moment a reader that can learn the socket's queued bytes should set avail.
func (f *framer) wantsRoom() bool {
	return f.body != nil && f.have == len(*f.body) && f.size-f.have >= directReadMin
}

// feed consumes a prefix of p and returns how many bytes it used. done
// reports that a frame completed (take it with take before feeding again);
// bad != reasonNone reports a size that must close the connection.
func (f *framer) feed(p []byte) (n int, done bool, bad CloseReason) {
	if f.body == nil {
		var s int32
		if f.hdrN == 0 && len(p) >= 4 {
			// Peek: the whole prefix is in p, so the header is not copied.
			s = int32(binary.BigEndian.Uint32(p))
			n = 4
		} else {
			n = copy(f.hdr[f.hdrN:], p)
			f.hdrN += n
			if f.hdrN < 4 {
				return n, false, reasonNone
			}
			f.hdrN = 0
			s = int32(binary.BigEndian.Uint32(f.hdr[:]))
		}
		if bad = f.checkSize(s); bad != reasonNone {
			return n, false, bad
		}
		f.start(int(s))
		if s == 0 {
			return n, true, reasonNone
		}
	}
	for n < len(p) && f.have < f.size {
		f.grow()
		k := copy((*f.body)[f.have:min(len(*f.body), f.size)], p[n:])
		f.have += k
		n += k
	}
	return n, f.have == f.size, reasonNone
}

// tail returns the slice of the frame buffer the next read may fill
// directly, or nil when the remaining body is small (read into the read
// buffer and feed instead).
func (f *framer) tail() []byte {
	if f.body == nil || f.size-f.have < directReadMin {
		return nil
	}
	f.grow()
	return (*f.body)[f.have:min(len(*f.body), f.size)]
}

// filled records k bytes read into tail and reports whether the frame is
// complete.
func (f *framer) filled(k int) bool {
	f.have += k
	return f.have == f.size
}

// take hands the completed frame's buffer and size to the caller, who owns
// the buffer from now on, and resets f for the next frame.
func (f *framer) take() (*[]byte, int) {
	b, s := f.body, f.size
	f.body, f.size, f.have, f.avail = nil, 0, 0, 0
	f.peak = max(f.peak, s)
	return b, s
}

// reset drops any partial frame (connection closing).
func (f *framer) reset() {
	putBuf(f.body)
	f.body, f.size, f.have, f.hdrN, f.avail = nil, 0, 0, 0, 0
}
