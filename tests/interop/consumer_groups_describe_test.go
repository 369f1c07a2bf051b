package interop

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kiggy-io/kiggy/internal/testing/testtools"
)

// kip848Member is a franz-go consumer-protocol member (KIP-848,
// kgo.ServerSideBalancer) that polls in the background, commits only what
// it is told to, and tracks the partitions it is assigned.
type kip848Member struct {
	cl     *kgo.Client
	cancel context.CancelFunc
	done   chan struct{}

	mu       sync.Mutex
	assigned map[int32]bool
}

// startKIP848Member joins group with balancer's server-side assignor (kgo:
// the sticky balancers ask for uniform, the range balancer for range).
func startKIP848Member(t testing.TB, addr, group, topic string, balancer kgo.GroupBalancer) *kip848Member {
	t.Helper()
	m := &kip848Member{done: make(chan struct{}), assigned: map[int32]bool{}}
	drop := func(_ context.Context, _ *kgo.Client, r map[string][]int32) {
		m.mu.Lock()
		defer m.mu.Unlock()
		for _, p := range r[topic] {
			delete(m.assigned, p)
		}
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.ServerSideBalancer(), kgo.Balancers(balancer),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit(),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, a map[string][]int32) {
			m.mu.Lock()
			defer m.mu.Unlock()
			for _, p := range a[topic] {
				m.assigned[p] = true
			}
		}),
		kgo.OnPartitionsRevoked(drop), kgo.OnPartitionsLost(drop))
	if err != nil {
		t.Fatal(err)
	}
	m.cl = cl
	ctx, cancel := context.WithCancel(context.Background())
	m.cancel = cancel
	go func() {
		defer close(m.done)
		for ctx.Err() == nil {
			cl.PollFetches(ctx)
		}
	}()
	return m
}

// partitions returns the partitions m is assigned, sorted.
func (m *kip848Member) partitions() []int32 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Sorted(maps.Keys(m.assigned))
}

// memberID is the id m heartbeats with (from v1 the client's own).
func (m *kip848Member) memberID() string {
	id, _ := m.cl.GroupMetadata()
	return id
}

// stop stops polling and closes m, which leaves the group (epoch -1).
func (m *kip848Member) stop() {
	m.cancel()
	<-m.done
	m.cl.Close()
}

// consumerGroupStable asks ConsumerGroupDescribe whether group is Stable
// with n members, each at the assignment epoch.
func consumerGroupStable(ctx context.Context, addr, group string, n int) bool {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		return false
	}
	defer cl.Close()
	req := kmsg.NewPtrConsumerGroupDescribeRequest()
	req.Groups = []string{group}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil || len(resp.Groups) != 1 {
		return false
	}
	g := resp.Groups[0]
	if g.ErrorCode != 0 || g.State != "Stable" || len(g.Members) != n {
		return false
	}
	for _, m := range g.Members {
		if m.MemberEpoch != g.AssignmentEpoch {
			return false
		}
	}
	return true
}

// toolTable is kafka-consumer-groups output made comparable across
// targets: the header's columns and the rows, each a line of
// space-separated cells, sorted, with the group, topic, member ids,
// coordinator address and epochs replaced (normalizeGroupTool), and the
// tool's remarks on stderr that name the group.
type toolTable struct {
	header  string
	rows    []string
	remarks []string
}

func (tt toolTable) String() string {
	return fmt.Sprintf("header %q\nrows:\n  %s\nremarks %q", tt.header, strings.Join(tt.rows, "\n  "), tt.remarks)
}

// epochColumns are the columns holding a group or member epoch.
var epochColumns = []string{"CURRENT-EPOCH", "TARGET-EPOCH", "GROUP-EPOCH", "TARGET-ASSIGNMENT-EPOCH"}

