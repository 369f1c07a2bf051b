// Package cluster runs several kiggy instances over one backend as one Kafka
// cluster (docs/design/cluster.md): every instance announces itself and
// heartbeats in a membership log kept in the backend (a topic of Iggy's
// reserved stream), every instance reads that log in the same order and so
// derives the same live set, the same leader for every partition (rendezvous
// hashing), the same leader epochs and the same group coordinators.
// Membership implements bridge.Placement.
//
// A bare section number (§5) in this package's comments refers to
// docs/design/cluster.md.
package cluster

import (
	"encoding/binary"
	"errors"

	"github.com/kiggy-io/kiggy/bridge"
)

// Membership log record kinds (§2).
const (
	recordVersion = 1
	kindHeartbeat = 1 // "I am live": announcement and heartbeat alike
	kindLeave     = 2 // a graceful exit: the instance stopped serving
)

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
	endpoints []bridge.Endpoint
}

// appendRecord encodes r (§2): [version u8][kind u8][node i32]
// [incarnation u64][applied u64][endpoint count u8] then per endpoint
// [listener u8+bytes][host u8+bytes][port u16], little-endian. Names longer
// than 255 bytes are cut (cmd/kiggy refuses them first).
func appendRecord(b []byte, r record) []byte {
	b = append(b, recordVersion, r.kind)
	b = binary.LittleEndian.AppendUint32(b, uint32(r.node))
	b = binary.LittleEndian.AppendUint64(b, r.incarnation)
	b = binary.LittleEndian.AppendUint64(b, r.applied)
	eps := r.endpoints
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

// errBadRecord is a record the decoder cannot read.
var errBadRecord = errors.New("cluster: malformed membership record")

// decodeRecord decodes one record; it never panics. Trailing bytes are an
// error: a later version that adds fields bumps recordVersion.
func decodeRecord(p []byte) (record, error) {
	var r record
	if len(p) < 23 || p[0] != recordVersion {
		return r, errBadRecord
	}
	r.kind = p[1]
	if r.kind != kindHeartbeat && r.kind != kindLeave {
		return r, errBadRecord
	}
	r.node = int32(binary.LittleEndian.Uint32(p[2:]))
	r.incarnation = binary.LittleEndian.Uint64(p[6:])
	r.applied = binary.LittleEndian.Uint64(p[14:])
	n := int(p[22])
	p = p[23:]
	if n > maxEndpoints {
		return r, errBadRecord
	}
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
	for range n {
		var e bridge.Endpoint
		var ok bool
		if e.Listener, ok = str(); !ok {
			return r, errBadRecord
		}
		if e.Host, ok = str(); !ok || len(p) < 2 {
			return r, errBadRecord
		}
		e.Port = int32(binary.LittleEndian.Uint16(p))
		p = p[2:]
		r.endpoints = append(r.endpoints, e)
	}
	if len(p) != 0 || r.node < 0 {
		return r, errBadRecord
	}
	return r, nil
}
