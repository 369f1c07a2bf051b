package bridge_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kiggy-io/kiggy/internal/testing/kiggytest"
)

// TestBrokerConfigAlterations: kiggy's broker configs are its flags, so an
// alteration of one is INVALID_CONFIG, except the deletion of replication
// throttles, which kiggy never has (kafka-reassign-partitions --verify
// deletes them from every broker): that succeeds with nothing to delete.
func TestBrokerConfigAlterations(t *testing.T) {
	gw := kiggytest.Start(t, kiggytest.Options{})
	cl, err := kgo.NewClient(kgo.SeedBrokers(gw.Addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	incremental := func(op kmsg.IncrementalAlterConfigOp, names ...string) int16 {
		t.Helper()
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		r := kmsg.NewIncrementalAlterConfigsRequestResource()
		r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeBroker, "1"
		for _, n := range names {
			c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
			c.Name, c.Op = n, op
			if op == kmsg.IncrementalAlterConfigOpSet {
				c.Value = kmsg.StringPtr("1048576")
			}
			r.Configs = append(r.Configs, c)
		}
		req.Resources = append(req.Resources, r)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Resources[0].ErrorCode
	}
	if code := incremental(kmsg.IncrementalAlterConfigOpDelete, "leader.replication.throttled.rate", "follower.replication.throttled.rate",
		"replica.alter.log.dirs.io.max.bytes.per.second"); code != 0 {
		t.Errorf("deleting the replication throttles: %d, want 0", code)
	}
	for _, c := range []struct {
		what  string
		op    kmsg.IncrementalAlterConfigOp
		names []string
	}{
		{"setting a replication throttle", kmsg.IncrementalAlterConfigOpSet, []string{"leader.replication.throttled.rate"}},
		{"deleting log.retention.ms", kmsg.IncrementalAlterConfigOpDelete, []string{"log.retention.ms"}},
		{"deleting a throttle and log.retention.ms", kmsg.IncrementalAlterConfigOpDelete, []string{"leader.replication.throttled.rate", "log.retention.ms"}},
	} {
		if code := incremental(c.op, c.names...); code != kerr.InvalidConfig.Code {
			t.Errorf("%s: %d, want INVALID_CONFIG", c.what, code)
		}
	}
}
