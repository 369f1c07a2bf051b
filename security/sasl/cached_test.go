package sasl

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kiggy-io/kiggy/internal/testing/testtools"
)

// countingVerifier accepts alice/secret and counts its calls and the most
// that ran at once.
type countingVerifier struct {
	calls, running, peak atomic.Int32
	delay                time.Duration
}

func (v *countingVerifier) VerifyPlain(_ context.Context, user, password string) (bool, error) {
	v.calls.Add(1)
	n := v.running.Add(1)
	for {
		p := v.peak.Load()
		if n <= p || v.peak.CompareAndSwap(p, n) {
			break
		}
	}
	time.Sleep(v.delay) // a slow check: its length is the point
	v.running.Add(-1)
	return user == "alice" && password == "secret", nil
}

func TestCachedPlain(t *testing.T) {
	ctx := context.Background()
	v := &countingVerifier{}
	c := NewCachedPlain(v, 50*time.Millisecond, 2)
	for range 3 {
		if ok, err := c.VerifyPlain(ctx, "alice", "secret"); !ok || err != nil {
			t.Fatalf("alice: %v %v", ok, err)
		}
	}
	if n := v.calls.Load(); n != 1 {
		t.Errorf("a remembered success was checked again: %d calls", n)
	}
	for range 2 {
		if ok, _ := c.VerifyPlain(ctx, "alice", "wrong"); ok {
			t.Fatal("a wrong password passed")
		}
	}
	if n := v.calls.Load(); n != 3 {
		t.Errorf("failures must be checked every time: %d calls, want 3", n)
	}
	// "alice"+"secret" and "alices"+"ecret" are different keys.
	if ok, _ := c.VerifyPlain(ctx, "alices", "ecret"); ok {
		t.Fatal("user/password split confused")
	}
	testtools.WaitFor(t, 5*time.Second, "the cached success to expire", func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		for _, exp := range c.ok {
			if time.Now().Before(exp) {
				return false
			}
		}
		return len(c.ok) == 1
	})
	c.VerifyPlain(ctx, "alice", "secret")
	if n := v.calls.Load(); n != 5 {
		t.Errorf("an expired success was not checked again: %d calls, want 5", n)
	}
	// At most 2 checks at once.
	slow := &countingVerifier{delay: 20 * time.Millisecond}
	c = NewCachedPlain(slow, 0, 2)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() { defer wg.Done(); c.VerifyPlain(ctx, "bob", "x") }()
	}
	wg.Wait()
	if p := slow.peak.Load(); p > 2 {
		t.Errorf("%d checks ran at once, want ≤ 2", p)
	}
	// A caller that gives up while waiting for a slot.
	holder := &countingVerifier{delay: time.Second}
	c = NewCachedPlain(holder, 0, 1)
	go c.VerifyPlain(ctx, "a", "b")
	testtools.WaitFor(t, 5*time.Second, "the first check to hold the slot", func() bool { return holder.running.Load() == 1 })
	cx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if _, err := c.VerifyPlain(cx, "a", "b"); err == nil {
		t.Error("a cancelled wait returned no error")
	}
}
