package bridge

import (
	"time"

	"github.com/kiggy-io/kiggy/security"
)

// SetTestPanicHook installs f as the panic-injection hook of the group
// callbacks (nil removes it).
func SetTestPanicHook(f func(site string)) {
	if f == nil {
		testPanicHook.Store(nil)
		return
	}
	testPanicHook.Store(&f)
}

// SetWorkQueueLen sets the worker queue capacity of gateways created from
// now on (0: a request finding every worker busy takes the overflow path)
// and returns a function that restores it.
func SetWorkQueueLen(n int) (restore func()) {
	old := workQueueLen
	workQueueLen = n
	return func() { workQueueLen = old }
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

// SetTopicStateRefresh sets how often gateways created from now on re-read
// a shared system store, and returns a function that restores it.
func SetTopicStateRefresh(d time.Duration) (restore func()) {
	old := topicStateRefresh
	topicStateRefresh = d
	return func() { topicStateRefresh = old }
}
