package iggytest

import (
	"encoding/binary"
	"net"
	"strconv"
	"time"

	"github.com/kiggy-io/kiggy/bridge/iggy/proto"
)

// Cluster is N iggytest nodes on loopback that act as an Iggy 0.9 VSR
// cluster does towards a client (docs/IGGY.md, "Iggy clusters"; server
// core/server/src/cluster_meta.rs and dispatch.rs):
//
//   - one node is the primary: node view mod N, as the server derives it;
//   - every node serves logins (a backup forwards them to the primary, so
//     while no primary is alive a login answers 58 TransientNotAccepted) and
//     reads, from the shared store;
//   - a backup answers every metadata write and partition write (SendMessages,
//     consumer offsets) with 58 TransientNotAccepted;
//   - GetClusterMetadata lists every node, each Healthy, the primary of the
//     current view as Leader — also while that primary is dead and the view
//     has not changed yet, as the server's roster does;
//   - when the primary is killed, the view moves to the next live node after
//     ElectionDelay (the server's heartbeat timeout, 5 s by default there).
//
// Every committed operation is on every node (one store shared by all), so
// killing a node loses nothing that was acknowledged.
type Cluster struct {
	// ElectionDelay is how long the survivors take to elect a new primary
	// after the primary dies (set before Kill).
	ElectionDelay time.Duration

	nodes  []*Server
	addrs  []string // each node's address, kept across restarts
	view   uint64   // guarded by data.mu
	alive  []bool   // guarded by data.mu
	shared *data

	// Partitions whose own primary is set apart from the metadata primary,
	// and the partition reads each node served. Guarded by data.mu.
	partPrimary map[partRef]int
	partReads   map[nodePart]int
	reads       map[nodeCode]int
	refusals    []int // writes each node answered 58
}

type nodeCode struct {
	node int
	code uint32
}

// partRef names a partition by topic name and Iggy partition id.
type partRef struct {
	topic     string
	partition uint32
}

type nodePart struct {
	node int
	partRef
}

// NewCluster returns a cluster of n ≥ 1 nodes sharing one store, not yet
// listening.
func NewCluster(n int, cfg Config) *Cluster {
	c := &Cluster{ElectionDelay: 500 * time.Millisecond}
	first := New(cfg)
	c.shared = first.data
	c.shared.cluster = c
	for i := range n {
		s := first
		if i > 0 {
			s = New(cfg)
			s.data = c.shared
		}
		s.id = i
		c.nodes = append(c.nodes, s)
	}
	c.addrs = make([]string, n)
	c.refusals = make([]int, n)
	c.alive = make([]bool, n)
	return c
}

// Start starts every node on a free loopback port.
func (c *Cluster) Start() error {
	for i := range c.nodes {
		if err := c.Restart(i); err != nil {
			c.Close()
			return err
		}
	}
	return nil
}

// Node returns node i.
func (c *Cluster) Node(i int) *Server { return c.nodes[i] }

// Addr returns node i's address (also while it is down).
func (c *Cluster) Addr(i int) string { return c.addrs[i] }

// Addrs returns every node's address.
func (c *Cluster) Addrs() []string { return append([]string(nil), c.addrs...) }

// Primary returns the index of the current view's primary.
func (c *Cluster) Primary() int {
	c.shared.mu.Lock()
	defer c.shared.mu.Unlock()
	return c.primaryLocked()
}

func (c *Cluster) primaryLocked() int { return int(c.view % uint64(len(c.nodes))) }

// Kill stops node i at once, as SIGKILL would. When it was the primary, the
// live nodes elect the next live one after ElectionDelay.
func (c *Cluster) Kill(i int) {
	c.nodes[i].stop()
	c.shared.mu.Lock()
	defer c.shared.mu.Unlock()
	c.alive[i] = false
	if c.primaryLocked() == i {
		time.AfterFunc(c.ElectionDelay, c.elect)
	}
}

