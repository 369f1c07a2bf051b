package main

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kiggy-io/kiggy/bridge"
	"github.com/kiggy-io/kiggy/bridge/cluster"
	"github.com/kiggy-io/kiggy/bridge/iggy"
	"github.com/kiggy-io/kiggy/bridge/iggy/iggytest"
	"github.com/kiggy-io/kiggy/bridge/memlog"
	"github.com/kiggy-io/kiggy/bridge/store"
	"github.com/kiggy-io/kiggy/engine"
)

// TestMetricsEndpoint runs the gateway on the Iggy backend (in-process
// iggytest), produces and fetches through franz-go, and checks /metrics:
// the traffic shows in the gateway's and the Iggy client's series, and the
// metric families are exactly those docs/METRICS.md lists.
func TestMetricsEndpoint(t *testing.T) {
	isrv := iggytest.New(iggytest.Config{})
	iaddr, err := isrv.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer isrv.Stop()
	logger := slog.New(slog.DiscardHandler)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	log, err := iggy.Open(ctx, iggy.Config{Addr: iaddr.String(), Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	gw := bridge.New(bridge.Config{Logger: logger}, log)
	defer gw.Close()
	srv, err := engine.New("", engine.Config{Logger: logger}, gw)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	defer srv.Shutdown(context.Background())
	adm := &admin{srv: srv, store: log, gw: gw, started: time.Now()}
	hs := httptest.NewServer(adm.handler())
	defer hs.Close()

	cl, err := kgo.NewClient(kgo.SeedBrokers(ln.Addr().String()), kgo.AllowAutoTopicCreation(),
		kgo.ConsumeTopics("metrics"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "metrics", Value: []byte("hello")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if fs := cl.PollRecords(ctx, 1); fs.NumRecords() != 1 {
		t.Fatalf("fetched %d records: %v", fs.NumRecords(), fs.Errors())
	}

	body := get(t, hs.URL+"/metrics")
	for _, want := range []string{
		`kiggy_api_requests_total{api="Produce",version="`,
		`kiggy_request_duration_seconds_count{api="Produce"} 1`,
		`kiggy_records_produced_total 1`,
		`kiggy_records_fetched_total 1`,
		`kiggy_iggy_request_duration_seconds_count{command="SendMessages"} 1`,
		`kiggy_iggy_request_duration_seconds_count{command="PollMessages"} `,
		`kiggy_iggy_sessions_connected `,
		`kiggy_iggy_connects_total `,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if t.Failed() {
		t.Logf("/metrics:\n%s", body)
	}
	if got := get(t, hs.URL+"/readyz"); got != "ready\n" {
		t.Errorf("/readyz: %q", got)
	}

	// The embedded log's series are served instead of the Iggy ones
	// without --iggy-addr: the documented set is the union.
	var embedded strings.Builder
	memlog.New(memlog.Config{}).WriteMetrics(&embedded)
	// And a cluster member's (--cluster-membership iggy).
	m, err := cluster.Start(ctx, cluster.Config{NodeID: 1, Log: memlog.New(memlog.Config{}), Endpoints: []store.Endpoint{{Host: "h", Port: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	m.WriteMetrics(&embedded)
	m.Abandon()
	var scraped []string
	for _, m := range regexp.MustCompile(`(?m)^# TYPE (\S+) `).FindAllStringSubmatch(body+embedded.String(), -1) {
		scraped = append(scraped, m[1])
	}
	doc, err := os.ReadFile("../../docs/METRICS.md")
	if err != nil {
		t.Fatal(err)
	}
	var documented []string
	for _, m := range regexp.MustCompile("(?m)^\\| `([a-z_]+)` \\|").FindAllStringSubmatch(string(doc), -1) {
		documented = append(documented, m[1])
	}
	slices.Sort(scraped)
	slices.Sort(documented)
	if !slices.Equal(scraped, documented) {
		t.Fatalf("docs/METRICS.md lists\n  %v\n/metrics has\n  %v", documented, scraped)
	}
}

func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestAdminPprof: /debug/pprof/ is served on the admin listener only with
// --admin-pprof.
func TestAdminPprof(t *testing.T) {
	for _, on := range []bool{false, true} {
		h := (&admin{pprof: on}).handler()
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/debug/pprof/", nil))
		if want := map[bool]int{false: 404, true: 200}[on]; rec.Code != want {
			t.Errorf("--admin-pprof=%v: GET /debug/pprof/ = %d, want %d", on, rec.Code, want)
		}
	}
}

// TestCPUProfile: --cpuprofile writes a profile, and --profile-on-signal
// without it is refused.
func TestCPUProfile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kiggy.pprof")
	stop, err := startProfiling(path, false, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	stop()
	if fi, err := os.Stat(path); err != nil || fi.Size() == 0 {
		t.Fatalf("profile %s: %v %v", path, fi, err)
	}
	if _, err := startProfiling("", true, slog.New(slog.DiscardHandler)); err == nil {
		t.Fatal("--profile-on-signal without --cpuprofile accepted")
	}
}
