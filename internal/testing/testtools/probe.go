package testtools

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ProbeKafka checks that addr answers ApiVersions and Metadata, so a
// gateway that accepts connections but never answers fails its test at once
// and says so, instead of every client timing out on its own.
func ProbeKafka(addr string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DialTimeout(timeout))
	if err != nil {
		return err
	}
	defer cl.Close()
	if _, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, cl); err != nil {
		return fmt.Errorf("probe: ApiVersions: %w", err)
	}
	if _, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl); err != nil {
		return fmt.Errorf("probe: Metadata: %w", err)
	}
	return nil
}