// normalizeGroupTool parses kafka-consumer-groups --describe output: the
// first non-empty stdout line is the header; each row must have as many
// whitespace-separated cells as the header (whose "COORDINATOR (ID)" is
// two, as is the row's "host:port  (id)"). Cells become: the group G, the
// topic T, a member id the letter names gives it, the coordinator ADDR
// when it is addr, "topic:0,1" assignments "T:0,1", and every epoch E once
// all epochs printed are one positive number (a settled group); anything
// else stays as printed, so that it shows in the comparison.
func normalizeGroupTool(r result, group, topic, addr string, names map[string]string) (toolTable, error) {
	var tt toolTable
	var cols []string
	epochs := map[string]bool{}
	var rows [][]string
	for line := range strings.Lines(r.stdout) {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if cols == nil {
			cols = f
			tt.header = strings.Join(f, " ")
			continue
		}
		if len(f) != len(cols) {
			return tt, fmt.Errorf("row %q has %d cells, the header %d", line, len(f), len(cols))
		}
		for i, c := range cols {
			if slices.Contains(epochColumns, c) {
				epochs[f[i]] = true
			}
		}
		rows = append(rows, f)
	}
	if cols == nil {
		return tt, fmt.Errorf("no header on stdout")
	}
	epoch := ""
	if len(epochs) == 1 {
		for e := range epochs {
			if n, err := strconv.Atoi(e); err == nil && n > 0 {
				epoch = e
			}
		}
	}
	for _, f := range rows {
		for i, c := range cols {
			switch v := f[i]; {
			case c == "GROUP" && v == group:
				f[i] = "G"
			case c == "TOPIC" && v == topic:
				f[i] = "T"
			case c == "CONSUMER-ID" && names[v] != "":
				f[i] = names[v]
			case c == "COORDINATOR" && v == addr:
				f[i] = "ADDR"
			case strings.HasSuffix(c, "-ASSIGNMENT") && strings.HasPrefix(v, topic+":"):
				f[i] = "T" + strings.TrimPrefix(v, topic)
			case slices.Contains(epochColumns, c) && v == epoch:
				f[i] = "E"
			}
		}
		tt.rows = append(tt.rows, strings.Join(f, " "))
	}
	slices.Sort(tt.rows)
	for line := range strings.Lines(r.stderr) {
		if strings.Contains(line, group) {
			tt.remarks = append(tt.remarks, strings.ReplaceAll(strings.TrimSpace(line), group, "G"))
		}
	}
	return tt, nil
}

// TestConsumerGroupsDescribeKIP848 describes a consumer-protocol (KIP-848)
// group with kafka-consumer-groups (Java 4.x Admin: ConsumerGroupDescribe,
// OffsetFetch, ListOffsets): two franz-go members with server-side
// assignment (uniform, then range) share a 4-partition topic of 10 records
// a partition, each having committed offset p+5 of its partitions p. While
// they are up, --describe, --members, --members --verbose, --state and
// --state --verbose must print, once normalized (normalizeGroupTool), what
// the members were assigned: a row per partition with offset p+5, log end
// 10 and lag 5-p under its member, a row per member with its 2 partitions,
// current and target assignments equal, the assignor and state Stable with
// 2 members and one epoch throughout; after both leave, the same offsets
// and lags under no member, no member rows, state Empty with 0 members and
// the default assignor, and "has no active members" on stderr. The range
// run checks only the --verbose views. The same expectations hold on Kafka
// 4.4.
func TestConsumerGroupsDescribeKIP848(t *testing.T) {
	tg := newTarget(t)
	testtools.JavaClasspath(t)
	for _, c := range []struct {
		assignor string
		balancer kgo.GroupBalancer
	}{
		{"uniform", kgo.CooperativeStickyBalancer()},
		{"range", kgo.RangeBalancer()},
	} {
		t.Run(c.assignor, func(t *testing.T) { describeKIP848Group(t, tg, c.assignor, c.balancer) })
	}
}

