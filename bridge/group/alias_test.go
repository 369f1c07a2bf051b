package group

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
	"unsafe"
)

// reqBuf imitates a request frame: strings and byte slices handed to the
// coordinator are views of one buffer that is overwritten after each call.
type reqBuf struct {
	buf []byte
}

func newReqBuf() *reqBuf { return &reqBuf{buf: make([]byte, 0, 1<<16)} }

func (b *reqBuf) str(s string) string {
	if s == "" {
		return ""
	}
	start := len(b.buf)
	b.buf = append(b.buf, s...) // never grows: cap is reserved
	return unsafe.String(&b.buf[start], len(s))
}

func (b *reqBuf) bytes(p []byte) []byte {
	start := len(b.buf)
	b.buf = append(b.buf, p...)
	return b.buf[start:len(b.buf):len(b.buf)]
}

// scribble overwrites everything handed out and starts over.
func (b *reqBuf) scribble() {
	full := b.buf[:cap(b.buf)]
	for i := range full {
		full[i] = 'X'
	}
	b.buf = b.buf[:0]
}

func (b *reqBuf) join(groupID, memberID, clientID, instance string, protos ...Protocol) JoinRequest {
	req := JoinRequest{
		GroupID:          b.str(groupID),
		MemberID:         b.str(memberID),
		ClientID:         b.str(clientID),
		ClientHost:       b.str("/10.0.0.1"),
		ProtocolType:     b.str("consumer"),
		SessionTimeout:   consumerJoin("", "", "").SessionTimeout,
		RebalanceTimeout: consumerJoin("", "", "").RebalanceTimeout,
		Reason:           b.str("because"),
	}
	if instance != "" {
		req.GroupInstanceID, req.HasInstanceID = b.str(instance), true
	}
	for _, p := range protos {
		req.Protocols = append(req.Protocols, Protocol{Name: b.str(p.Name), Metadata: b.bytes(p.Metadata)})
	}
	return req
}

// cloneValue deep-copies a value's strings and byte slices.
func cloneValue(v reflect.Value) reflect.Value {
	switch v.Kind() {
	case reflect.String:
		return reflect.ValueOf(strings.Clone(v.String())).Convert(v.Type())
	case reflect.Slice:
		if v.IsNil() {
			return v
		}
		out := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
		for i := range v.Len() {
			out.Index(i).Set(cloneValue(v.Index(i)))
		}
		return out
	case reflect.Struct:
		out := reflect.New(v.Type()).Elem()
		for i := range v.NumField() {
			out.Field(i).Set(cloneValue(v.Field(i)))
		}
		return out
	default:
		return v
	}
}

// snapshots keeps results and their deep copies, to check later that no
// result changed.
type snapshots struct {
	t    *testing.T
	vals []any
	copy []any
}

func (s *snapshots) add(v any) {
	s.vals = append(s.vals, v)
	s.copy = append(s.copy, cloneValue(reflect.ValueOf(v)).Interface())
}

func (s *snapshots) check(when string) {
	s.t.Helper()
	for i := range s.vals {
		if !reflect.DeepEqual(s.vals[i], s.copy[i]) {
			s.t.Fatalf("%s: result %d changed:\n got %+v\nwant %+v", when, i, s.vals[i], s.copy[i])
		}
	}
}

