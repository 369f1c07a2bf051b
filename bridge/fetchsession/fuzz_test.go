package fetchsession

import (
	"testing"
	"time"

	"github.com/kiggy-io/kiggy/wire"
)

// FuzzSessions drives a small cache with a sequence of full, incremental,
// closing and committing Fetches read from the input, and checks after
// each step that nothing panicked and the cache's books balance: the
// gauges match the sessions, every session's index matches its partitions,
// and a rewritten request names each session partition once.
func FuzzSessions(f *testing.F) {
	f.Add([]byte{0, 3, 1, 2, 0, 1, 1, 2, 3, 2, 0})
	f.Add([]byte{0, 9, 0, 9, 0, 9, 0, 9, 4, 200, 0, 9})
	f.Add([]byte{0, 2, 1, 1, 0, 5, 1, 1, 1, 3, 2, 0, 1, 1, 1, 1})
	f.Fuzz(func(t *testing.T, in []byte) {
		c := New(3, 20, time.Minute)
		now := time.Unix(1000, 0)
		next := func() int {
			if len(in) == 0 {
				return 0
			}
			b := in[0]
			in = in[1:]
			return int(b)
		}
		var ids []int32
		var tickets []Ticket
		var outs [][]Outcome
		var prev []Sent
		names := []string{"a", "b", "c"}
		parts := func(req *wire.FetchRequest, n int) {
			for range n {
				name := names[next()%3]
				if k := len(req.Topics); k == 0 || req.Topics[k-1].Topic != name {
					req.Topics = append(req.Topics, wire.FetchRequestTopic{Topic: name, TopicID: [16]byte{name[0]}})
				}
				tp := &req.Topics[len(req.Topics)-1]
				tp.Partitions = append(tp.Partitions, wire.FetchRequestTopicPartition{Partition: int32(next() % 5), FetchOffset: int64(next())})
			}
		}
		for len(in) > 0 {
			ids2 := next()%2 == 1
			switch next() % 5 {
			case 0: // full Fetch creating a session
				req := &wire.FetchRequest{}
				parts(req, next()%8)
				n := 0
				for _, tp := range req.Topics {
					n += len(tp.Partitions)
				}
				if id := c.Create(now, req, ids2, false, make([]Outcome, n)); id != 0 {
					ids = append(ids, id)
				}
			case 1: // incremental
				if len(ids) == 0 {
					continue
				}
				id := ids[next()%len(ids)]
				req := &wire.FetchRequest{SessionID: id, SessionEpoch: int32(next() % 4)}
				if s := c.Get(id); s != nil && next()%2 == 0 {
					req.SessionEpoch = s.Epoch()
				}
				parts(req, next()%4)
				for range next() % 3 {
					name := names[next()%3]
					req.ForgottenTopics = append(req.ForgottenTopics, wire.FetchRequestForgottenTopic{Topic: name, TopicID: [16]byte{name[0]}, Partitions: []int32{int32(next() % 5)}})
				}
				tk, p, code := c.Incremental(now, req, ids2, prev)
				prev = p
				if code != wire.NoError {
					continue
				}
				seen := map[Key]bool{}
				n := 0
				for _, tp := range req.Topics {
					for _, rp := range tp.Partitions {
						k := Key{Partition: rp.Partition, TopicID: tp.TopicID}
						if !ids2 {
							k.Topic = tp.Topic
						}
						if seen[k] {
							t.Fatalf("rewritten request names %+v twice", k)
						}
						seen[k] = true
						n++
					}
				}
				if n != len(prev) || n != tk.S.Len() {
					t.Fatalf("rewritten %d partitions, prev %d, session %d", n, len(prev), tk.S.Len())
				}
				out := make([]Outcome, n)
				for i := range out {
					out[i].Records = next()%2 == 0
					out[i].HighWatermark = int64(next())
				}
				tickets = append(tickets, tk)
				outs = append(outs, out)
			case 2: // commit an earlier ticket, maybe stale
				if len(tickets) == 0 {
					continue
				}
				i := next() % len(tickets)
				tickets[i].Commit(outs[i])
			case 3: // close
				if len(ids) > 0 {
					c.Remove(ids[next()%len(ids)])
				}
			case 4: // time passes
				now = now.Add(time.Duration(next()) * time.Second)
			}
			check(t, c)
		}
	})
}

// check verifies the cache's books.
func check(t *testing.T, c *Cache) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var total int64
	for id, s := range c.sessions {
		s.mu.Lock()
		if s.id != id || id <= 0 {
			t.Fatalf("session %d under id %d", s.id, id)
		}
		if len(s.index) != len(s.parts) {
			t.Fatalf("session %d: %d indexed, %d partitions", id, len(s.index), len(s.parts))
		}
		for i, p := range s.parts {
			if at, ok := s.index[p.key]; !ok || int(at) != i || p.dead {
				t.Fatalf("session %d: partition %+v at %d indexed at %d", id, p.key, i, at)
			}
		}
		total += int64(s.cachedSize)
		s.mu.Unlock()
	}
	if int64(len(c.sessions)) != c.count.Load() || total != c.partitions.Load() || len(c.sessions) > c.slots || total > c.maxParts {
		t.Fatalf("%d sessions (gauge %d, slots %d), %d partitions (gauge %d)", len(c.sessions), c.count.Load(), c.slots, total, c.partitions.Load())
	}
}