// elect moves the view to the next live node, if the primary is still dead.
func (c *Cluster) elect() {
	c.shared.mu.Lock()
	defer c.shared.mu.Unlock()
	if c.alive[c.primaryLocked()] {
		return
	}
	for range c.nodes {
		c.view++
		if c.alive[c.primaryLocked()] {
			return
		}
	}
}

// MoveView moves the view to the next live node at once while the old
// primary stays up, as a view change the old primary survives: it answers
// writes with 58 from then on, like any backup.
func (c *Cluster) MoveView() {
	c.shared.mu.Lock()
	defer c.shared.mu.Unlock()
	for range c.nodes {
		c.view++
		if c.alive[c.primaryLocked()] {
			return
		}
	}
}

// Restart starts node i again on its address (a free port the first time);
// it rejoins as a backup of the current view.
func (c *Cluster) Restart(i int) error {
	addr := c.addrs[i]
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	a, err := c.nodes[i].Start(addr)
	if err != nil {
		return err
	}
	c.shared.mu.Lock()
	defer c.shared.mu.Unlock()
	c.addrs[i] = a.String()
	c.alive[i] = true
	return nil
}

// Close stops every node.
func (c *Cluster) Close() {
	for i := range c.nodes {
		c.Kill(i)
	}
}

// SetPartitionPrimary makes node the primary of topic's partition, apart
// from the metadata primary, as an Iggy 0.9 cluster whose partition planes
// are in another view than its metadata plane (docs/IGGY.md, "Iggy
// clusters"): from now on only node takes that partition's writes
// (SendMessages, Store/DeleteConsumerOffset, by topic name); every other
// node, the metadata primary included, answers them 58 TransientNotAccepted.
// A negative node gives the partition back to the metadata primary.
func (c *Cluster) SetPartitionPrimary(topic string, partition, node int) {
	c.shared.mu.Lock()
	defer c.shared.mu.Unlock()
	k := partRef{topic, uint32(partition)}
	if node < 0 {
		delete(c.partPrimary, k)
		return
	}
	if c.partPrimary == nil {
		c.partPrimary = map[partRef]int{}
	}
	c.partPrimary[k] = node
}

// PartitionReads returns how many PollMessages and GetConsumerOffset
// requests for topic's partition node has served.
func (c *Cluster) PartitionReads(node int, topic string, partition int) int {
	c.shared.mu.Lock()
	defer c.shared.mu.Unlock()
	return c.partReads[nodePart{node, partRef{topic, uint32(partition)}}]
}

// Refusals returns how many writes node answered 58 TransientNotAccepted.
func (c *Cluster) Refusals(node int) int {
	c.shared.mu.Lock()
	defer c.shared.mu.Unlock()
	return c.refusals[node]
}

// Reads returns how many reads (non-replicated requests) with command code
// node has served.
func (c *Cluster) Reads(node int, code uint32) int {
	c.shared.mu.Lock()
	defer c.shared.mu.Unlock()
	return c.reads[nodeCode{node, code}]
}

// countPartitionRead counts every read a cluster node serves, and each
// partition read (PollMessages, GetConsumerOffset) by partition. Callers
// hold s.mu.
func (s *Server) countPartitionRead(code uint32, body []byte) {
	c := s.cluster
	if c == nil {
		return
	}
	if c.reads == nil {
		c.reads = map[nodeCode]int{}
	}
	c.reads[nodeCode{s.id, code}]++
	if code != proto.CodePollMessages && code != proto.CodeGetConsumerOffset {
		return
	}
	k, ok := consumerPartition(body)
	if !ok {
		return
	}
	if c.partReads == nil {
		c.partReads = map[nodePart]int{}
	}
	c.partReads[nodePart{s.id, k}]++
}

