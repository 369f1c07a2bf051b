package bridge

import (
	"sync"
)

// notifier wakes parked Fetch requests when a partition they wait on grows.
// Appends made through this gateway signal it directly; appends by other
// writers (native Iggy clients, other gateways) are picked up when a parked
// fetch re-checks on its poll interval.
//
// A Fetch reads, finds nothing, then parks: an append that lands between
// its read and its registration would signal nobody, and the Fetch would
// sleep through the records it waits for, up to its max.wait.ms (Java's
// 500 ms, franz-go's 5 s) or the next external poll. So every signal is
// numbered, each partition remembers the number of its last signal, and a
// Fetch takes the current number (mark) before it reads: watch wakes it at
// once when its partition was signalled since.
type notifier struct {
	mu    sync.Mutex
	seq   uint64 // the number of the last signal
	parts map[partitionKey]*watched
	// pruned is seq at the last prune.
	pruned uint64
}

type partitionKey struct {
	topic     string
	partition int32
}

// watched is one partition's parked requests and its last signal.
type watched struct {
	ws   []*waiter
	last uint64 // the number of the partition's last signal
}

// waiter is one parked request; wake is called at most once per wait.
type waiter struct {
	once sync.Once
	ch   chan struct{}
}

func newWaiter() *waiter { return &waiter{ch: make(chan struct{})} }

func (w *waiter) wake() { w.once.Do(func() { close(w.ch) }) }

func (n *notifier) init() { n.parts = make(map[partitionKey]*watched) }

// mark returns the number of the last signal, to pass to watch by a Fetch
// about to read.
func (n *notifier) mark() uint64 {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.seq
}

// entry returns topic/partition's entry, making it; under mu. The topic
// string is copied: it may alias a request frame.
func (n *notifier) entry(topic string, partition int32) *watched {
	s := n.parts[partitionKey{topic, partition}]
	if s == nil {
		s = &watched{}
		n.parts[partitionKey{string(append([]byte(nil), topic...)), partition}] = s
	}
	return s
}

// watch registers w for appends to topic/partition, and wakes it at once
// when the partition was signalled after since (mark, taken before the
// Fetch read it).
func (n *notifier) watch(topic string, partition int32, w *waiter, since uint64) {
	n.mu.Lock()
	s := n.entry(topic, partition)
	s.ws = append(s.ws, w)
	if s.last > since {
		w.wake()
	}
	n.mu.Unlock()
}

// unwatch removes w from topic/partition.
func (n *notifier) unwatch(topic string, partition int32, w *waiter) {
	n.mu.Lock()
	if s := n.parts[partitionKey{topic: topic, partition: partition}]; s != nil {
		for i, x := range s.ws {
			if x == w {
				s.ws[i] = s.ws[len(s.ws)-1]
				s.ws[len(s.ws)-1] = nil
				s.ws = s.ws[:len(s.ws)-1]
				break
			}
		}
	}
	n.mu.Unlock()
}

// signal notes an append to topic/partition and wakes its waiters: one map
// lookup, and an entry made on a partition's first append.
func (n *notifier) signal(topic string, partition int32) {
	n.mu.Lock()
	s := n.entry(topic, partition)
	n.seq++
	s.last = n.seq
	for i, w := range s.ws {
		w.wake()
		s.ws[i] = nil
	}
	s.ws = s.ws[:0]
	n.mu.Unlock()
}

// prune drops the entries of partitions nobody waits on and nothing was
// appended to since the last prune (deleted topics, idle partitions). The
// gateway prunes every minute: a Fetch reads for far less, so no mark taken
// before such a partition's last signal is still in use.
func (n *notifier) prune() {
	n.mu.Lock()
	for k, s := range n.parts {
		if len(s.ws) == 0 && s.last <= n.pruned {
			delete(n.parts, k)
		}
	}
	n.pruned = n.seq
	n.mu.Unlock()
}