func TestResultsDoNotAliasRequests(t *testing.T) {
	h := newHarness(t, Config{})
	b := newReqBuf()
	snap := &snapshots{t: t}

	// Generation 1: a (static) and b join with aliased requests.
	ja := h.join(b.join("grp", "", "client-a", "inst-a",
		Protocol{"range", []byte("sub-a-range")}, Protocol{"roundrobin", []byte("sub-a-rr")}))
	b.scribble()
	jb := h.join(b.join("grp", "", "client-b", "", Protocol{"range", []byte("sub-b-range")}))
	b.scribble()
	h.clock.Advance(2 * delay)
	ra, rb := ja.result(), jb.result()
	snap.add(ra)
	snap.add(rb)
	if ra.Error != 0 || !strings.HasPrefix(ra.MemberID, "inst-a-") || !strings.HasPrefix(rb.MemberID, "client-b-") ||
		ra.ProtocolType != "consumer" || ra.ProtocolName != "range" || len(ra.Members) != 2 ||
		ra.Members[0].GroupInstanceID != "inst-a" || string(ra.Members[0].Metadata) != "sub-a-range" ||
		string(ra.Members[1].Metadata) != "sub-b-range" {
		t.Fatalf("join results %+v %+v", ra, rb)
	}
	ida, idb := strings.Clone(ra.MemberID), strings.Clone(rb.MemberID)

	// The follower's sync waits while the buffer is overwritten.
	sb := h.sync(SyncRequest{GroupID: b.str("grp"), GenerationID: 1, MemberID: b.str(idb),
		ProtocolType: b.str("consumer"), HasProtocolType: true, ProtocolName: b.str("range"), HasProtocolName: true})
	b.scribble()
	sa := h.sync(SyncRequest{GroupID: b.str("grp"), GenerationID: 1, MemberID: b.str(ida),
		GroupInstanceID: b.str("inst-a"), HasInstanceID: true,
		Assignments: []Assignment{
			{MemberID: b.str(ida), Assignment: b.bytes([]byte("asg-a"))},
			{MemberID: b.str(idb), Assignment: b.bytes([]byte("asg-b"))},
		}})
	b.scribble()
	rsa, rsb := sa.result(), sb.result()
	snap.add(rsa)
	snap.add(rsb)
	if string(rsa.Assignment) != "asg-a" || string(rsb.Assignment) != "asg-b" || rsb.ProtocolName != "range" {
		t.Fatalf("sync results %+v %+v", rsa, rsb)
	}
	d := h.c.Describe(b.str("grp"))
	b.scribble()
	snap.add(d)
	if d.GroupID != "grp" || d.Members[0].ClientID != "client-a" || d.Members[0].ClientHost != "/10.0.0.1" ||
		d.Members[0].GroupInstanceID != "inst-a" || string(d.Members[1].Metadata) != "sub-b-range" ||
		string(d.Members[1].Assignment) != "asg-b" {
		t.Fatalf("describe %+v", d)
	}
	l := h.c.List()
	snap.add(l)
	if len(l) != 1 || l[0].GroupID != "grp" || l[0].ProtocolType != "consumer" {
		t.Fatalf("list %+v", l)
	}
	if code := h.c.Heartbeat(b.str("grp"), b.str(idb), "", false, 1); code != 0 {
		t.Fatalf("heartbeat = %d", code)
	}
	b.scribble()
	snap.check("after generation 1")

	// Generation 2 replaces metadata and assignments: generation 1's results,
	// which share coordinator-owned slices, must not change.
	ja2 := h.join(b.join("grp", ida, "client-a", "inst-a", Protocol{"range", []byte("sub-a-range-2")}))
	b.scribble()
	jb2 := h.join(b.join("grp", idb, "client-b", "", Protocol{"range", []byte("sub-b-range-2")}))
	b.scribble()
	ra2 := ja2.result()
	snap.add(ra2)
	snap.add(jb2.result())
	if ra2.GenerationID != 2 || string(ra2.Members[0].Metadata) != "sub-a-range-2" {
		t.Fatalf("generation 2 %+v", ra2)
	}
	sb2 := h.sync(SyncRequest{GroupID: b.str("grp"), GenerationID: 2, MemberID: b.str(idb)})
	b.scribble()
	h.sync(SyncRequest{GroupID: b.str("grp"), GenerationID: 2, MemberID: b.str(ida),
		Assignments: []Assignment{{MemberID: b.str(idb), Assignment: b.bytes([]byte("asg-b-2"))}}})
	b.scribble()
	if r := sb2.result(); string(r.Assignment) != "asg-b-2" {
		t.Fatalf("generation 2 sync %+v", r)
	}
	snap.add(sb2.result())
	snap.check("after generation 2")

	// Static replacement, leave and commits with aliased ids.
	rs := h.join(b.join("grp", "", "client-a", "inst-a", Protocol{"range", []byte("sub-a-range-2")})).result()
	b.scribble()
	snap.add(rs)
	if rs.Error != 0 || !strings.HasPrefix(rs.MemberID, "inst-a-") {
		t.Fatalf("static rejoin %+v", rs)
	}
	if code := h.c.ValidateCommit(b.str("simple"), "", "", false, -1); code != 0 {
		t.Fatalf("commit = %d", code)
	}
	b.scribble()
	if _, errs := h.c.Leave(b.str("grp"), []LeaveMember{{MemberID: b.str(idb), Reason: b.str("bye")}}); errs[0] != 0 {
		t.Fatalf("leave %v", errs)
	}
	b.scribble()
	l2 := h.c.List()
	if len(l2) != 2 || l2[0].GroupID != "grp" || l2[1].GroupID != "simple" {
		t.Fatalf("list %+v", l2)
	}
	snap.check("at the end")
	if !bytes.Equal(ra.Members[0].Metadata, []byte("sub-a-range")) {
		t.Fatal("generation 1 leader's member metadata changed")
	}
}
