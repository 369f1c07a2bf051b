package engine

import (
	"math/bits"
	"sync"
)

// Buffer pools by size class (docs/design/style.md habit 9).
//
// Ownership rules:
//   - getBuf returns a *[]byte whose slice has len == cap == a power of two
//     (the class), at least the size asked for. The caller owns it.
//   - putBuf must be given exactly the pointer getBuf returned, once, after
//     the last use of any slice of it; using the buffer after putBuf is
//     forbidden. putBuf ignores buffers that are not of a pooled class, so a
//     buffer that was replaced by append growth is simply left to the GC.
//   - A Request owns its frame buffer from arrival until completion and its
//     response buffer from ResponseBuffer until the response is written.
const (
	minClassShift = 9  // 512 B: the smallest pooled buffer
	maxClassShift = 30 // 1 GiB: the largest (bounds MaxFrameSize)
	numClasses    = maxClassShift - minClassShift + 1
)

var bufPools [numClasses]sync.Pool

// classFor returns the class index whose size is the smallest power of two
// >= n (at least the minimum class), or -1 if n is beyond the largest class.
func classFor(n int) int {
	if n <= 1<<minClassShift {
		return 0
	}
	s := bits.Len(uint(n - 1))
	if s > maxClassShift {
		return -1
	}
	return s - minClassShift
}

// getBuf returns a pooled buffer of at least n bytes (len == cap == class).
func getBuf(n int) *[]byte {
	c := classFor(n)
	if c < 0 {
		b := make([]byte, n)
		return &b
	}
	if v := bufPools[c].Get(); v != nil {
		p := v.(*[]byte)
		*p = (*p)[:cap(*p)]
		return p
	}
	b := make([]byte, 1<<(c+minClassShift))
	return &b
}

// putBuf returns p to its class pool. Forbidden after: any use of *p.
func putBuf(p *[]byte) {
	if p == nil {
		return
	}
	n := cap(*p)
	if n < 1<<minClassShift || n&(n-1) != 0 {
		return
	}
	c := classFor(n)
	if c < 0 {
		return
	}
	bufPools[c].Put(p)
}
