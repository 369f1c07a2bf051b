package group

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kiggy-io/kiggy/internal/testing/testtools"
)

// checkInvariants verifies a group's internal consistency; g.mu is held.
func (g *group) checkInvariants() error {
	if g.state == stateDead {
		return nil
	}
	if len(g.byID) != len(g.members) {
		return fmt.Errorf("%d members but %d ids", len(g.members), len(g.byID))
	}
	for _, m := range g.members {
		if g.byID[m.id] != m {
			return fmt.Errorf("member %s not indexed", m.id)
		}
		if m.hasInstance && g.static[m.instanceID] != m.id {
			return fmt.Errorf("static member %s not mapped from %q", m.id, m.instanceID)
		}
		if m.joinDone != nil && g.state != statePreparingRebalance {
			return fmt.Errorf("member %s awaits a join in state %s", m.id, g.state)
		}
		if m.syncDone != nil && g.state != stateCompletingRebalance {
			return fmt.Errorf("member %s awaits a sync in state %s", m.id, g.state)
		}
		if _, ok := g.pending[m.id]; ok {
			return fmt.Errorf("member %s is also pending", m.id)
		}
	}
	for inst, id := range g.static {
		if m := g.byID[id]; m == nil || !m.hasInstance || m.instanceID != inst {
			return fmt.Errorf("instance %q maps to %s, not a static member", inst, id)
		}
	}
	if (g.leader == "") != (len(g.members) == 0) || (g.leader != "" && !g.has(g.leader)) {
		return fmt.Errorf("leader %q with %d members", g.leader, len(g.members))
	}
	if g.state == stateEmpty && len(g.members) != 0 {
		return fmt.Errorf("empty group has %d members", len(g.members))
	}
	if next, ok := g.nextDeadline(); ok && (g.timer == nil || g.armedAt.After(next)) {
		return fmt.Errorf("deadline %v but timer armed for %v (%v)", next, g.armedAt, g.timer != nil)
	}
	return nil
}

func (c *Coordinator) checkInvariants() error {
	c.mu.Lock()
	groups := make([]*group, 0, len(c.groups))
	for _, g := range c.groups {
		groups = append(groups, g)
	}
	c.mu.Unlock()
	for _, g := range groups {
		g.mu.Lock()
		err := g.checkInvariants()
		g.mu.Unlock()
		if err != nil {
			return fmt.Errorf("group %s: %w", g.id, err)
		}
	}
	return nil
}

// stressMember is one simulated consumer driving the coordinator with
// random, sometimes wrong, requests.
type stressMember struct {
	t        *testing.T
	c        *Coordinator
	rng      *rand.Rand
	groupID  string
	clientID string
	instance string // "" for a dynamic member
	memberID string
	gen      int32
	leader   bool
	members  []Member
	calls    *atomic.Int64 // callbacks expected
	answered *atomic.Int64 // callbacks received
	okJoins  *atomic.Int64
	okSyncs  *atomic.Int64 // successful syncs that carried an assignment
}

const stressWait = 10 * time.Second

