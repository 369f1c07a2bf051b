package bridge_test

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kiggy-io/kiggy/bridge/memlog"
	"github.com/kiggy-io/kiggy/bridge/store"
	"github.com/kiggy-io/kiggy/internal/testing/kiggytest"
	"github.com/kiggy-io/kiggy/wire"
)

// unreachableOffsets is a log whose committed offsets cannot be read.
type unreachableOffsets struct{ store.Log }

func (unreachableOffsets) FetchOffset(context.Context, string, string, int32) (int64, string, bool, error) {
	return 0, "", false, store.ErrUnavailable
}

// TestOffsetFetchBackendDownIsRetriable: when the backend cannot read a
// group's commits, OffsetFetch answers COORDINATOR_LOAD_IN_PROGRESS at the
// group level (v2+; per partition in v1), which the Java consumer retries;
// as a partition error it is fatal to it (seen by hand while iggy-server
// restarted).
func TestOffsetFetchBackendDownIsRetriable(t *testing.T) {
	gw := kiggytest.Start(t, kiggytest.Options{Log: unreachableOffsets{memlog.New(memlog.Config{})}})
	gw.CreateTopic(t, "of", 2)
	rc := dialRaw(t, gw.Addr)
	want := int16(wire.CoordinatorLoadInProgress)
	for _, v := range []int16{1, 5, 7} {
		req := kmsg.NewPtrOffsetFetchRequest()
		req.Version, req.Group = v, "g"
		rt := kmsg.NewOffsetFetchRequestTopic()
		rt.Topic, rt.Partitions = "of", []int32{0, 1}
		req.Topics = append(req.Topics, rt)
		resp := kmsg.NewPtrOffsetFetchResponse()
		resp.Version = v
		rc.recv(rc.send(req), resp)
		switch {
		case v >= 2 && resp.ErrorCode != want:
			t.Errorf("v%d: top-level error %d, want %d", v, resp.ErrorCode, want)
		case v >= 2:
			for _, tp := range resp.Topics {
				for _, p := range tp.Partitions {
					if p.ErrorCode != 0 {
						t.Errorf("v%d: partition %d error %d beside the group error", v, p.Partition, p.ErrorCode)
					}
				}
			}
		default:
			if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 2 || resp.Topics[0].Partitions[0].ErrorCode != want {
				t.Errorf("v1: %+v, want every partition %d", resp.Topics, want)
			}
		}
	}
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Version = 8
	rg := kmsg.NewOffsetFetchRequestGroup()
	rg.Group = "g"
	req.Groups = append(req.Groups, rg)
	resp := kmsg.NewPtrOffsetFetchResponse()
	resp.Version = 8
	rc.recv(rc.send(req), resp)
	if len(resp.Groups) != 1 || resp.Groups[0].ErrorCode != want {
		t.Fatalf("v8: groups %+v, want error %d", resp.Groups, want)
	}
}
