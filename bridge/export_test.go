package bridge

import (
	"github.com/kiggy-io/kiggy/security"
)

// MaxFetchRoundTrips is how many reads of one Fetch may wait for a round
// trip at once.
const MaxFetchRoundTrips = maxFetchRoundTrips

// MaxConnRounds is how many append round trips one connection's Produces
// may have running at once.
const MaxConnRounds = maxConnRounds

// SetTestPanicHook installs f as the panic-injection hook of the group
// callbacks (nil removes it).
func SetTestPanicHook(f func(site string)) {
	if f == nil {
		testPanicHook.Store(nil)
		return
	}
	testPanicHook.Store(&f)
}

// SetTestPrincipals makes the gateway see requests whose client id f
// recognizes as coming from the principal it returns (standing in for SASL
// and TLS, which set a connection's principal in production); nil removes
// it. It returns a function that removes it.
func SetTestPrincipals(f func(clientID string) (security.Principal, bool)) (restore func()) {
	if f == nil {
		testPrincipalHook.Store(nil)
	} else {
		testPrincipalHook.Store(&f)
	}
	return func() { testPrincipalHook.Store(nil) }
}

// QueuedAppends returns how many appends wait in the queue of
// topic/partition behind the round that runs (coalesce.go).
func QueuedAppends(g *Gateway, topic string, partition int32) int {
	g.producers.mu.RLock()
	pp := g.producers.parts[partitionKey{topic, partition}]
	g.producers.mu.RUnlock()
	if pp == nil {
		return 0
	}
	pp.queue.mu.Lock()
	defer pp.queue.mu.Unlock()
	return len(pp.queue.waiting)
}
