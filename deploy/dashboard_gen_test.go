package deploy

// The Grafana dashboard grafana/kiggy-dashboard.json is generated from the
// panels below, so that every query is written once, with the same label
// selector, and the layout needs no hand-kept coordinates:
//
//	KIGGY_UPDATE_DASHBOARD=1 go test -run TestDashboardGenerated ./deploy/
//
// rewrites it; without the variable the test fails when the file and this
// definition disagree. TestDashboardLive runs every query against a real
// Prometheus scraping live kiggy processes.

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"
)

const dashboardFile = "grafana/kiggy-dashboard.json"

// sel is the label selector every query carries: the dashboard's job and
// instance variables.
const sel = `job=~"$job", instance=~"$instance"`

// dashTarget is one query of a panel.
type dashTarget struct {
	expr   string // PromQL; %s stands for sel
	legend string
	// live: under the test's load the query must show a finite non-zero
	// value at some step, not only a series (TestDashboardLive).
	live bool
}

// dashPanel is one panel.
type dashPanel struct {
	title, desc string
	unit        string
	stat        bool // a stat panel (the last value) instead of a time series
	width       int  // of 24 columns; 8 when 0
	targets     []dashTarget
}

// dashRow is a row of panels.
type dashRow struct {
	title  string
	panels []dashPanel
}

func q(expr string) string { return strings.ReplaceAll(expr, "%s", sel) }

func t1(expr, legend string) dashTarget { return dashTarget{expr: q(expr), legend: legend} }

func live(expr, legend string) dashTarget {
	return dashTarget{expr: q(expr), legend: legend, live: true}
}