func (s *stressMember) join() {
	req := JoinRequest{
		GroupID:              s.groupID,
		MemberID:             s.memberID,
		ClientID:             s.clientID,
		ClientHost:           "/127.0.0.1",
		ProtocolType:         "consumer",
		SessionTimeout:       time.Duration(30+s.rng.IntN(100)) * time.Millisecond,
		RebalanceTimeout:     time.Duration(50+s.rng.IntN(150)) * time.Millisecond,
		RequireKnownMemberID: s.rng.IntN(2) == 0,
	}
	if s.instance != "" {
		req.GroupInstanceID, req.HasInstanceID = s.instance, true
		req.SupportsSkipAssignment = s.rng.IntN(2) == 0
	}
	switch s.rng.IntN(3) {
	case 0:
		req.Protocols = []Protocol{{"range", []byte{1}}, {"roundrobin", []byte{2}}}
	case 1:
		req.Protocols = []Protocol{{"roundrobin", []byte{3}}, {"range", []byte{4}}}
	default:
		req.Protocols = []Protocol{{"range", []byte{byte(s.rng.IntN(3))}}}
	}
	if s.rng.IntN(50) == 0 {
		req.Protocols = []Protocol{{"sticky", nil}} // usually inconsistent
	}
	ch := make(chan JoinResult, 1)
	var once atomic.Bool
	s.calls.Add(1)
	s.c.Join(req, func(r JoinResult) {
		if !once.CompareAndSwap(false, true) {
			s.t.Errorf("join callback called twice: %+v", r)
			return
		}
		s.answered.Add(1)
		ch <- r
	})
	select {
	case r := <-ch:
		switch r.Error {
		case errNone:
			s.okJoins.Add(1)
			s.memberID, s.gen = r.MemberID, r.GenerationID
			s.leader = r.LeaderID == r.MemberID && !r.SkipAssignment
			s.members = r.Members
		case errMemberIDRequired:
			s.memberID = r.MemberID
		case errUnknownMemberID, errFencedInstanceID:
			s.memberID = ""
		}
	case <-time.After(stressWait):
		s.t.Errorf("join never completed: %+v", req)
	}
}

func (s *stressMember) sync() {
	req := SyncRequest{
		GroupID:      s.groupID,
		GenerationID: s.gen,
		MemberID:     s.memberID,
		ProtocolType: "consumer", HasProtocolType: s.rng.IntN(2) == 0,
	}
	if s.instance != "" {
		req.GroupInstanceID, req.HasInstanceID = s.instance, true
	}
	if s.leader {
		for _, m := range s.members {
			req.Assignments = append(req.Assignments, Assignment{MemberID: m.MemberID, Assignment: []byte(m.MemberID)})
		}
	}
	ch := make(chan SyncResult, 1)
	var once atomic.Bool
	s.calls.Add(1)
	s.c.Sync(req, func(r SyncResult) {
		if !once.CompareAndSwap(false, true) {
			s.t.Errorf("sync callback called twice: %+v", r)
			return
		}
		s.answered.Add(1)
		ch <- r
	})
	select {
	case r := <-ch:
		if r.Error == errNone && len(r.Assignment) > 0 {
			s.okSyncs.Add(1)
			// A replaced static member keeps the assignment made for its
			// previous member id.
			if string(r.Assignment) != s.memberID &&
				(s.instance == "" || !strings.HasPrefix(string(r.Assignment), s.instance+"-")) {
				s.t.Errorf("member %s got assignment %q", s.memberID, r.Assignment)
			}
		}
	case <-time.After(stressWait):
		s.t.Errorf("sync never completed: %+v", req)
	}
}

func (s *stressMember) step() {
	switch n := s.rng.IntN(20); {
	case n < 5:
		s.join()
	case n < 9:
		s.sync()
	case n < 15:
		s.c.Heartbeat(s.groupID, s.memberID, s.instance, s.instance != "", s.gen)
	case n < 16:
		lm := LeaveMember{MemberID: s.memberID}
		if s.instance != "" {
			lm.GroupInstanceID, lm.HasInstanceID = s.instance, true
			if s.rng.IntN(2) == 0 {
				lm.MemberID = ""
			}
		}
		s.c.Leave(s.groupID, []LeaveMember{lm})
		s.memberID = ""
	case n < 18:
		s.c.ValidateCommit(s.groupID, s.memberID, s.instance, s.instance != "", s.gen)
	case n < 19:
		s.c.Describe(s.groupID)
	default:
		time.Sleep(time.Duration(s.rng.IntN(40)) * time.Millisecond) // a member that dawdles: a random pause is the step
	}
}

