package bridge

import (
	"sync"
)

// notifier wakes parked Fetch requests when a partition they wait on grows.
// Appends made through this gateway signal it directly; appends by other
// writers (native Iggy clients, other gateways) are picked up when a parked
// fetch re-checks on its poll interval.
type notifier struct {
	mu      sync.Mutex
	waiters map[partitionKey][]*waiter
}

type partitionKey struct {
	topic     string
	partition int32
}

// waiter is one parked request; wake is called at most once per wait.
type waiter struct {
	once sync.Once
	ch   chan struct{}
}

func newWaiter() *waiter { return &waiter{ch: make(chan struct{})} }

func (w *waiter) wake() { w.once.Do(func() { close(w.ch) }) }

func (n *notifier) init() { n.waiters = make(map[partitionKey][]*waiter) }

// watch registers w for appends to topic/partition. The topic string is
// copied: it may alias a request frame.
func (n *notifier) watch(topic string, partition int32, w *waiter) {
	n.mu.Lock()
	k := partitionKey{topic: topic, partition: partition}
	if _, ok := n.waiters[k]; !ok {
		k.topic = string(append([]byte(nil), topic...))
	}
	n.waiters[k] = append(n.waiters[k], w)
	n.mu.Unlock()
}

// unwatch removes w from topic/partition.
func (n *notifier) unwatch(topic string, partition int32, w *waiter) {
	n.mu.Lock()
	k := partitionKey{topic: topic, partition: partition}
	ws := n.waiters[k]
	for i, x := range ws {
		if x == w {
			ws[i] = ws[len(ws)-1]
			ws = ws[:len(ws)-1]
			break
		}
	}
	if len(ws) == 0 {
		delete(n.waiters, k)
	} else {
		n.waiters[k] = ws
	}
	n.mu.Unlock()
}

// signal wakes every waiter of topic/partition. It costs one map lookup when
// nobody waits (the common case on the produce path).
func (n *notifier) signal(topic string, partition int32) {
	n.mu.Lock()
	ws := n.waiters[partitionKey{topic: topic, partition: partition}]
	for _, w := range ws {
		w.wake()
	}
	n.mu.Unlock()
}
