package bridge_test

import (
	"bytes"
	"context"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kiggy-io/kiggy/internal/testing/kiggytest"
)

// TestSegmentBytesOnIggy: a topic created with segment.bytes on the Iggy
// backend gets Iggy segments of that size (segment_size), so a real
// iggy-server rolls 1 MiB segments as Kafka would: 4 MiB produced to one
// partition leaves at least 4 segment files. retention.bytes below the
// segment size is Iggy's InvalidTopicSize, answered INVALID_CONFIG. On
// the iggytest model (which has no segment files) the options are checked
// as the server checks them.
func TestSegmentBytesOnIggy(t *testing.T) {
	t.Parallel()
	gw := kiggytest.Start(t, kiggytest.Options{Iggy: true})
	cl, err := kgo.NewClient(kgo.SeedBrokers(gw.Addr), kgo.ProducerBatchMaxBytes(256<<10), kgo.MaxBufferedRecords(64))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	seg, small := "1048576", "2000000"
	resp, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"segment.bytes": &seg}, "segments")
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("create a topic with segment.bytes 1 MiB: %v", err)
	}
	// retention.bytes 2,000,000 is over a 1 MiB segment: accepted; under
	// the default 1 GiB segment: refused.
	if resp, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"segment.bytes": &seg, "retention.bytes": &small}, "segments-capped"); err != nil || resp.Err != nil {
		t.Errorf("retention.bytes 2 MB over 1 MiB segments: %v %v", err, resp.Err)
	}
	if resp, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"retention.bytes": &small}, "segments-default"); err == nil && resp.Err == nil {
		t.Errorf("retention.bytes 2 MB under Iggy's default 1 GiB segment was accepted")
	}
	if gw.IggyNode == nil {
		t.Log("on the iggytest model: segment files not checked")
		return
	}
	value := bytes.Repeat([]byte("s"), 16<<10)
	var recs []*kgo.Record
	for range 256 { // 4 MiB
		recs = append(recs, &kgo.Record{Topic: "segments", Value: value})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	var segments []string
	filepath.WalkDir(gw.IggyNode.DataDir(), func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".log") && strings.Contains(path, "partitions") {
			segments = append(segments, path)
		}
		return nil
	})
	// The system stream's topics have segments too; those of "segments"
	// are the ones in the directory holding the most.
	byDir := map[string]int{}
	most := 0
	for _, s := range segments {
		byDir[filepath.Dir(s)]++
		most = max(most, byDir[filepath.Dir(s)])
	}
	if most < 4 {
		t.Fatalf("4 MiB into 1 MiB segments: at most %d segment files in a partition directory (%d .log files in all: %v)", most, len(segments), segments)
	}
	t.Logf("4 MiB into 1 MiB segments: %d segment files in the partition", most)
}
