package bridge

import (
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"github.com/kiggy-io/kiggy/bridge/group"
	"github.com/kiggy-io/kiggy/bridge/producer"
	"github.com/kiggy-io/kiggy/bridge/store"
	"github.com/kiggy-io/kiggy/internal/metric"
	"github.com/kiggy-io/kiggy/wire"
)

// metrics are the gateway's counters: fixed arrays of atomics indexed by API
// key and error code, resolved at compile time, so counting costs one atomic
// add and never a map or label lookup on the hot path.
type metrics struct {
	requests      [maxAPIKey][maxAPIVersion]atomic.Uint64
	errors        [maxAPIKey]errorCounts
	recordsIn     atomic.Uint64
	recordsOut    atomic.Uint64
	budgetRejects atomic.Uint64
	decodeWaits   atomic.Uint64
	// appendTrips: log appends Produce made (one per round trip through a
	// partition's queue, coalesce.go); coalescedAppends: partition entries
	// that shared a round trip with an earlier one; roundWaits: partition
	// entries that waited for their partition's running round and then led
	// the next; producerFollows: idempotent batches sent in the round trip
	// of their producer's previous batch (checkInRound).
	appendTrips      atomic.Uint64
	coalescedAppends atomic.Uint64
	roundWaits       atomic.Uint64
	producerFollows  atomic.Uint64
	// connRoundWaits: rounds whose head waited for a token of its
	// connection's (maxConnRounds).
	connRoundWaits atomic.Uint64
	// producerSettles, producerSettleFailures: partitions settled, or
	// found unsettleable, before a window rebuild that followed an append
	// whose outcome was unknown (rebuildProducers).
	producerSettles        atomic.Uint64
	producerSettleFailures atomic.Uint64
	// pipelinedProduces: Produce requests started while an earlier request
	// of their connection was running (pipeline.go).
	pipelinedProduces atomic.Uint64
	// handedOffReads: partition reads of a Fetch run on a reader
	// goroutine (fetch.go, readAll); the others ran on the Fetch's own.
	handedOffReads atomic.Uint64
	parkedFetches  atomic.Int64
	// txnMarkers: transaction markers appended (transactions.go).
	txnMarkers atomic.Uint64
	// stableRereads: read_committed partition reads done again because a
	// transaction opened below where they ended (readPartition).
	stableRereads atomic.Uint64
	// abortedRelists: read_committed partition reads whose aborted
	// transactions were listed again after the read (fetchPartition).
	abortedRelists atomic.Uint64
	latency        [maxAPIKey]metric.Histogram
	panics         [maxAPIKey]atomic.Uint64 // handler panics recovered (panics.go)
	denials        [maxAPIKey]atomic.Uint64 // authorization denials (acl.go)
}

// countDenied counts one authorization check an API's request failed.
func (m *metrics) countDenied(k wire.APIKey) {
	if k >= 0 && int(k) < maxAPIKey {
		m.denials[k].Add(1)
	}
}

// observe records a served request's latency, from the gateway's first look
// at it to its completion.
func (g *Gateway) observe(c *call) {
	if k := c.hdr.APIKey; k >= 0 && int(k) < maxAPIKey {
		g.metrics.latency[k].Observe(time.Since(c.start))
	}
}

// maxAPIVersion bounds the per-version request counters; the header parser
// has already refused versions outside wire.APIs, all far below it.
const maxAPIVersion = 32

// countRequest counts a request about to be served.
func (m *metrics) countRequest(k wire.APIKey, v int16) {
	if k >= 0 && int(k) < maxAPIKey && v >= 0 && int(v) < maxAPIVersion {
		m.requests[k][v].Add(1)
	}
}

// totalRequests sums the request counters (for the janitor's idle test).
func (m *metrics) totalRequests() uint64 {
	var n uint64
	for k := range m.requests {
		for v := range m.requests[k] {
			n += m.requests[k][v].Load()
		}
	}
	return n
}

// maxErrorCode bounds the per-code counters (see errorSlot).
const maxErrorCode = 130

// errorSlot maps an error code to its counter; codes outside the table
// share slot 0, which an error never uses (0 is NONE) and which WriteMetrics
// names UNKNOWN_SERVER_ERROR.
func errorSlot(c wire.ErrorCode) int {
	if c <= 0 || int(c) >= maxErrorCode {
		return 0
	}
	return int(c)
}

