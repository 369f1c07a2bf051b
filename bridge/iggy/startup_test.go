package iggy

import (
	"strings"
	"testing"
	"time"

	"github.com/kiggy-io/kiggy/bridge/iggy/iggytest"
	"github.com/kiggy-io/kiggy/bridge/iggy/proto"
)

// TestClusterStartLoginTransient: a real 3-node cluster answers logins with
// 57 TransientNotCommitted (and a backup with 58) while its first view
// change runs, seen by hand (docs/MANUAL_TESTING.md, 2026-12-01). Open must
// wait through that window like a leaderless one, not report an
// incompatible server.
func TestClusterStartLoginTransient(t *testing.T) {
	for _, status := range []proto.Code{proto.CodeTransientNotCommitted, proto.CodeTransientNotAccepted} {
		t.Run(status.String(), func(t *testing.T) {
			cl := startCluster(t, 3)
			for i := range 3 {
				cl.Node(i).InjectFault(iggytest.Fault{Op: proto.OpRegister, Count: 2, Status: uint32(status)})
			}
			c := open(t, Config{Addr: strings.Join(cl.Addrs(), ","), PoolSize: 1, DialTimeout: 2 * time.Second,
				ReconnectBackoffMin: 10 * time.Millisecond})
			if addr, _ := c.target(); !sameAddr(addr, cl.Addr(0)) {
				t.Fatalf("sessions go to %s, want the primary %s", addr, cl.Addr(0))
			}
		})
	}
}