// TestStress runs many simulated consumers against a few groups on the real
// clock (run it with -race) and checks that every callback is called exactly
// once, including those still pending when Close runs.
func TestStress(t *testing.T) {
	c := New(Config{
		MinSessionTimeout:     10 * time.Millisecond,
		MaxSessionTimeout:     time.Second,
		InitialRebalanceDelay: 10 * time.Millisecond,
		MaxGroupSize:          7,
	})
	var calls, answered, okJoins, okSyncs atomic.Int64
	var stop atomic.Bool
	var wg sync.WaitGroup
	const workers = 24
	for i := range workers {
		s := &stressMember{
			t:        t,
			c:        c,
			rng:      rand.New(rand.NewPCG(uint64(i), 42)),
			groupID:  fmt.Sprintf("g%d", i%4),
			clientID: fmt.Sprintf("client%d", i),
			gen:      -1,
			calls:    &calls,
			answered: &answered,
			okJoins:  &okJoins,
			okSyncs:  &okSyncs,
		}
		if i%3 == 0 {
			s.instance = fmt.Sprintf("instance%d", i)
		}
		wg.Go(func() {
			for !stop.Load() {
				s.step()
			}
		})
	}
	checkDone := make(chan struct{})
	var checker sync.WaitGroup
	checker.Go(func() {
		for {
			select {
			case <-checkDone:
				return
			case <-time.After(5 * time.Millisecond):
			}
			if err := c.checkInvariants(); err != nil {
				t.Error(err)
				return
			}
			c.List()
		}
	})

	// The stress runs for 3,000 join and sync calls (about 1.2 s here; the
	// count is the load, whatever the machine's speed), then the
	// coordinator closes while members are mid-join and mid-sync.
	testtools.WaitFor(t, time.Minute, "3,000 join and sync calls", func() bool { return calls.Load() >= 3000 })
	c.Close()
	stop.Store(true)
	wg.Wait()
	close(checkDone)
	checker.Wait()
	if n, a := calls.Load(), answered.Load(); n != a || n == 0 {
		t.Fatalf("%d callbacks expected, %d called", n, a)
	}
	t.Logf("%d join/sync callbacks, each called once; %d joins and %d syncs succeeded",
		calls.Load(), okJoins.Load(), okSyncs.Load())
	if okJoins.Load() == 0 || okSyncs.Load() == 0 {
		t.Fatal("the workload formed no generation")
	}
}

// TestStressOutcomes checks that the stress workload does form generations:
// a test of exactly-once answers alone would pass on a coordinator that
// rejects everything.
func TestStressOutcomes(t *testing.T) {
	c := New(Config{MinSessionTimeout: 10 * time.Millisecond, InitialRebalanceDelay: 5 * time.Millisecond})
	defer c.Close()
	var wg sync.WaitGroup
	var formed atomic.Int64
	for i := range 8 {
		wg.Go(func() {
			memberID := ""
			for range 20 {
				req := consumerJoin("g", memberID, fmt.Sprintf("c%d", i))
				req.SessionTimeout, req.RebalanceTimeout = time.Second, 200*time.Millisecond
				req.RequireKnownMemberID = true
				ch := make(chan JoinResult, 1)
				c.Join(req, func(r JoinResult) { ch <- r })
				r := <-ch
				switch r.Error {
				case errNone:
					formed.Add(1)
					memberID = r.MemberID
					sc := make(chan SyncResult, 1)
					var as []Assignment
					for _, m := range r.Members {
						as = append(as, Assignment{MemberID: m.MemberID, Assignment: []byte(m.MemberID)})
					}
					c.Sync(SyncRequest{GroupID: "g", GenerationID: r.GenerationID, MemberID: memberID, Assignments: as}, func(r SyncResult) { sc <- r })
					<-sc
				case errMemberIDRequired:
					memberID = r.MemberID
				default:
					memberID = ""
				}
			}
			c.Leave("g", []LeaveMember{{MemberID: memberID}})
		})
	}
	wg.Wait()
	if formed.Load() == 0 {
		t.Fatal("no join succeeded")
	}
	t.Logf("%d successful joins", formed.Load())
	if err := c.checkInvariants(); err != nil {
		t.Fatal(err)
	}
	if d := c.Describe("g"); d.State != "Empty" {
		t.Fatalf("after everyone left: %+v", d)
	}
}