// dashboardRows is the dashboard. Every series named here is in
// docs/METRICS.md (TestDashboardStructure).
var dashboardRows = []dashRow{
	{"Overview", []dashPanel{
		{title: "Instances up", unit: "none", stat: true, width: 6, desc: "kiggy processes Prometheus scraped successfully.",
			targets: []dashTarget{t1(`sum(up{%s})`, "up")}},
		{title: "Uptime", unit: "s", stat: true, width: 6, desc: "Seconds since each instance started.",
			targets: []dashTarget{live(`kiggy_uptime_seconds{%s}`, "{{instance}}")}},
		{title: "Client connections open", unit: "none", stat: true, width: 6,
			targets: []dashTarget{live(`sum(kiggy_connections_open{%s})`, "open")}},
		{title: "Iggy primary unknown", unit: "none", stat: true, width: 6, desc: "1 while the Iggy client looks for a primary (/readyz is then not ready). Iggy backend only.",
			targets: []dashTarget{t1(`max(kiggy_iggy_primary_unknown{%s})`, "unknown")}},
	}},
	{"Throughput", []dashPanel{
		{title: "Records", unit: "rps", desc: "Records appended to the backend by Produce, and records served by Fetch, per second.",
			targets: []dashTarget{
				live(`sum by (instance) (rate(kiggy_records_produced_total{%s}[$__rate_interval]))`, "produced {{instance}}"),
				live(`sum by (instance) (rate(kiggy_records_fetched_total{%s}[$__rate_interval]))`, "fetched {{instance}}"),
			}},
		{title: "Bytes", unit: "Bps", desc: "Bytes read from and written to Kafka clients per second (Produce bytes are most of what is read, Fetch bytes most of what is written).",
			targets: []dashTarget{
				live(`sum by (instance) (rate(kiggy_bytes_in_total{%s}[$__rate_interval]))`, "in {{instance}}"),
				live(`sum by (instance) (rate(kiggy_bytes_out_total{%s}[$__rate_interval]))`, "out {{instance}}"),
			}},
		{title: "Requests by API", unit: "reqps",
			targets: []dashTarget{live(`sum by (api) (rate(kiggy_api_requests_total{%s}[$__rate_interval]))`, "{{api}}")}},
		{title: "Iggy appends", unit: "ops", desc: "SendMessages round trips Produce made, partition entries that shared an earlier one's round trip (among them, idempotent batches next in sequence after their producer's batch in the round), and those that waited for their partition's running round before leading the next. Iggy backend only.",
			targets: []dashTarget{
				live(`sum(rate(kiggy_produce_appends_total{%s}[$__rate_interval]))`, "appends"),
				t1(`sum(rate(kiggy_produce_coalesced_total{%s}[$__rate_interval]))`, "coalesced"),
				t1(`sum(rate(kiggy_produce_followed_in_round_total{%s}[$__rate_interval]))`, "a producer's next batch"),
				t1(`sum(rate(kiggy_produce_round_waits_total{%s}[$__rate_interval]))`, "waited for a round"),
			}},
		{title: "Fetches parked", unit: "none", desc: "Fetch requests waiting in a long poll now.",
			targets: []dashTarget{t1(`sum by (instance) (kiggy_fetches_parked{%s})`, "{{instance}}")}},
		{title: "Compressed batches", unit: "ops", desc: "Batches that waited for a decode slot, and Produce partitions refused at the decode budget.",
			targets: []dashTarget{
				t1(`sum(rate(kiggy_decode_waits_total{%s}[$__rate_interval]))`, "waited for a slot"),
				t1(`sum(rate(kiggy_decode_budget_rejections_total{%s}[$__rate_interval]))`, "refused at the budget"),
			}},
	}},
	{"Latency", []dashPanel{
		{title: "Request latency p50 by API", unit: "s", width: 12, desc: "Time inside the gateway from parsing to response; a Fetch's long-poll wait is included.",
			targets: []dashTarget{live(`histogram_quantile(0.5, sum by (api, le) (rate(kiggy_request_duration_seconds_bucket{%s}[$__rate_interval])))`, "{{api}}")}},
		{title: "Request latency p99 by API", unit: "s", width: 12, desc: "Time inside the gateway from parsing to response; a Fetch's long-poll wait is included.",
			targets: []dashTarget{live(`histogram_quantile(0.99, sum by (api, le) (rate(kiggy_request_duration_seconds_bucket{%s}[$__rate_interval])))`, "{{api}}")}},
		{title: "Iggy request latency p99 by command", unit: "s", width: 12, desc: "From send to reply, transient replays included. Iggy backend only.",
			targets: []dashTarget{live(`histogram_quantile(0.99, sum by (command, le) (rate(kiggy_iggy_request_duration_seconds_bucket{%s}[$__rate_interval])))`, "{{command}}")}},
		{title: "Iggy failover duration p99", unit: "s", width: 12, desc: "From the primary's first failure to the sessions' move to the new primary; empty until a failover.",
			targets: []dashTarget{t1(`histogram_quantile(0.99, sum by (le) (rate(kiggy_iggy_failover_duration_seconds_bucket{%s}[$__rate_interval])))`, "p99")}},
	}},
	{"Errors", []dashPanel{
		{title: "Errors by API and code", unit: "ops", width: 12, desc: "Kafka error codes answered, one per response part that carried one (NONE not counted).",
			targets: []dashTarget{live(`sum by (api, code) (rate(kiggy_api_errors_total{%s}[$__rate_interval]))`, "{{api}} {{code}}")}},
		{title: "Produce error ratio", unit: "percentunit", width: 12, desc: "Produce error codes per Produce request (0 while kiggy has answered none, whose series then does not exist yet).",
			targets: []dashTarget{live(`(sum(rate(kiggy_api_errors_total{%s, api="Produce"}[$__rate_interval])) or 0 * sum(rate(kiggy_api_requests_total{%s, api="Produce"}[$__rate_interval]))) / clamp_min(sum(rate(kiggy_api_requests_total{%s, api="Produce"}[$__rate_interval])), 1e-9)`, "errors / requests")}},
		{title: "Iggy request errors by command and kind", unit: "ops",
			targets: []dashTarget{t1(`sum by (command, kind) (rate(kiggy_iggy_request_errors_total{%s}[$__rate_interval]))`, "{{command}} {{kind}}")}},
		{title: "SASL authentications", unit: "ops", desc: "By mechanism and outcome; a failure is also logged with the user name.",
			targets: []dashTarget{live(`sum by (mechanism, outcome) (rate(kiggy_sasl_authentications_total{%s}[$__rate_interval]))`, "{{mechanism}} {{outcome}}")}},
		{title: "SASL gate closes and re-authentications", unit: "ops",
			targets: []dashTarget{
				t1(`sum by (reason) (rate(kiggy_sasl_connections_closed_total{%s}[$__rate_interval]))`, "closed: {{reason}}"),
				t1(`sum(rate(kiggy_sasl_reauthentications_total{%s}[$__rate_interval]))`, "re-authenticated"),
			}},
		{title: "Authorization denials by API", unit: "ops", desc: "ACL checks denied (--acl-enabled).",
			targets: []dashTarget{live(`sum by (api) (rate(kiggy_authorization_denials_total{%s}[$__rate_interval]))`, "{{api}}")}},
		{title: "Handler panics by API", unit: "none", desc: "Panics recovered in handler code: a bug (the log has the stack). Empty while there has been none.",
			targets: []dashTarget{t1(`sum by (api) (increase(kiggy_handler_panics_total{%s}[$__rate_interval]))`, "{{api}}")}},
		{title: "Idempotent batches refused", unit: "ops", desc: "Batches that would create a producer state: never_issued, limit, principal_limit.",
			targets: []dashTarget{t1(`sum by (reason) (rate(kiggy_producer_ids_refused_total{%s}[$__rate_interval]))`, "{{reason}}")}},
	}},
	{"Consumer groups", []dashPanel{
		{title: "Groups by type and state", unit: "none", width: 8, desc: "Groups this instance coordinates: classic, and consumer (KIP-848) groups.",
			targets: []dashTarget{t1(`sum by (type, state) (kiggy_groups_by_state{%s})`, "{{type}} {{state}}")}},
		{title: "Groups and members held", unit: "none", width: 8, desc: "Against --max-groups and --max-group-members.",
			targets: []dashTarget{t1(`sum(kiggy_groups{%s})`, "groups"), t1(`sum(kiggy_group_members{%s})`, "members")}},
		{title: "Consumer-protocol rebalances", unit: "ops", width: 8, desc: "Group epoch bumps of KIP-848 groups.",
			targets: []dashTarget{t1(`sum(rate(kiggy_consumer_group_rebalances_total{%s}[$__rate_interval]))`, "epoch bumps")}},
		{title: "Group requests by API", unit: "reqps", width: 12, desc: "The coordinator's requests (kiggy exports no consumer lag).",
			targets: []dashTarget{live(`sum by (api) (rate(kiggy_api_requests_total{%s, api=~"FindCoordinator|JoinGroup|SyncGroup|Heartbeat|LeaveGroup|OffsetCommit|OffsetFetch|ConsumerGroupHeartbeat|ConsumerGroupDescribe"}[$__rate_interval]))`, "{{api}}")}},
		{title: "Rebalances", unit: "ops", width: 12, desc: "JoinGroup requests (each member joins once per rebalance) and REBALANCE_IN_PROGRESS answers (members told to rejoin).",
			targets: []dashTarget{
				live(`sum(rate(kiggy_api_requests_total{%s, api="JoinGroup"}[$__rate_interval]))`, "JoinGroup"),
				live(`sum(rate(kiggy_api_errors_total{%s, code="REBALANCE_IN_PROGRESS"}[$__rate_interval]))`, "REBALANCE_IN_PROGRESS"),
			}},
		{title: "Group errors by API and code", unit: "ops", width: 24,
			targets: []dashTarget{t1(`sum by (api, code) (rate(kiggy_api_errors_total{%s, api=~"FindCoordinator|JoinGroup|SyncGroup|Heartbeat|LeaveGroup|OffsetCommit|OffsetFetch|ConsumerGroupHeartbeat|ConsumerGroupDescribe"}[$__rate_interval]))`, "{{api}} {{code}}")}},
	}},
	{"Transactions and idempotent producers", []dashPanel{
		{title: "Transactions by outcome", unit: "ops",
			targets: []dashTarget{live(`sum by (outcome) (rate(kiggy_transactions_total{%s}[$__rate_interval]))`, "{{outcome}}")}},
		{title: "Transactions open and markers", unit: "none",
			targets: []dashTarget{
				t1(`sum(kiggy_transactions_open{%s})`, "open"),
				live(`sum(rate(kiggy_txn_markers_total{%s}[$__rate_interval]))`, "markers/s"),
			}},
		{title: "Idempotent producers", unit: "none",
			targets: []dashTarget{
				live(`sum by (instance) (kiggy_idempotent_producers{%s})`, "states {{instance}}"),
				t1(`sum(rate(kiggy_idempotent_duplicate_batches_total{%s}[$__rate_interval]))`, "duplicates/s"),
				t1(`sum(rate(kiggy_idempotent_producers_expired_total{%s}[$__rate_interval]))`, "expired/s"),
				t1(`sum(rate(kiggy_idempotent_window_rebuilds_total{%s}[$__rate_interval]))`, "window rebuilds/s"),
			}},
	}},
	{"Iggy backend", []dashPanel{
		{title: "Iggy sessions", unit: "none", desc: "Sessions in the pool, with a live logged-in connection (read-ahead sessions included), and serving a request now.",
			targets: []dashTarget{
				live(`sum by (instance) (kiggy_iggy_sessions{%s})`, "pool {{instance}}"),
				live(`sum by (instance) (kiggy_iggy_sessions_connected{%s})`, "connected {{instance}}"),
				t1(`sum by (instance) (kiggy_iggy_sessions_in_use{%s})`, "in use {{instance}}"),
			}},
		{title: "Iggy primary", unit: "none", desc: "The node the sessions send to, and the nodes in the last cluster metadata.",
			targets: []dashTarget{
				live(`max by (instance, addr) (kiggy_iggy_primary{%s})`, "{{instance}} → {{addr}}"),
				live(`max by (instance) (kiggy_iggy_cluster_nodes{%s})`, "nodes {{instance}}"),
				t1(`max by (instance) (kiggy_iggy_routed_partitions{%s})`, "routed partitions {{instance}}"),
			}},
		{title: "Iggy primary changes", unit: "none",
			targets: []dashTarget{
				t1(`sum(increase(kiggy_iggy_primary_changes_total{%s}[$__rate_interval]))`, "primary changes"),
				t1(`sum(increase(kiggy_iggy_failovers_total{%s}[$__rate_interval]))`, "failovers"),
				t1(`sum(increase(kiggy_iggy_partition_reroutes_total{%s}[$__rate_interval]))`, "partition reroutes"),
			}},
		{title: "Iggy connections", unit: "ops",
			targets: []dashTarget{
				t1(`sum(rate(kiggy_iggy_connects_total{%s}[$__rate_interval]))`, "connects"),
				t1(`sum(rate(kiggy_iggy_reconnects_total{%s}[$__rate_interval]))`, "reconnects"),
				t1(`sum(rate(kiggy_iggy_connect_failures_total{%s}[$__rate_interval]))`, "connect failures"),
				t1(`sum(rate(kiggy_iggy_session_rebinds_total{%s}[$__rate_interval]))`, "session rebinds"),
			}},
		{title: "Iggy waits and retries", unit: "ops", desc: "Requests that waited for a free session (raise --iggy-pool-size if this grows), transient replays, stale-incarnation polls.",
			targets: []dashTarget{
				t1(`sum(rate(kiggy_iggy_session_waits_total{%s}[$__rate_interval]))`, "session waits"),
				t1(`sum(rate(kiggy_iggy_transient_retries_total{%s}[$__rate_interval]))`, "transient retries"),
				t1(`sum(rate(kiggy_iggy_stale_incarnation_polls_total{%s}[$__rate_interval]))`, "stale incarnation polls"),
			}},
		{title: "Iggy protocol and durability", unit: "none", desc: "The Iggy binary protocol of the last login (0.11 = Iggy 0.9, 0.12 = Iggy 0.10), --iggy-durability (1 written, 2 fsync, 3 buffered) and topics whose flush options confirm writes before they are written.",
			targets: []dashTarget{
				live(`max by (instance, protocol) (kiggy_iggy_protocol{%s})`, "protocol {{protocol}} {{instance}}"),
				live(`max by (instance) (kiggy_iggy_durability_level{%s})`, "durability {{instance}}"),
				t1(`sum by (instance) (kiggy_iggy_buffered_topics{%s})`, "buffered topics {{instance}}"),
				t1(`sum(rate(kiggy_iggy_buffered_appends_total{%s}[$__rate_interval]))`, "buffered appends/s"),
			}},
		{title: "Read cache hit ratio", unit: "percentunit", desc: "Partition reads served from the Iggy read cache, and Fetch partition reads answered with batches an earlier Fetch encoded.",
			targets: []dashTarget{
				t1(`sum(rate(kiggy_iggy_read_cache_hits_total{%s}[$__rate_interval])) / clamp_min(sum(rate(kiggy_iggy_read_cache_hits_total{%s}[$__rate_interval])) + sum(rate(kiggy_iggy_read_cache_misses_total{%s}[$__rate_interval])), 1e-9)`, "read cache"),
				t1(`sum(rate(kiggy_fetch_cache_hits_total{%s}[$__rate_interval])) / clamp_min(sum(rate(kiggy_fetch_cache_hits_total{%s}[$__rate_interval])) + sum(rate(kiggy_fetch_cache_misses_total{%s}[$__rate_interval])), 1e-9)`, "fetch cache"),
			}},
		{title: "Read cache activity", unit: "ops",
			targets: []dashTarget{
				live(`sum(rate(kiggy_iggy_read_cache_misses_total{%s}[$__rate_interval]))`, "read cache misses"),
				t1(`sum(rate(kiggy_iggy_read_cache_shared_waits_total{%s}[$__rate_interval]))`, "read cache shared waits"),
				t1(`sum(rate(kiggy_iggy_read_cache_readaheads_total{%s}[$__rate_interval]))`, "read-aheads"),
				t1(`sum(rate(kiggy_iggy_read_cache_evictions_total{%s}[$__rate_interval]))`, "read cache evictions"),
				t1(`sum(rate(kiggy_iggy_read_cache_invalidations_total{%s}[$__rate_interval]))`, "read cache invalidations"),
			}},
		{title: "Fetch cache activity", unit: "ops",
			targets: []dashTarget{
				live(`sum(rate(kiggy_fetch_cache_misses_total{%s}[$__rate_interval]))`, "misses"),
				t1(`sum(rate(kiggy_fetch_cache_shared_waits_total{%s}[$__rate_interval]))`, "shared waits"),
				t1(`sum(rate(kiggy_fetch_cache_evictions_total{%s}[$__rate_interval]))`, "evictions"),
				t1(`sum(rate(kiggy_fetch_cache_invalidations_total{%s}[$__rate_interval]))`, "invalidations"),
				t1(`sum(rate(kiggy_fetch_cache_stale_total{%s}[$__rate_interval]))`, "stale"),
			}},
	}},
	{"Cluster (--cluster-membership iggy)", []dashPanel{
		{title: "Membership view and members", unit: "none", width: 12, desc: "Equal views across instances mean they applied the same membership log prefix.",
			targets: []dashTarget{
				live(`max by (instance) (kiggy_cluster_view{%s})`, "view {{instance}}"),
				live(`max by (instance) (kiggy_cluster_members{%s})`, "members {{instance}}"),
				t1(`max by (instance) (kiggy_cluster_log_generation{%s})`, "log generation {{instance}}"),
			}},
		{title: "Lease and fencing", unit: "none", width: 12, desc: "Lease 1 = this instance may serve what it leads; fenced 1 = another process took its node id.",
			targets: []dashTarget{
				live(`min by (instance) (kiggy_cluster_lease{%s})`, "lease {{instance}}"),
				t1(`max by (instance) (kiggy_cluster_fenced{%s})`, "fenced {{instance}}"),
			}},
	}},
	{"Memory", []dashPanel{
		{title: "Go memory", unit: "bytes", desc: "Go heap in use, and memory the Go runtime obtained from the OS (kiggy exports no process RSS).",
			targets: []dashTarget{
				live(`go_memstats_heap_inuse_bytes{%s}`, "heap in use {{instance}}"),
				live(`go_memstats_sys_bytes{%s}`, "from the OS {{instance}}"),
			}},
		{title: "Embedded log memory", unit: "bytes", desc: "The embedded log's storage chunks and their cap (--memlog-total-bytes). Embedded log only.",
			targets: []dashTarget{
				live(`sum by (instance) (kiggy_memlog_bytes{%s})`, "held {{instance}}"),
				live(`sum by (instance) (kiggy_memlog_limit_bytes{%s})`, "cap {{instance}}"),
			}},
		{title: "Embedded log drops", unit: "Bps", desc: "Bytes dropped to stay within a limit: partition (--memlog-partition-bytes, retention.bytes) or total (--memlog-total-bytes: consumers that lag lose records).",
			targets: []dashTarget{live(`sum by (limit) (rate(kiggy_memlog_dropped_bytes_total{%s}[$__rate_interval]))`, "{{limit}}")}},
		{title: "Caches", unit: "bytes", desc: "The Iggy read cache and the shared Fetch cache, and their bounds. Iggy backend only.",
			targets: []dashTarget{
				t1(`sum by (instance) (kiggy_iggy_read_cache_bytes{%s})`, "read cache {{instance}}"),
				live(`sum by (instance) (kiggy_iggy_read_cache_limit_bytes{%s})`, "read cache bound {{instance}}"),
				t1(`sum by (instance) (kiggy_fetch_cache_bytes{%s})`, "fetch cache {{instance}}"),
				t1(`sum by (instance) (kiggy_fetch_cache_free_bytes{%s})`, "fetch cache free buffers {{instance}}"),
				live(`sum by (instance) (kiggy_fetch_cache_limit_bytes{%s})`, "fetch cache bound {{instance}}"),
			}},
		{title: "Goroutines", unit: "none",
			targets: []dashTarget{live(`go_goroutines{%s}`, "{{instance}}")}},
		{title: "GC cycles", unit: "ops",
			targets: []dashTarget{t1(`sum by (instance) (rate(go_gc_cycles_total{%s}[$__rate_interval]))`, "{{instance}}")}},
	}},
	{"Connections", []dashPanel{
		{title: "Connections", unit: "none",
			targets: []dashTarget{
				live(`sum by (instance) (kiggy_connections_open{%s})`, "open {{instance}}"),
				live(`sum by (instance) (rate(kiggy_connections_accepted_total{%s}[$__rate_interval]))`, "accepted/s {{instance}}"),
				t1(`sum by (instance) (rate(kiggy_connections_refused_total{%s}[$__rate_interval]))`, "refused/s {{instance}}"),
			}},
		{title: "Connections closed by reason", unit: "ops",
			targets: []dashTarget{live(`sum by (reason) (rate(kiggy_connections_closed_total{%s}[$__rate_interval]))`, "{{reason}}")}},
		{title: "Read pauses by limit", unit: "ops", desc: "Connections whose reads stopped at a per-connection limit; max_output_bytes is a client that does not read its responses.",
			targets: []dashTarget{t1(`sum by (limit) (rate(kiggy_connection_read_pauses_total{%s}[$__rate_interval]))`, "{{limit}}")}},
		{title: "Request frames", unit: "reqps",
			targets: []dashTarget{live(`sum by (instance) (rate(kiggy_requests_total{%s}[$__rate_interval]))`, "{{instance}}")}},
	}},
}

