//go:build !race

package bridge_test

import "testing"

// TestProduceRoundTripAllocsACL: TestProduceRoundTripAllocs with the
// authorizer on and 200 ACLs: the check on every request allocates
// nothing (docs/design/style.md habit 7).
func TestProduceRoundTripAllocsACL(t *testing.T) {
	gw := aclBenchGateway(t, true)
	gw.CreateTopic(t, "allocs", benchPartitions)
	bc := dialBench(t, gw.Addr)
	frame := produceFrame("allocs")
	for range 200 {
		checkProduce(t, bc.roundTrip(t, frame))
	}
	n := testing.AllocsPerRun(300, func() { bc.roundTrip(t, frame) })
	t.Logf("%.3f allocations per Produce round trip with ACLs", n)
	if n > 0.5 {
		t.Fatalf("%.2f allocations per Produce round trip with ACLs", n)
	}
}