// errorCounts counts one API's answered error codes by code; a pointer to
// it is the wire.ErrorCounter a response reports to.
type errorCounts [maxErrorCode]atomic.Uint64

// CountError counts one element of a response that carried code.
func (e *errorCounts) CountError(code wire.ErrorCode) {
	if code != wire.NoError {
		e[errorSlot(code)].Add(1)
	}
}

// errorCounter is where the call's response reports its error codes: the
// counters of its API. The header parser admits only known keys, so the
// discarding fallback is a guard, not a path.
func (g *Gateway) errorCounter(c *call) wire.ErrorCounter {
	if k := c.hdr.APIKey; k >= 0 && int(k) < maxAPIKey {
		return &g.metrics.errors[k]
	}
	return discardErrors{}
}

// discardErrors is an ErrorCounter that counts nothing.
type discardErrors struct{}

// CountError implements wire.ErrorCounter.
func (discardErrors) CountError(wire.ErrorCode) {}

// writeErrors writes the per-API, per-code error counters.
func writeErrors(w io.Writer, errs *[maxAPIKey]errorCounts) {
	const name = "kiggy_api_errors_total"
	metric.Header(w, name, "counter", "Error codes answered, by Kafka API and code: one per response, topic, partition, group, member or resource that carried one.")
	for k := range errs {
		for c := range errs[k] {
			if n := errs[k][c].Load(); n > 0 {
				code := wire.ErrorCode(c)
				if c == 0 {
					code = wire.UnknownServerError
				}
				fmt.Fprintf(w, "%s{api=%q,code=%q} %d\n", name, wire.APIKey(k).String(), code.String(), n)
			}
		}
	}
}

