// Package cluster runs several kiggy instances over one backend as one Kafka
// cluster (docs/design/cluster.md): every instance announces itself and
// heartbeats in a membership log kept in the backend (a topic of Iggy's
// reserved stream), every instance reads that log in the same order and so
// derives the same live set, the same leader for every partition (rendezvous
// hashing), the same leader epochs and the same group coordinators.
// Membership implements store.Placement.
//
// A bare section number (§5) in this package's comments refers to
// docs/design/cluster.md.
package cluster

import (
	"encoding/binary"
	"errors"

	"github.com/kiggy-io/kiggy/bridge/store"
)

// Membership log record kinds (§2).
const (
	recordVersion = 1
	kindHeartbeat = 1 // "I am live": announcement and heartbeat alike
	kindLeave     = 2 // a graceful exit: the instance stopped serving
	// kindSwitch ends the generation it is in (§2 "Generations"): the
	// records after the first one are ignored; the state so far continues
	// in the next generation. applied carries the generation it ends.
	kindSwitch = 3
	// kindSnapshot is the first record of a generation after the first:
	// the state at the previous generation's switch (snapState).
	kindSnapshot = 4
	// kindNotice says the writer changed the shared state (§10 "Notices"):
	// the others bring their views up to date at once instead of at their
	// next refresh. It is laid out as a heartbeat with applied 0 and no
	// endpoints, and changes nothing in the membership state.
	kindNotice = 5
)

// maxSnapshotViews is how many of the latest views a snapshot keeps (§4):
// a partition whose leader did not change within them gets the oldest
// kept view's number as its epoch. Views change only when the live set
// does (a restart is two), so 1,024 views is years of ordinary operation;
// a snapshot of three members holding all of them is about 16 KB.
const maxSnapshotViews = 1024

// maxSnapshotMembers bounds the members of a snapshot (node ids are
// distinct; the decoder refuses more).
const maxSnapshotMembers = 4096

// maxEndpoints bounds the endpoints of one announcement (one per listener).
const maxEndpoints = 16

// record is one membership log record.
type record struct {
	kind uint8
	node int32
	// incarnation tells the runs of one node id apart (a restart).
	incarnation uint64
	// applied is the view the writer has applied with no append started
	// under an older view still in flight (§5).
	applied   uint64
	endpoints []store.Endpoint
	// snap is a snapshot record's state (kindSnapshot only).
	snap *snapState
}

// snapState is what a snapshot record holds (§2 "Generations"): the
// membership state at the switch that ended the previous generation.
type snapState struct {
	gen      uint32 // the generation it starts
	switchAt uint64 // the offset of the switch record in generation gen-1
	now      uint64 // log time, µs
	base     uint64 // the number of views[0]
	views    [][]int32
	members  []snapMember // sorted by node, the same ids as the last view
}

// snapMember is one live member in a snapshot.
type snapMember struct {
	node        int32
	incarnation uint64
	last        uint64
	applied     uint64
	endpoints   []store.Endpoint
}

// appendRecord encodes r (§2): [version u8][kind u8][node i32]
// [incarnation u64][applied u64][endpoint count u8] then per endpoint
// [listener u8+bytes][host u8+bytes][port u16], little-endian. Names longer
// than 255 bytes are cut (cmd/kiggy refuses them first).
//
// A snapshot record (kind 4) is instead [version u8][kind u8][gen u32]
// [switch offset u64][log time u64][first view number u64][view count u16]
// then per view [node count u16][node i32 ...] (sorted), then [member
// count u16] and per member [node i32][incarnation u64][last u64]
// [applied u64] and its endpoints as above; the members are the last
// view's nodes, in order.
func appendRecord(b []byte, r record) []byte {
	b = append(b, recordVersion, r.kind)
	if r.kind == kindSnapshot {
		return appendSnap(b, r.snap)
	}
	b = binary.LittleEndian.AppendUint32(b, uint32(r.node))
	b = binary.LittleEndian.AppendUint64(b, r.incarnation)
	b = binary.LittleEndian.AppendUint64(b, r.applied)
	return appendEndpoints(b, r.endpoints)
}

func appendEndpoints(b []byte, eps []store.Endpoint) []byte {
	if len(eps) > maxEndpoints {
		eps = eps[:maxEndpoints]
	}
	b = append(b, uint8(len(eps)))
	str := func(s string) {
		if len(s) > 255 {
			s = s[:255]
		}
		b = append(b, uint8(len(s)))
		b = append(b, s...)
	}
	for _, e := range eps {
		str(e.Listener)
		str(e.Host)
		b = binary.LittleEndian.AppendUint16(b, uint16(e.Port))
	}
	return b
}