func describeKIP848Group(t *testing.T, tg target, assignor string, balancer kgo.GroupBalancer) {
	const partitions, perPartition = 4, 10
	topic := topicName(t)
	group := "describe-" + topic
	tg.CreateTopic(t, topic, partitions)
	var rs []*kgo.Record
	for p := range int32(partitions) {
		for i := range perPartition {
			rs = append(rs, &kgo.Record{Topic: topic, Partition: p, Value: fmt.Appendf(nil, "v-%d-%d", p, i)})
		}
	}
	produceFranz(t, tg.Addr(), rs, kgo.RecordPartitioner(kgo.ManualPartitioner()))

	members := []*kip848Member{
		startKIP848Member(t, tg.Addr(), group, topic, balancer),
		startKIP848Member(t, tg.Addr(), group, topic, balancer),
	}
	defer func() {
		for _, m := range members {
			if m != nil {
				m.stop()
			}
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	testtools.WaitFor(t, time.Minute, "two members with two partitions each in a Stable group", func() bool {
		return len(members[0].partitions()) == 2 && len(members[1].partitions()) == 2 &&
			consumerGroupStable(ctx, tg.Addr(), group, 2)
	})

	// Each member commits p+5 for its partitions p; the rows and the
	// assignments expected follow from what each was assigned.
	names := map[string]string{}
	owner := map[int32]string{}
	var memberRows, verboseRows []string
	for i, m := range members {
		name := string(rune('A' + i))
		names[m.memberID()] = name
		ps := m.partitions()
		offs := map[int32]kgo.EpochOffset{}
		var list []string
		for _, p := range ps {
			owner[p] = name
			offs[p] = kgo.EpochOffset{Epoch: -1, Offset: int64(p) + 5}
			list = append(list, strconv.Itoa(int(p)))
		}
		var cerr error
		m.cl.CommitOffsetsSync(ctx, map[string]map[int32]kgo.EpochOffset{topic: offs},
			func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
				cerr = err
				if err == nil {
					for _, rt := range resp.Topics {
						for _, rp := range rt.Partitions {
							if rp.ErrorCode != 0 && cerr == nil {
								cerr = fmt.Errorf("partition %d: error code %d", rp.Partition, rp.ErrorCode)
							}
						}
					}
				}
			})
		if cerr != nil {
			t.Fatalf("member %s committing %v: %v", name, offs, cerr)
		}
		assigned := "T:" + strings.Join(list, ",")
		memberRows = append(memberRows, fmt.Sprintf("G %s /127.0.0.1 kgo %d", name, len(ps)))
		verboseRows = append(verboseRows, fmt.Sprintf("G %s /127.0.0.1 kgo %d E %s E %s", name, len(ps), assigned, assigned))
	}
	if len(names) != 2 || len(owner) != partitions {
		t.Fatalf("member ids %v and partition owners %v: want 2 members owning all %d partitions", names, owner, partitions)
	}
	offsetRows := func(members bool) []string {
		var rows []string
		for p := range int32(partitions) {
			who := "- - -"
			if members {
				who = owner[p] + " /127.0.0.1 kgo"
			}
			rows = append(rows, fmt.Sprintf("G T %d %d %d %d %s", p, p+5, perPartition, perPartition-int(p)-5, who))
		}
		return rows
	}
	const (
		offsetsHeader = "GROUP TOPIC PARTITION CURRENT-OFFSET LOG-END-OFFSET LAG CONSUMER-ID HOST CLIENT-ID"
		membersHeader = "GROUP CONSUMER-ID HOST CLIENT-ID #PARTITIONS"
		verboseHeader = membersHeader + " CURRENT-EPOCH CURRENT-ASSIGNMENT TARGET-EPOCH TARGET-ASSIGNMENT"
		stateHeader   = "GROUP COORDINATOR (ID) ASSIGNMENT-STRATEGY STATE #MEMBERS"
		stateVHeader  = "GROUP COORDINATOR (ID) ASSIGNMENT-STRATEGY STATE GROUP-EPOCH TARGET-ASSIGNMENT-EPOCH #MEMBERS"
	)
	noMembers := []string{"Consumer group 'G' has no active members."}
	type view struct {
		args []string
		want toolTable
	}
	check := func(phase string, views []view) {
		t.Helper()
		for _, v := range views {
			if assignor != "uniform" && !slices.Contains(v.args, "--verbose") {
				continue // the other views do not depend on the assignor
			}
			args := append([]string{"--describe", "--group", group}, v.args...)
			r := adminTool(t, tg, consumerGroupCommand, args...)
			got, err := normalizeGroupTool(r, group, topic, tg.Addr(), names)
			slices.Sort(v.want.rows)
			if r.code != 0 || err != nil || got.String() != v.want.String() {
				t.Errorf("%s: kafka-consumer-groups %s on %s: exit %d, %v; normalized:\n%s\nwant:\n%s\n%s",
					phase, strings.Join(args, " "), tg.Name(), r.code, err, got, v.want, r)
				continue
			}
			t.Logf("%s: kafka-consumer-groups %s on %s: as expected:\n%s", phase, strings.Join(v.args, " "), tg.Name(), got)
		}
	}
	check("two members", []view{
		{nil, toolTable{header: offsetsHeader, rows: offsetRows(true)}},
		{[]string{"--members"}, toolTable{header: membersHeader, rows: memberRows}},
		{[]string{"--members", "--verbose"}, toolTable{header: verboseHeader, rows: verboseRows}},
		{[]string{"--state"}, toolTable{header: stateHeader, rows: []string{"G ADDR (1) " + assignor + " Stable 2"}}},
		{[]string{"--state", "--verbose"}, toolTable{header: stateVHeader, rows: []string{"G ADDR (1) " + assignor + " Stable E E 2"}}},
	})

	for i, m := range members {
		m.stop()
		members[i] = nil
	}
	check("after both left", []view{
		{nil, toolTable{header: offsetsHeader, rows: offsetRows(false), remarks: noMembers}},
		{[]string{"--members", "--verbose"}, toolTable{header: verboseHeader, remarks: noMembers}},
		// An empty group names the default assignor, whatever its members
		// chose (Kafka 4.4 as kiggy).
		{[]string{"--state", "--verbose"}, toolTable{header: stateVHeader, rows: []string{"G ADDR (1) uniform Empty E E 0"}, remarks: noMembers}},
	})
}
