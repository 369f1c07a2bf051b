package group

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// fuzzMember is what one simulated client knows.
type fuzzMember struct {
	memberID string
	gen      int32
	leader   bool
	members  []Member
}

// FuzzCoordinator drives one coordinator on a fake clock with an arbitrary
// sequence of operations from a few clients, checking the group invariants
// after every step and, after Close, that every callback was called exactly
// once. Each input byte pair is one operation; an input of odd length runs
// with Config.AwaitStore, its store writer driven by the operations too.
func FuzzCoordinator(f *testing.F) {
	f.Add([]byte{0, 0, 0, 1, 6, 30, 1, 0, 1, 1, 2, 0, 6, 50, 3, 0})
	f.Add([]byte{0, 0x80, 0, 0x81, 6, 40, 1, 0, 1, 1, 0, 0x80, 2, 1, 6, 200, 4, 0})
	f.Add([]byte{0, 0x40, 0, 0x41, 6, 90, 0, 0x40, 1, 0, 5, 1, 7, 0, 6, 255, 6, 255})
	f.Add([]byte{0, 0, 0, 1, 6, 30, 1, 0, 1, 1, 5, 0x80, 2, 0, 5, 0x40, 1, 0, 6, 50, 3, 0, 0})
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) > 400 {
			ops = ops[:400]
		}
		clk := newFakeClock()
		c := newCoordinator(Config{MaxGroupSize: 3, AwaitStore: len(ops)%2 == 1}, clk)
		var taken []string // stored forms the writer took and has not reported
		var clients [4]fuzzMember
		for i := range clients {
			clients[i].gen = -1
		}
		calls, answered := 0, 0
		const groupID = "g"
		for len(ops) >= 2 {
			op, arg := ops[0], ops[1]
			ops = ops[2:]
			i := int(arg & 3)
			cl := &clients[i]
			static := i >= 2 // clients 2 and 3 are static members
			instance := ""
			if static {
				instance = fmt.Sprintf("inst%d", i)
			}
			switch op % 8 {
			case 0: // join
				req := consumerJoin(groupID, cl.memberID, fmt.Sprintf("c%d", i))
				if arg&0x80 != 0 {
					req.MemberID = ""
				}
				if arg&0x40 != 0 {
					req.Protocols = append(req.Protocols, Protocol{Name: "roundrobin", Metadata: []byte{arg}})
				}
				if arg&0x20 != 0 {
					req.Protocols = []Protocol{{Name: "sticky"}}
				}
				req.RequireKnownMemberID = arg&0x10 != 0
				req.SupportsSkipAssignment = arg&0x08 != 0
				req.GroupInstanceID, req.HasInstanceID = instance, static
				calls++
				n := 0
				c.Join(req, func(r JoinResult) {
					n++
					answered++
					if n > 1 {
						t.Fatalf("join callback called twice")
					}
					switch r.Error {
					case errNone:
						if r.GenerationID <= 0 || r.MemberID == "" || r.LeaderID == "" || r.ProtocolName == "" {
							t.Fatalf("bad join result %+v", r)
						}
						if r.LeaderID == r.MemberID && !r.SkipAssignment && len(r.Members) == 0 {
							t.Fatalf("leader without members %+v", r)
						}
						cl.memberID, cl.gen = r.MemberID, r.GenerationID
						cl.leader, cl.members = r.LeaderID == r.MemberID && !r.SkipAssignment, r.Members
					case errMemberIDRequired:
						cl.memberID = r.MemberID
					case errUnknownMemberID, errFencedInstanceID:
						cl.memberID = ""
					}
				})
			case 1: // sync
				req := SyncRequest{GroupID: groupID, GenerationID: cl.gen, MemberID: cl.memberID,
					GroupInstanceID: instance, HasInstanceID: static}
				if cl.leader && arg&0x80 == 0 {
					for _, m := range cl.members {
						req.Assignments = append(req.Assignments, Assignment{MemberID: m.MemberID, Assignment: []byte(m.MemberID)})
					}
				}
				calls++
				n := 0
				memberID := cl.memberID
				c.Sync(req, func(r SyncResult) {
					n++
					answered++
					if n > 1 {
						t.Fatalf("sync callback called twice")
					}
					// A replaced static member keeps the assignment made for
					// its previous member id.
					if r.Error == errNone && len(r.Assignment) > 0 && string(r.Assignment) != memberID &&
						!(static && strings.HasPrefix(string(r.Assignment), instance+"-")) {
						t.Fatalf("member %s got %q", memberID, r.Assignment)
					}
				})
			case 2:
				c.Heartbeat(groupID, cl.memberID, instance, static, cl.gen)
			case 3:
				lm := LeaveMember{MemberID: cl.memberID, GroupInstanceID: instance, HasInstanceID: static}
				if static && arg&0x80 != 0 {
					lm.MemberID = ""
				}
				c.Leave(groupID, []LeaveMember{lm})
			case 4:
				gen := cl.gen
				if arg&0x80 != 0 {
					gen = -1
				}
				c.ValidateCommit(groupID, cl.memberID, instance, static, gen)
			case 5:
				c.Describe(groupID)
				c.List()
				// The store's writer: takes the changed forms, reports
				// what it took stored.
				if arg&0x80 != 0 {
					for id := range c.DirtyClassicGroups() {
						taken = append(taken, id)
					}
				}
				if arg&0x40 != 0 {
					c.ClassicGroupsStored(taken)
					taken = nil
				}
			case 6:
				clk.Advance(time.Duration(arg) * 200 * time.Millisecond)
			case 7:
				c.Delete(groupID)
			}
			if err := c.checkInvariants(); err != nil {
				t.Fatal(err)
			}
		}
		c.Close()
		clk.Advance(time.Hour)
		if calls != answered {
			t.Fatalf("%d callbacks expected, %d called", calls, answered)
		}
	})
}