// consumerPartition reads the [consumer kind][consumer id][stream id][topic
// id][partition flag u8][partition u32] prefix of PollMessages and the
// consumer-offset requests; only a topic named by string is returned.
func consumerPartition(body []byte) (partRef, bool) {
	r := proto.NewReader(body)
	r.U8()
	r.Identifier()
	r.Identifier()
	tid := r.Identifier()
	flag, pid := r.U8(), r.U32()
	if !r.Ok() || tid.Kind != proto.IDString || flag != 1 {
		return partRef{}, false
	}
	return partRef{string(tid.Name), pid}, true
}

// sendPartition reads the [metadata_length u32][stream id][topic
// id][partitioning kind u8, length u8, partition u32] prefix of SendMessages.
func sendPartition(body []byte) (partRef, bool) {
	r := proto.NewReader(body)
	r.U32()
	r.Identifier()
	tid := r.Identifier()
	kind, n, pid := r.U8(), r.U8(), r.U32()
	if !r.Ok() || tid.Kind != proto.IDString || kind != proto.PartitionID || n != 4 {
		return partRef{}, false
	}
	return partRef{string(tid.Name), pid}, true
}

// acceptsWrite reports whether s takes a write of operation op: a partition
// write whose partition has a primary of its own only on that node (if it
// is alive), any other write as acceptsWrites. Callers hold s.mu.
func (s *Server) acceptsWrite(op uint8, body []byte) bool {
	c := s.cluster
	if c == nil || len(c.partPrimary) == 0 || !proto.IsPartition(op) {
		return s.acceptsWrites()
	}
	var k partRef
	var ok bool
	if op == proto.OpSendMessages {
		k, ok = sendPartition(body)
	} else {
		k, ok = consumerPartition(body)
	}
	if !ok {
		return s.acceptsWrites()
	}
	node, set := c.partPrimary[k]
	if !set {
		return s.acceptsWrites()
	}
	return node == s.id && c.alive[s.id]
}

// acceptsWrites reports whether s takes writes: a single server always, a
// cluster node when it is the current view's primary. Callers hold s.mu.
func (s *Server) acceptsWrites() bool {
	c := s.cluster
	return c == nil || c.primaryLocked() == s.id && c.alive[s.id]
}

// primaryAlive reports whether some node can take writes (and so verify a
// login a backup forwards). Callers hold s.mu.
func (s *Server) primaryAlive() bool {
	c := s.cluster
	return c == nil || c.alive[c.primaryLocked()]
}

// appendClusterMetadata appends a GetClusterMetadata reply (server
// binary_protocol responses/system/get_cluster_metadata.rs). Callers hold
// s.mu.
func (s *Server) appendClusterMetadata(b []byte, d proto.Dialect, port uint16) []byte {
	c := s.cluster
	if c == nil {
		// A single node that is its own leader (cluster_meta.rs self_metadata).
		b = proto.AppendLongString(b, "single-node")
		b = proto.AppendU32(b, 1)
		return appendNode(b, d, 0, "iggy-node", port, true)
	}
	b = proto.AppendLongString(b, "iggytest-cluster")
	b = proto.AppendU32(b, uint32(len(c.nodes)))
	for i := range c.nodes {
		_, ps, _ := net.SplitHostPort(c.addrs[i])
		p, _ := strconv.Atoi(ps)
		b = appendNode(b, d, uint8(i), "node-"+strconv.Itoa(i), uint16(p), i == c.primaryLocked())
	}
	return b
}

// appendNode appends a ClusterNode; 0.12 (§9) opens it with the replica id.
func appendNode(b []byte, d proto.Dialect, replica uint8, name string, tcp uint16, leader bool) []byte {
	if d == proto.Dialect012 {
		b = append(b, replica)
	}
	b = proto.AppendLongString(b, name)
	b = proto.AppendLongString(b, "127.0.0.1")
	b = binary.LittleEndian.AppendUint16(b, tcp)
	b = append(b, 0, 0, 0, 0, 0, 0) // quic, http, websocket ports
	role := byte(1)                 // Follower
	if leader {
		role = 0 // Leader
	}
	return append(b, role, 0) // status Healthy
}