// WriteMetrics writes the gateway's counters in Prometheus text format.
func (g *Gateway) WriteMetrics(w io.Writer) {
	m := &g.metrics
	metric.Header(w, "kiggy_api_requests_total", "counter", "Requests served, by Kafka API and version.")
	for k := range m.requests {
		for v := range m.requests[k] {
			if n := m.requests[k][v].Load(); n > 0 {
				fmt.Fprintf(w, "kiggy_api_requests_total{api=%q,version=\"%d\"} %d\n", wire.APIKey(k).String(), v, n)
			}
		}
	}
	fmt.Fprintf(w, "# HELP kiggy_request_duration_seconds Request latency inside the gateway, by Kafka API.\n# TYPE kiggy_request_duration_seconds histogram\n")
	for k := range m.latency {
		m.latency[k].Write(w, "kiggy_request_duration_seconds", "api", wire.APIKey(k).String())
	}
	writeErrors(w, &m.errors)
	fmt.Fprintf(w, "# HELP kiggy_records_produced_total Records appended.\n# TYPE kiggy_records_produced_total counter\nkiggy_records_produced_total %d\n", m.recordsIn.Load())
	fmt.Fprintf(w, "# HELP kiggy_records_fetched_total Records served by Fetch.\n# TYPE kiggy_records_fetched_total counter\nkiggy_records_fetched_total %d\n", m.recordsOut.Load())
	fmt.Fprintf(w, "# HELP kiggy_decode_budget_rejections_total Produce partitions refused by the decode budget.\n# TYPE kiggy_decode_budget_rejections_total counter\nkiggy_decode_budget_rejections_total %d\n", m.budgetRejects.Load())
	g.writeTxnMetrics(w)
	g.writeGroupMetrics(w)
	metric.Single(w, "kiggy_decode_waits_total", "counter", "Compressed batches that waited for a decode slot (--max-concurrent-decodes).", m.decodeWaits.Load())
	metric.Single(w, "kiggy_produce_appends_total", "counter", "Appends Produce sent to the backend through the partition queues (one round trip each).", m.appendTrips.Load())
	metric.Single(w, "kiggy_produce_coalesced_total", "counter", "Produce partition entries appended in the same round trip as an earlier one (coalesced).", m.coalescedAppends.Load())
	metric.Single(w, "kiggy_produce_connection_round_waits_total", "counter", "Append round trips that waited because their connection's Produces had 16 running (a Produce of many partitions sends them 16 at a time; other clients' appends keep sessions of the backend).", m.connRoundWaits.Load())
	metric.Single(w, "kiggy_produce_round_waits_total", "counter", "Produce partition entries that found a round trip of their partition running, waited for it and then led the next.", m.roundWaits.Load())
	metric.Single(w, "kiggy_produce_followed_in_round_total", "counter", "Idempotent batches sent in the same round trip as their producer's previous batch of the partition, next in its sequence.", m.producerFollows.Load())
	metric.Single(w, "kiggy_produce_pipelined_total", "counter", "Produce requests started while an earlier Produce of their connection was waiting for its appends (pipelined).", m.pipelinedProduces.Load())
	metric.Single(w, "kiggy_fetch_reads_handed_off_total", "counter", "Partition reads of Fetches run on a reader goroutine beside the Fetch's own, because they needed a round trip to the backend.", m.handedOffReads.Load())
	metric.Header(w, "kiggy_handler_panics_total", "counter", "Handler panics recovered, by Kafka API; each closed its connection.")
	for k := range m.panics {
		if n := m.panics[k].Load(); n > 0 {
			fmt.Fprintf(w, "kiggy_handler_panics_total{api=%q} %d\n", wire.APIKey(k).String(), n)
		}
	}
	metric.Header(w, "kiggy_authorization_denials_total", "counter", "Authorization checks denied, by Kafka API (one per topic, group or cluster check that failed).")
	for k := range m.denials {
		if n := m.denials[k].Load(); n > 0 {
			fmt.Fprintf(w, "kiggy_authorization_denials_total{api=%q} %d\n", wire.APIKey(k).String(), n)
		}
	}
	fmt.Fprintf(w, "# HELP kiggy_fetches_parked Fetch requests parked in a long poll now.\n# TYPE kiggy_fetches_parked gauge\nkiggy_fetches_parked %d\n", m.parkedFetches.Load())
	ps := &g.producers
	metric.Single(w, "kiggy_idempotent_producers", "gauge", "Idempotent producer states held, one per producer id and partition.", ps.stats.Producers.Load())
	metric.Single(w, "kiggy_idempotent_duplicate_batches_total", "counter", "Idempotent batches answered as duplicates of a stored batch (nothing stored again).", ps.stats.Duplicates.Load())
	metric.Single(w, "kiggy_idempotent_producers_expired_total", "counter", "Producer states dropped after the producer id expiration without appends.", ps.stats.Expired.Load())
	metric.Single(w, "kiggy_idempotent_window_rebuilds_total", "counter", "Partition producer windows rebuilt from the producer stamps in the log tail.", ps.stats.Rebuilds.Load())
	metric.Single(w, "kiggy_idempotent_partition_settles_total", "counter", "Partitions settled (every write in flight at the backend decided and visible) before a window rebuild that followed an append whose outcome was unknown.", m.producerSettles.Load())
	metric.Single(w, "kiggy_idempotent_partition_settle_failures_total", "counter", "Window rebuilds refused because the partition could not be settled (no node took the settling write: NOT_LEADER_OR_FOLLOWER, retried by the producer).", m.producerSettleFailures.Load())
	metric.Header(w, "kiggy_producer_ids_refused_total", "counter", "Idempotent batches refused a new producer state, by reason: never_issued (an id InitProducerId never handed out; UNKNOWN_PRODUCER_ID), limit (--max-producer-states), principal_limit (--max-producer-states-per-principal; both THROTTLING_QUOTA_EXCEEDED).")
	for _, r := range producer.Reasons() {
		fmt.Fprintf(w, "kiggy_producer_ids_refused_total{reason=%q} %d\n", r.String(), ps.limits.Refused(r))
	}
	metric.Header(w, "kiggy_topics_auto_create_refused_total", "counter", "Metadata auto-creations refused, by reason: limit (--auto-create-topics-limit topics in the log), max_partitions (--max-partitions partitions in the log), backend_limit (the backend holds all the topics it can: Iggy's 4,096 a stream); all UNKNOWN_TOPIC_OR_PARTITION.")
	fmt.Fprintf(w, "kiggy_topics_auto_create_refused_total{reason=\"limit\"} %d\n", g.creation.autoRefused.Load())
	fmt.Fprintf(w, "kiggy_topics_auto_create_refused_total{reason=\"max_partitions\"} %d\n", g.creation.autoPartRefused.Load())
	fmt.Fprintf(w, "kiggy_topics_auto_create_refused_total{reason=\"backend_limit\"} %d\n", g.creation.backendRefused.Load())
	metric.Single(w, "kiggy_partitions", "gauge", "Partitions in the log as --max-partitions counts them: the backend's last listing plus those created since (0 with no cap).", g.creation.heldGauge.Load())
	metric.Header(w, "kiggy_admin_refused_total", "counter", "Creations by authorized admin requests refused by a cap, by reason: max_partitions (CreateTopics and CreatePartitions past --max-partitions), max_acls (CreateAcls past --max-acls), max_scram_credentials (AlterUserScramCredentials past --max-scram-credentials), max_client_quota_entities (AlterClientQuotas past --max-client-quota-entities); all POLICY_VIOLATION.")
	fmt.Fprintf(w, "kiggy_admin_refused_total{reason=\"max_partitions\"} %d\n", g.creation.adminRefused.Load())
	fmt.Fprintf(w, "kiggy_admin_refused_total{reason=\"max_acls\"} %d\n", g.adminRefused.acls.Load())
	fmt.Fprintf(w, "kiggy_admin_refused_total{reason=\"max_scram_credentials\"} %d\n", g.adminRefused.scram.Load())
	fmt.Fprintf(w, "kiggy_admin_refused_total{reason=\"max_client_quota_entities\"} %d\n", g.adminRefused.quotas.Load())
	gst := g.groups.Stats()
	metric.Single(w, "kiggy_groups", "gauge", "Consumer groups the coordinator holds (--max-groups).", gst.Groups)
	metric.Single(w, "kiggy_group_members", "gauge", "Members of all consumer groups, with member ids handed out by MEMBER_ID_REQUIRED and not yet used (--max-group-members).", gst.Members)
	metric.Single(w, "kiggy_groups_evicted_total", "counter", "Empty groups holding no offsets dropped to make room for a new group at --max-groups.", gst.Evicted)
	metric.Header(w, "kiggy_groups_refused_total", "counter", "JoinGroup, ConsumerGroupHeartbeat and OffsetCommit requests refused by a group cap, by reason: group_max_size (--group-max-size; GROUP_MAX_SIZE_REACHED), max_members (--max-group-members), max_groups (--max-groups; both COORDINATOR_NOT_AVAILABLE).")
	for _, r := range group.RefuseReasons() {
		fmt.Fprintf(w, "kiggy_groups_refused_total{reason=%q} %d\n", r.String(), gst.Refused[r])
	}
	qs := g.quotas.Stats()
	metric.Single(w, "kiggy_quota_clients", "gauge", "Clients (user, client id) metered one by one for the request quota (--quota-request-percentage); 0 without a quota.", qs.Clients)
	metric.Single(w, "kiggy_quota_throttles_total", "counter", "Requests of a client over its request quota: each is answered with throttle_time_ms and mutes its connection for that long.", qs.Throttles)
	metric.Single(w, "kiggy_quota_throttle_seconds_total", "counter", "The throttle time of kiggy_quota_throttles_total, summed.", qs.ThrottleTime.Seconds())
	pbs, fbs := g.produceBytes.Stats(), g.fetchBytes.Stats()
	metric.Single(w, "kiggy_quota_produce_throttles_total", "counter", "Produce requests of a client over its producer byte rate (--quota-producer-byte-rate): answered with throttle_time_ms, the connection muted for it.", pbs.Throttles)
	metric.Single(w, "kiggy_quota_fetch_throttles_total", "counter", "Consumer Fetches of a client over its consumer byte rate (--quota-consumer-byte-rate): answered at once with no partitions and throttle_time_ms, the connection muted for it.", fbs.Throttles)
	ms := g.mutations.Stats()
	metric.Single(w, "kiggy_quota_controller_mutation_clients", "gauge", "Clients (user, client id) whose controller mutation quota bucket (--quota-controller-mutation-rate) is not full; 0 without a quota.", ms.Clients)
	metric.Single(w, "kiggy_quota_controller_mutation_rejections_total", "counter", "Topics of CreateTopics, CreatePartitions and DeleteTopics refused with THROTTLING_QUOTA_EXCEEDED by the controller mutation quota.", ms.Rejections)
	g.writeSASLMetrics(w)
	g.fetchCache.WriteMetrics(w)
	g.fetchSessions.WriteMetrics(w)
	if mw, ok := g.store.(store.MetricsWriter); ok {
		mw.WriteMetrics(w)
	}
	if mw, ok := g.cfg.Placement.(store.MetricsWriter); ok {
		mw.WriteMetrics(w) // docs/design/cluster.md §7
	}
}
