package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/kiggy-io/kiggy/bridge"
	"github.com/kiggy-io/kiggy/bridge/store"
	"github.com/kiggy-io/kiggy/engine"
)

// admin serves /healthz, /readyz and /metrics (Prometheus text format,
// written by hand from counters the engine and gateway keep anyway: no
// metrics library on the hot path, no label lookups per request).
type admin struct {
	pprof    bool // serve /debug/pprof/ too (--admin-pprof)
	srv      engine.Server
	store    store.Log
	gw       *bridge.Gateway
	draining atomic.Bool
	started  time.Time
}

func (a *admin) start(addr string, logger *slog.Logger) (func(), error) {
	if addr == "" {
		return func() {}, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--admin-addr %s: %w", addr, err)
	}
	hs := &http.Server{Handler: a.handler(), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = hs.Serve(ln) }()
	logger.Info("admin listening", "addr", ln.Addr().String())
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = hs.Shutdown(ctx)
	}, nil
}

// handler routes the admin endpoints.
func (a *admin) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("/readyz", a.ready)
	mux.HandleFunc("/metrics", a.metrics)
	if a.pprof {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	return mux
}

// ready: the listener is up, the backend answers, and no drain has begun.
func (a *admin) ready(w http.ResponseWriter, r *http.Request) {
	if a.draining.Load() {
		http.Error(w, "draining", http.StatusServiceUnavailable)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	if err := a.store.Ready(ctx); err != nil {
		http.Error(w, "backend: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	fmt.Fprintln(w, "ready")
}

func (a *admin) metrics(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	s := a.srv.Stats()
	fmt.Fprintf(w, "# HELP kiggy_connections_open Open client connections.\n# TYPE kiggy_connections_open gauge\nkiggy_connections_open %d\n", s.Open)
	fmt.Fprintf(w, "# HELP kiggy_connections_accepted_total Connections accepted.\n# TYPE kiggy_connections_accepted_total counter\nkiggy_connections_accepted_total %d\n", s.Accepted)
	fmt.Fprintf(w, "# HELP kiggy_connections_refused_total Connections refused at --max-connections, --max-connections-per-ip or --connection-creation-rate-per-ip.\n# TYPE kiggy_connections_refused_total counter\nkiggy_connections_refused_total %d\n", s.Refused)
	fmt.Fprintf(w, "# HELP kiggy_connections_closed_total Connections closed, by reason.\n# TYPE kiggy_connections_closed_total counter\n")
	for r := engine.CloseReason(0); r < engine.NumCloseReasons; r++ {
		fmt.Fprintf(w, "kiggy_connections_closed_total{reason=%q} %d\n", r.String(), s.Closed(r))
	}
	fmt.Fprintf(w, "# HELP kiggy_connection_accept_throttles_total Connections the acceptor waited to serve for --max-connection-creation-rate.\n# TYPE kiggy_connection_accept_throttles_total counter\nkiggy_connection_accept_throttles_total %d\n", s.AcceptThrottles)
	fmt.Fprintf(w, "# HELP kiggy_connection_accept_throttle_seconds_total Time the acceptor waited for --max-connection-creation-rate.\n# TYPE kiggy_connection_accept_throttle_seconds_total counter\nkiggy_connection_accept_throttle_seconds_total %g\n", s.AcceptThrottleTime.Seconds())
	fmt.Fprintf(w, "# HELP kiggy_connection_rate_throttle_seconds_total Time connections refused for --connection-creation-rate-per-ip were held before their close.\n# TYPE kiggy_connection_rate_throttle_seconds_total counter\nkiggy_connection_rate_throttle_seconds_total %g\n", s.IPRateThrottleTime.Seconds())
	fmt.Fprintf(w, "# HELP kiggy_connection_rate_addresses Client IP addresses whose connection creation rate is measured (--connection-creation-rate-per-ip).\n# TYPE kiggy_connection_rate_addresses gauge\nkiggy_connection_rate_addresses %d\n", s.IPRates)
	fmt.Fprintf(w, "# HELP kiggy_connection_read_pauses_total Times a connection's reads stopped at a per-connection limit or for a quota's throttle, by limit.\n# TYPE kiggy_connection_read_pauses_total counter\n")
	for p := engine.PauseCause(0); p < engine.NumPauseCauses; p++ {
		fmt.Fprintf(w, "kiggy_connection_read_pauses_total{limit=%q} %d\n", p.String(), s.Pauses[p])
	}
	fmt.Fprintf(w, "# HELP kiggy_requests_total Request frames received.\n# TYPE kiggy_requests_total counter\nkiggy_requests_total %d\n", s.Requests)
	fmt.Fprintf(w, "# HELP kiggy_bytes_in_total Bytes read from clients.\n# TYPE kiggy_bytes_in_total counter\nkiggy_bytes_in_total %d\n", s.BytesIn)
	fmt.Fprintf(w, "# HELP kiggy_bytes_out_total Bytes written to clients.\n# TYPE kiggy_bytes_out_total counter\nkiggy_bytes_out_total %d\n", s.BytesOut)
	a.gw.WriteMetrics(w)
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	fmt.Fprintf(w, "# HELP go_goroutines Goroutines.\n# TYPE go_goroutines gauge\ngo_goroutines %d\n", runtime.NumGoroutine())
	fmt.Fprintf(w, "# HELP go_memstats_heap_inuse_bytes Heap in use.\n# TYPE go_memstats_heap_inuse_bytes gauge\ngo_memstats_heap_inuse_bytes %d\n", ms.HeapInuse)
	fmt.Fprintf(w, "# HELP go_memstats_sys_bytes Memory obtained from the OS.\n# TYPE go_memstats_sys_bytes gauge\ngo_memstats_sys_bytes %d\n", ms.Sys)
	fmt.Fprintf(w, "# HELP go_memstats_heap_idle_bytes Heap in spans with no objects.\n# TYPE go_memstats_heap_idle_bytes gauge\ngo_memstats_heap_idle_bytes %d\n", ms.HeapIdle)
	fmt.Fprintf(w, "# HELP go_memstats_heap_released_bytes Idle heap returned to the OS.\n# TYPE go_memstats_heap_released_bytes gauge\ngo_memstats_heap_released_bytes %d\n", ms.HeapReleased)
	fmt.Fprintf(w, "# HELP go_sched_gomaxprocs_threads Threads that may run Go code at once (GOMAXPROCS).\n# TYPE go_sched_gomaxprocs_threads gauge\ngo_sched_gomaxprocs_threads %d\n", runtime.GOMAXPROCS(0))
	fmt.Fprintf(w, "# HELP go_gc_cycles_total GC cycles.\n# TYPE go_gc_cycles_total counter\ngo_gc_cycles_total %d\n", ms.NumGC)
	fmt.Fprintf(w, "# HELP kiggy_uptime_seconds Seconds since start.\n# TYPE kiggy_uptime_seconds gauge\nkiggy_uptime_seconds %.0f\n", time.Since(a.started).Seconds())
}
