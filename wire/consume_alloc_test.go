//go:build !race

package wire

import "testing"

// Zero allocations on the consume-side hot paths is a failing test, not a
// benchmark column (docs/design/style.md habit 7). The race detector allocates, hence
// the build tag.

// csDecoders are our decoders bound to reused requests.
func csDecoders() map[string]func([]byte, int16) error {
	return map[string]func([]byte, int16) error{
		"Fetch":                        (&FetchRequest{}).Decode,
		"ListOffsets":                  (&ListOffsetsRequest{}).Decode,
		"FindCoordinator":              (&FindCoordinatorRequest{}).Decode,
		"JoinGroup":                    (&JoinGroupRequest{}).Decode,
		"SyncGroup":                    (&SyncGroupRequest{}).Decode,
		"Heartbeat":                    (&HeartbeatRequest{}).Decode,
		"LeaveGroup":                   (&LeaveGroupRequest{}).Decode,
		"OffsetCommit":                 (&OffsetCommitRequest{}).Decode,
		"OffsetFetch":                  (&OffsetFetchRequest{}).Decode,
		"DescribeGroups":               (&DescribeGroupsRequest{}).Decode,
		"ListGroups":                   (&ListGroupsRequest{}).Decode,
		"OffsetForLeaderEpoch":         (&OffsetForLeaderEpochRequest{}).Decode,
		"DeleteGroups":                 (&DeleteGroupsRequest{}).Decode,
		"OffsetDelete":                 (&OffsetDeleteRequest{}).Decode,
		"DeleteRecords":                (&DeleteRecordsRequest{}).Decode,
		"SaslHandshake":                (&SaslHandshakeRequest{}).Decode,
		"SaslAuthenticate":             (&SaslAuthenticateRequest{}).Decode,
		"DescribeClientQuotas":         (&DescribeClientQuotasRequest{}).Decode,
		"AlterClientQuotas":            (&AlterClientQuotasRequest{}).Decode,
		"DescribeUserScramCredentials": (&DescribeUserScramCredentialsRequest{}).Decode,
		"AlterUserScramCredentials":    (&AlterUserScramCredentialsRequest{}).Decode,
		"ConsumerGroupHeartbeat":       (&ConsumerGroupHeartbeatRequest{}).Decode,
		"ConsumerGroupDescribe":        (&ConsumerGroupDescribeRequest{}).Decode,
	}
}

// TestConsumeDecodeAllocs decodes requests (with unknown tags, large and
// small, alternating) into reused structs: after the first round sizes the
// slices, decoding allocates nothing. Fetch, OffsetCommit and Heartbeat are
// the hot ones; every decoder is held to it.
func TestConsumeDecodeAllocs(t *testing.T) {
	decs := csDecoders()
	if len(decs) != len(csRequestAPIs) {
		t.Fatalf("%d decoders for %d request APIs", len(decs), len(csRequestAPIs))
	}
	for _, a := range csRequestAPIs {
		dec := decs[a.name]
		for v := a.min; v <= a.max; v++ {
			big := csEncodeRequest(a, v, 7, 2, true)   // many partitions
			small := csEncodeRequest(a, v, 8, 4, true) // random
			for _, b := range [][]byte{big, small} {
				if err := dec(b, v); err != nil {
					t.Fatalf("%s v%d: %v", a.name, v, err)
				}
			}
			allocs := testing.AllocsPerRun(50, func() {
				if dec(big, v) != nil || dec(small, v) != nil {
					panic("decode failed")
				}
			})
			if allocs != 0 {
				t.Errorf("%s v%d: %v allocations per decode pair, want 0", a.name, v, allocs)
			}
		}
	}
}

// TestConsumeEncodeAllocs encodes every response, Fetch with records, into
// a reused buffer: no allocations.
func TestConsumeEncodeAllocs(t *testing.T) {
	buf := make([]byte, 0, 8<<20)
	for _, a := range csResponseAPIs {
		for v := a.min; v <= a.max; v++ {
			enc, _ := a.build(newVariantGen(3, 2), v)
			if b := enc(buf[:0]); cap(b) != cap(buf) {
				t.Fatalf("%s v%d: test buffer too small", a.name, v)
			}
			if allocs := testing.AllocsPerRun(50, func() { enc(buf[:0]) }); allocs != 0 {
				t.Errorf("%s v%d: %v allocations per encode, want 0", a.name, v, allocs)
			}
		}
	}
}

// TestFetchStreamingAllocs builds a Fetch response with the Begin/End path,
// records written straight into the buffer and hints both too small and too
// large (so the length prefix moves): no allocations.
func TestFetchStreamingAllocs(t *testing.T) {
	rec := make([]byte, 20000)
	parts := make([]FetchResponseTopicPartition, 16)
	for i := range parts {
		parts[i] = FetchResponseTopicPartition{Partition: int32(i), HighWatermark: 100, LastStableOffset: 100, PreferredReadReplica: -1}
	}
	buf := make([]byte, 0, 1<<20)
	for v := int16(4); v <= fetchMax; v++ {
		allocs := testing.AllocsPerRun(50, func() {
			dst := AppendFetchResponseStart(buf[:0], v, 0, NoError, 0, 2)
			for _, topic := range []string{"orders", "payments"} {
				dst = AppendFetchTopicStart(dst, v, topic, [16]byte{1}, len(parts))
				for i := range parts {
					var m FetchPartitionMark
					dst, m = AppendFetchPartitionBegin(dst, v, &parts[i], i*4000)
					dst = append(dst, rec[:i*1000]...)
					dst = AppendFetchPartitionEnd(dst, m, &parts[i])
				}
				dst = AppendFetchTopicEnd(dst, v)
			}
			AppendFetchResponseEnd(dst, v)
		})
		if allocs != 0 {
			t.Errorf("v%d: %v allocations per streamed response, want 0", v, allocs)
		}
	}
}