// dashboardJSON renders dashboardRows as a Grafana dashboard (schema 39).
func dashboardJSON() []byte {
	ds := map[string]any{"type": "prometheus", "uid": "${datasource}"}
	var panels []any
	id, y := 1, 0
	for _, r := range dashboardRows {
		panels = append(panels, map[string]any{
			"type": "row", "id": id, "title": r.title, "collapsed": false, "panels": []any{},
			"gridPos": map[string]int{"h": 1, "w": 24, "x": 0, "y": y},
		})
		id++
		y++
		x, rowH := 0, 0
		for _, p := range r.panels {
			w, h := p.width, 8
			if w == 0 {
				w = 8
			}
			if p.stat {
				h = 4
			}
			if x+w > 24 {
				x, y = 0, y+rowH
			}
			var targets []any
			for i, tg := range p.targets {
				targets = append(targets, map[string]any{
					"refId": string(rune('A' + i)), "datasource": ds, "expr": tg.expr,
					"legendFormat": tg.legend, "range": true, "instant": false,
				})
			}
			panel := map[string]any{
				"id": id, "title": p.title, "description": p.desc, "datasource": ds, "targets": targets,
				"gridPos":     map[string]int{"h": h, "w": w, "x": x, "y": y},
				"fieldConfig": map[string]any{"defaults": map[string]any{"unit": p.unit}, "overrides": []any{}},
			}
			if p.stat {
				panel["type"] = "stat"
				panel["options"] = map[string]any{
					"reduceOptions": map[string]any{"calcs": []string{"lastNotNull"}, "fields": "", "values": false},
					"colorMode":     "value", "graphMode": "area", "textMode": "auto",
				}
			} else {
				panel["type"] = "timeseries"
				panel["options"] = map[string]any{
					"legend":  map[string]any{"displayMode": "list", "placement": "bottom", "showLegend": true},
					"tooltip": map[string]any{"mode": "multi", "sort": "desc"},
				}
			}
			panels = append(panels, panel)
			id++
			x += w
			rowH = max(rowH, h)
		}
		y += rowH
	}
	variable := func(name, label, query string) map[string]any {
		return map[string]any{
			"name": name, "label": label, "type": "query", "datasource": ds,
			"query":      map[string]any{"query": query, "refId": "PrometheusVariableQueryEditor-VariableQuery", "qryType": 1},
			"definition": query, "refresh": 2, "includeAll": true, "multi": true, "allValue": ".*",
			"current": map[string]any{"selected": true, "text": []string{"All"}, "value": []string{"$__all"}},
			"sort":    1, "hide": 0, "regex": "", "options": []any{},
		}
	}
	d := map[string]any{
		"title": "kiggy", "uid": "kiggy-overview", "version": 1, "schemaVersion": 39,
		"description": "kiggy, the Kafka gateway for Apache Iggy: throughput, latency, errors, Iggy sessions and primary, groups, transactions, memory, connections. Every series is in kiggy's docs/METRICS.md; deploy's TestDashboardLive runs every query against a real Prometheus scraping kiggy under load.",
		"tags":        []string{"kiggy", "kafka", "iggy"}, "editable": true, "graphTooltip": 1,
		"time": map[string]string{"from": "now-1h", "to": "now"}, "refresh": "30s", "timezone": "",
		"timepicker": map[string]any{}, "links": []any{}, "fiscalYearStartMonth": 0, "liveNow": false,
		"annotations": map[string]any{"list": []any{map[string]any{
			"builtIn": 1, "datasource": map[string]string{"type": "grafana", "uid": "-- Grafana --"},
			"enable": true, "hide": true, "iconColor": "rgba(0, 211, 255, 1)", "name": "Annotations & Alerts", "type": "dashboard",
		}}},
		"templating": map[string]any{"list": []any{
			map[string]any{
				"name": "datasource", "label": "Data source", "type": "datasource", "query": "prometheus",
				"current": map[string]any{}, "hide": 0, "includeAll": false, "multi": false, "options": []any{},
				"refresh": 1, "regex": "",
			},
			variable("job", "Job", "label_values(kiggy_uptime_seconds, job)"),
			variable("instance", "Instance", `label_values(kiggy_uptime_seconds{job=~"$job"}, instance)`),
		}},
		"panels": panels,
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(d); err != nil {
		panic(err)
	}
	return b.Bytes()
}

// TestDashboardGenerated: grafana/kiggy-dashboard.json is what
// dashboardRows renders (KIGGY_UPDATE_DASHBOARD=1 rewrites it).
func TestDashboardGenerated(t *testing.T) {
	want := dashboardJSON()
	if os.Getenv("KIGGY_UPDATE_DASHBOARD") == "1" {
		if err := os.WriteFile(dashboardFile, want, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s differs from dashboardRows: run KIGGY_UPDATE_DASHBOARD=1 go test -run TestDashboardGenerated ./deploy/", dashboardFile)
	}
}
