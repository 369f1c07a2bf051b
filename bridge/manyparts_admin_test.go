package bridge_test

import (
	"context"
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kiggy-io/kiggy/bridge/iggy/iggytest"
	"github.com/kiggy-io/kiggy/bridge/iggy/proto"
	"github.com/kiggy-io/kiggy/internal/testing/kiggytest"
)

// partitionsOf is the partition count Metadata reports for topic, or -1
// when the topic does not exist.
func partitionsOf(t *testing.T, adm *kadm.Client, topic string) int {
	t.Helper()
	td, err := adm.ListTopics(context.Background(), topic)
	if err != nil {
		t.Fatal(err)
	}
	d, ok := td[topic]
	if !ok || d.Err != nil {
		return -1
	}
	return len(d.Partitions)
}

// TestCreateManyPartitionsIggy: on the Iggy backend, which creates at most
// 1,000 partitions per request (iggytest enforces it as the server does),
// CreateTopics of 2,500 partitions and CreatePartitions growing by 1,600
// succeed through kadm: the client creates the rest in steps before
// answering.
func TestCreateManyPartitionsIggy(t *testing.T) {
	gw := kiggytest.Start(t, kiggytest.Options{Iggy: true})
	cl, err := kgo.NewClient(kgo.SeedBrokers(gw.Addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx := context.Background()

	res, err := adm.CreateTopic(ctx, 2500, -1, nil, "wide")
	if err != nil || res.Err != nil || res.NumPartitions != 2500 {
		t.Fatalf("create 2,500: %v %+v", err, res)
	}
	if n := partitionsOf(t, adm, "wide"); n != 2500 {
		t.Fatalf("metadata: %d partitions, want 2500", n)
	}
	rs, err := adm.UpdatePartitions(ctx, 4100, "wide")
	if err != nil || rs["wide"].Err != nil {
		t.Fatalf("grow to 4,100: %v %+v", err, rs)
	}
	if n := partitionsOf(t, adm, "wide"); n != 4100 {
		t.Fatalf("metadata after growing: %d partitions, want 4100", n)
	}
}

// TestCreateManyPartitionsStepFailsIggy: when a step past the first 1,000
// partitions fails, CreateTopics answers the error and the partial topic is
// deleted, not left half made; a CreatePartitions whose first step fails
// adds nothing.
func TestCreateManyPartitionsStepFailsIggy(t *testing.T) {
	gw := kiggytest.Start(t, kiggytest.Options{Iggy: true, IggyModel: true})
	cl, err := kgo.NewClient(kgo.SeedBrokers(gw.Addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx := context.Background()

	gw.Iggy.InjectFault(iggytest.Fault{Op: proto.OpCreatePartitions, Count: 1, Status: uint32(proto.CodeTooManyPartitions)})
	// kadm's CreateTopic returns the topic's error as its own.
	if _, err := adm.CreateTopic(ctx, 1500, -1, nil, "half"); !errors.Is(err, kerr.InvalidPartitions) {
		t.Fatalf("create with a failing step: %v, want INVALID_PARTITIONS", err)
	}
	if n := partitionsOf(t, adm, "half"); n != -1 {
		t.Fatalf("a partial topic of %d partitions was left", n)
	}

	if res, err := adm.CreateTopic(ctx, 10, -1, nil, "grow"); err != nil || res.Err != nil {
		t.Fatalf("create: %v %+v", err, res)
	}
	gw.Iggy.InjectFault(iggytest.Fault{Op: proto.OpCreatePartitions, Count: 1, Status: uint32(proto.CodeTooManyPartitions)})
	rs, err := adm.UpdatePartitions(ctx, 1500, "grow")
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(rs["grow"].Err, kerr.InvalidPartitions) {
		t.Fatalf("grow with a failing step: %v, want INVALID_PARTITIONS", rs["grow"].Err)
	}
	if n := partitionsOf(t, adm, "grow"); n != 10 {
		t.Fatalf("after a failed grow: %d partitions, want 10", n)
	}
}