func appendSnap(b []byte, s *snapState) []byte {
	le := binary.LittleEndian
	b = le.AppendUint32(b, s.gen)
	b = le.AppendUint64(b, s.switchAt)
	b = le.AppendUint64(b, s.now)
	b = le.AppendUint64(b, s.base)
	b = le.AppendUint16(b, uint16(len(s.views)))
	for _, v := range s.views {
		b = le.AppendUint16(b, uint16(len(v)))
		for _, n := range v {
			b = le.AppendUint32(b, uint32(n))
		}
	}
	b = le.AppendUint16(b, uint16(len(s.members)))
	for _, m := range s.members {
		b = le.AppendUint32(b, uint32(m.node))
		b = le.AppendUint64(b, m.incarnation)
		b = le.AppendUint64(b, m.last)
		b = le.AppendUint64(b, m.applied)
		b = appendEndpoints(b, m.endpoints)
	}
	return b
}

// errBadRecord is a record the decoder cannot read.
var errBadRecord = errors.New("cluster: malformed membership record")

// decodeRecord decodes one record; it never panics. Trailing bytes are an
// error: a later version that adds fields bumps recordVersion.
func decodeRecord(p []byte) (record, error) {
	var r record
	if len(p) < 2 || p[0] != recordVersion {
		return r, errBadRecord
	}
	r.kind = p[1]
	if r.kind == kindSnapshot {
		s, err := decodeSnap(p[2:])
		r.snap = s
		return r, err
	}
	if len(p) < 23 || (r.kind != kindHeartbeat && r.kind != kindLeave && r.kind != kindSwitch && r.kind != kindNotice) {
		return r, errBadRecord
	}
	r.node = int32(binary.LittleEndian.Uint32(p[2:]))
	r.incarnation = binary.LittleEndian.Uint64(p[6:])
	r.applied = binary.LittleEndian.Uint64(p[14:])
	var ok bool
	r.endpoints, p, ok = decodeEndpoints(p[22:])
	if !ok || len(p) != 0 || r.node < 0 {
		return r, errBadRecord
	}
	return r, nil
}

// decodeEndpoints reads an endpoint count and the endpoints; it returns
// the rest of p.
func decodeEndpoints(p []byte) ([]store.Endpoint, []byte, bool) {
	if len(p) < 1 || int(p[0]) > maxEndpoints {
		return nil, p, false
	}
	n := int(p[0])
	p = p[1:]
	str := func() (string, bool) {
		if len(p) < 1 {
			return "", false
		}
		n := int(p[0])
		if n > len(p)-1 {
			return "", false
		}
		s := string(p[1 : 1+n])
		p = p[1+n:]
		return s, true
	}
	var eps []store.Endpoint
	for range n {
		var e store.Endpoint
		var ok bool
		if e.Listener, ok = str(); !ok {
			return nil, p, false
		}
		if e.Host, ok = str(); !ok || len(p) < 2 {
			return nil, p, false
		}
		e.Port = int32(binary.LittleEndian.Uint16(p))
		p = p[2:]
		eps = append(eps, e)
	}
	return eps, p, true
}

// decodeSnap decodes a snapshot record's body. Besides the sizes it checks
// what the state relies on: at least one view, at most maxSnapshotViews,
// node ids non-negative and strictly increasing in every view, and the
// members exactly the last view's nodes.
func decodeSnap(p []byte) (*snapState, error) {
	le := binary.LittleEndian
	if len(p) < 30 {
		return nil, errBadRecord
	}
	s := &snapState{gen: le.Uint32(p), switchAt: le.Uint64(p[4:]), now: le.Uint64(p[12:]), base: le.Uint64(p[20:])}
	nv := int(le.Uint16(p[28:]))
	p = p[30:]
	if nv == 0 || nv > maxSnapshotViews || s.gen == 0 || s.base > 1<<62 {
		return nil, errBadRecord
	}
	s.views = make([][]int32, 0, nv)
	for range nv {
		if len(p) < 2 {
			return nil, errBadRecord
		}
		n := int(le.Uint16(p))
		p = p[2:]
		if n > len(p)/4 || n > maxSnapshotMembers {
			return nil, errBadRecord
		}
		v := make([]int32, n)
		for i := range v {
			v[i] = int32(le.Uint32(p[4*i:]))
			if v[i] < 0 || (i > 0 && v[i] <= v[i-1]) {
				return nil, errBadRecord
			}
		}
		p = p[4*n:]
		s.views = append(s.views, v)
	}
	if len(p) < 2 {
		return nil, errBadRecord
	}
	last := s.views[len(s.views)-1]
	if int(le.Uint16(p)) != len(last) {
		return nil, errBadRecord
	}
	p = p[2:]
	for _, id := range last {
		if len(p) < 28 || int32(le.Uint32(p)) != id {
			return nil, errBadRecord
		}
		m := snapMember{node: id, incarnation: le.Uint64(p[4:]), last: le.Uint64(p[12:]), applied: le.Uint64(p[20:])}
		var ok bool
		if m.endpoints, p, ok = decodeEndpoints(p[28:]); !ok {
			return nil, errBadRecord
		}
		s.members = append(s.members, m)
	}
	if len(p) != 0 {
		return nil, errBadRecord
	}
	return s, nil
}
