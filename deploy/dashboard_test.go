package deploy

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"go.yaml.in/yaml/v3"

	"github.com/kiggy-io/kiggy/internal/testing/iggyserver"
	"github.com/kiggy-io/kiggy/internal/testing/kiggyproc"
	"github.com/kiggy-io/kiggy/internal/testing/testtools"
)

// TestMain removes the kiggy binary TestDashboardLive builds.
func TestMain(m *testing.M) {
	code := m.Run()
	kiggyproc.RemoveBinary()
	os.Exit(code)
}

type dsRef struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

type grafanaPanel struct {
	ID         int    `json:"id"`
	Type       string `json:"type"`
	Title      string `json:"title"`
	Datasource *dsRef `json:"datasource"`
	GridPos    struct {
		H, W, X, Y int
	} `json:"gridPos"`
	Targets []struct {
		RefID        string `json:"refId"`
		Expr         string `json:"expr"`
		LegendFormat string `json:"legendFormat"`
		Datasource   *dsRef `json:"datasource"`
	} `json:"targets"`
	Panels []grafanaPanel `json:"panels"`
}

type grafanaDashboard struct {
	UID           string `json:"uid"`
	Title         string `json:"title"`
	SchemaVersion int    `json:"schemaVersion"`
	Templating    struct {
		List []struct {
			Name       string `json:"name"`
			Type       string `json:"type"`
			Query      any    `json:"query"`
			Definition string `json:"definition"`
			Datasource *dsRef `json:"datasource"`
			AllValue   string `json:"allValue"`
		} `json:"list"`
	} `json:"templating"`
	Panels []grafanaPanel `json:"panels"`
}

// dashQuery is one query of the dashboard file.
type dashQuery struct {
	panel, legend, expr string
}

func (q dashQuery) name() string { return q.panel + ": " + q.legend }

// readDashboard parses grafana/kiggy-dashboard.json and returns it with
// every panel (rows' nested panels included) and every query.
func readDashboard(t *testing.T) (grafanaDashboard, []grafanaPanel, []dashQuery) {
	t.Helper()
	b, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var d grafanaDashboard
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	var all []grafanaPanel
	var walk func([]grafanaPanel)
	walk = func(ps []grafanaPanel) {
		for _, p := range ps {
			all = append(all, p)
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	var qs []dashQuery
	for _, p := range all {
		for _, tg := range p.Targets {
			qs = append(qs, dashQuery{p.Title, tg.LegendFormat, tg.Expr})
		}
	}
	return d, all, qs
}

// selectorRE matches a series selector of a kiggy or Go series.
var selectorRE = regexp.MustCompile(`\b((?:kiggy|go)_[a-z0-9_]+)\b(\{[^}]*\})?`)

// TestDashboardStructure checks grafana/kiggy-dashboard.json without
// Prometheus: Grafana's schema fields, a datasource variable every panel and
// query uses, job and instance variables every selector filters on, unique
// panel ids, a layout without overlaps, and only series docs/METRICS.md
// lists, covering what docs/METRICS.md says the dashboard shows.
func TestDashboardStructure(t *testing.T) {
	d, panels, qs := readDashboard(t)
	if d.UID == "" || d.Title == "" || d.SchemaVersion < 36 {
		t.Errorf("uid %q, title %q, schemaVersion %d: want both set and schema >= 36", d.UID, d.Title, d.SchemaVersion)
	}
	vars := map[string]bool{}
	for _, v := range d.Templating.List {
		vars[v.Name] = true
		switch v.Name {
		case "datasource":
			if v.Type != "datasource" || v.Query != "prometheus" {
				t.Errorf("variable datasource: type %q query %v, want datasource and prometheus", v.Type, v.Query)
			}
		case "job", "instance":
			if v.Type != "query" || v.Datasource == nil || v.Datasource.UID != "${datasource}" || !strings.HasPrefix(v.Definition, "label_values(") {
				t.Errorf("variable %s: type %q, datasource %v, definition %q: want a label_values query on ${datasource}", v.Name, v.Type, v.Datasource, v.Definition)
			}
		}
	}
	for _, name := range []string{"datasource", "job", "instance"} {
		if !vars[name] {
			t.Errorf("no %s variable", name)
		}
	}

	doc := documentedMetrics(t)
	ids := map[int]string{}
	used := map[string]bool{}
	for i, p := range panels {
		if prev, dup := ids[p.ID]; dup || p.ID <= 0 {
			t.Errorf("panel %q: id %d (also %q)", p.Title, p.ID, prev)
		}
		ids[p.ID] = p.Title
		g := p.GridPos
		if g.W <= 0 || g.H <= 0 || g.X < 0 || g.X+g.W > 24 {
			t.Errorf("panel %q: gridPos %+v outside the 24 columns", p.Title, g)
		}
		for _, o := range panels[:i] {
			h := o.GridPos
			if g.X < h.X+h.W && h.X < g.X+g.W && g.Y < h.Y+h.H && h.Y < g.Y+g.H {
				t.Errorf("panels %q and %q overlap", o.Title, p.Title)
			}
		}
		if p.Type == "row" {
			continue
		}
		if p.Datasource == nil || *p.Datasource != (dsRef{"prometheus", "${datasource}"}) {
			t.Errorf("panel %q: datasource %v, want the ${datasource} variable", p.Title, p.Datasource)
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no queries", p.Title)
		}
		refs := map[string]bool{}
		for _, tg := range p.Targets {
			if tg.Expr == "" || tg.RefID == "" || refs[tg.RefID] {
				t.Errorf("panel %q: query %q with refId %q (empty or repeated)", p.Title, tg.Expr, tg.RefID)
			}
			refs[tg.RefID] = true
			if tg.Datasource == nil || *tg.Datasource != (dsRef{"prometheus", "${datasource}"}) {
				t.Errorf("panel %q %s: datasource %v, want the ${datasource} variable", p.Title, tg.RefID, tg.Datasource)
			}
		}
	}
	for _, q := range qs {
		sels := selectorRE.FindAllStringSubmatch(q.expr, -1)
		if up := regexp.MustCompile(`\bup\{[^}]*\}`).FindAllString(q.expr, -1); len(sels)+len(up) == 0 {
			t.Errorf("%s: no series in %q", q.name(), q.expr)
		}
		for _, up := range regexp.MustCompile(`\bup\{[^}]*\}`).FindAllString(q.expr, -1) {
			sels = append(sels, []string{up, "up", up[2:]})
		}
		for _, s := range sels {
			name, labels := s[1], s[2]
			if name != "up" && !doc[name] {
				t.Errorf("%s: %s is not in docs/METRICS.md", q.name(), name)
			}
			used[strings.TrimSuffix(name, "_bucket")] = true
			if !strings.Contains(labels, `job=~"$job"`) || !strings.Contains(labels, `instance=~"$instance"`) {
				t.Errorf("%s: selector %s does not filter on $job and $instance", q.name(), s[0])
			}
		}
	}
	// What the dashboard shows (docs/METRICS.md): throughput, latency,
	// errors by API and code, Iggy session and primary state, groups,
	// transactions, memory, connections.
	for _, name := range []string{
		"kiggy_records_produced_total", "kiggy_records_fetched_total", "kiggy_bytes_in_total", "kiggy_bytes_out_total",
		"kiggy_request_duration_seconds", "kiggy_iggy_request_duration_seconds", "kiggy_api_errors_total", "kiggy_api_requests_total",
		"kiggy_iggy_sessions_connected", "kiggy_iggy_primary", "kiggy_iggy_primary_unknown", "kiggy_cluster_view",
		"kiggy_transactions_total", "go_memstats_heap_inuse_bytes", "kiggy_memlog_bytes", "kiggy_connections_open",
	} {
		if !used[name] {
			t.Errorf("the dashboard does not show %s", name)
		}
	}
	t.Logf("%d panels, %d queries, %d series", len(panels), len(qs), len(used))
}

// quietQueries are the dashboard queries TestDashboardLive lets return no
// series, each with the reason its load cannot make one: every other query
// must return data. They are still run and must succeed.
var quietQueries = map[string]string{
	"Handler panics by API: {{api}}":                                "kiggy_handler_panics_total is labelled by API and appears at a handler's first panic: a bug, which no load may cause",
	"Iggy failover duration p99: p99":                               "kiggy_iggy_failover_duration_seconds is served from the first failover on, which needs an Iggy cluster and a killed primary (tests/realiggy's failover tests)",
	"Iggy request errors by command and kind: {{command}} {{kind}}": "kiggy_iggy_request_errors_total is labelled by command and kind and appears at an Iggy request's first failure; a healthy server may answer every request",
}

// TestDashboardLive runs every query of the dashboard against a real
// Prometheus (Debian package prometheus) scraping two live kiggy processes
// every second while franz-go clients load them: one in front of a real
// iggy-server as a one-instance cluster (--cluster-membership iggy), for
// the Iggy and cluster series, and one on the embedded log with a
// SASL_PLAINTEXT listener, ACLs and 256 KiB partitions, for the embedded
// log's series, SASL failures, authorization denials and transactions (a
// cluster member refuses transactional ids). The load is acks=all
// producers, a consumer group that members joining and leaving make
// rebalance, transactions committed and aborted, Metadata and raw Produce
// requests for a topic that does not exist (auto-creation off), a topic
// an ACL denies, and bad SASL logins. After ten scrapes or more, the job
// and instance variables' queries must name the job and both processes,
// and every panel query, with the variables substituted as Grafana does,
// must succeed over the load window and at its end and return a series,
// except quietQueries; the queries marked live must also show a finite
// non-zero value.
func TestDashboardLive(t *testing.T) {
	promBin, err := exec.LookPath("prometheus")
	if err != nil {
		missing(t, "prometheus not on PATH (Debian package prometheus)")
	}
	_, _, qs := readDashboard(t)
	iggy := iggyserver.StartT(t)
	dir := t.TempDir()

	// A cluster member announces its port before it binds: it needs one.
	port, err := testtools.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	onIggy := kiggyproc.Start(t, kiggyproc.Config{
		Name: "kiggy-iggy",
		Args: []string{"--listen", "127.0.0.1:" + strconv.Itoa(port), "--admin-addr", "127.0.0.1:0", "--drain-timeout", "2s",
			"--iggy-addr", iggy.Addr, "--iggy-username", iggyserver.Username, "--iggy-password", iggyserver.Password,
			"--cluster-membership", "iggy", "--auto-create-topics=false"},
		MustLive: true,
	})
	users := filepath.Join(dir, "plain-users")
	if err := os.WriteFile(users, []byte("dash:dash-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	embedded := kiggyproc.Start(t, kiggyproc.Config{
		Name: "kiggy-embedded",
		Args: []string{"--listeners", "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
			"--sasl-plain-users-file", users, "--admin-addr", "127.0.0.1:0", "--drain-timeout", "2s",
			"--auto-create-topics=false", "--memlog-partition-bytes", "262144",
			"--acl-enabled", "--allow-everyone-if-no-acl-found"},
		MustLive: true,
	})
	prom := startPrometheus(t, promBin, dir, onIggy.Admin, embedded.Admin)

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var produced atomic.Int64
	loadStart := time.Now()
	// Transactions only on the embedded log: a cluster member refuses
	// transactional ids (docs/LIMITS.md).
	startLoad(ctx, t, &wg, onIggy.Addr, onIggy.Name, false, false, &produced)
	startLoad(ctx, t, &wg, embedded.Addr, embedded.Name, true, true, &produced)
	wg.Add(1)
	go func() { defer wg.Done(); badLogins(ctx, embedded.Listeners["SASL_PLAINTEXT"]) }()
	defer func() {
		cancel()
		wg.Wait()
	}()

	// Ten scrapes of each process since the load began.
	testtools.WaitFor(t, 90*time.Second, "ten scrapes of each kiggy under load", func() bool {
		since := int(time.Since(loadStart).Seconds())
		if since < 12 {
			return false
		}
		v, err := prom.query(fmt.Sprintf(`count_over_time(up{job="kiggy"}[%ds])`, since), time.Now())
		if err != nil || len(v) != 2 {
			return false
		}
		for _, s := range v {
			if n, _ := s.last(); n < 10 {
				return false
			}
		}
		return true
	})
	if produced.Load() == 0 {
		t.Fatal("the load produced nothing")
	}

	// The variables, as Grafana's label_values queries them.
	jobs := prom.labelValues(t, "job", "kiggy_uptime_seconds")
	if !slices.Equal(jobs, []string{"kiggy"}) {
		t.Fatalf("job variable: %v, want [kiggy]", jobs)
	}
	instances := prom.labelValues(t, "instance", `kiggy_uptime_seconds{job=~"kiggy"}`)
	if want := []string{onIggy.Admin, embedded.Admin}; !sameSet(instances, want) {
		t.Fatalf("instance variable: %v, want %v", instances, want)
	}
	subst := strings.NewReplacer(
		"$job", grafanaRegex(jobs),
		"$instance", grafanaRegex(instances),
		// Grafana's $__rate_interval: max(4 × scrape interval, step + scrape interval).
		"$__rate_interval", "4s",
	)

	end := time.Now()
	var withData, quietWithData int
	for _, q := range qs {
		expr := subst.Replace(q.expr)
		if strings.Contains(expr, "$") {
			t.Errorf("%s: variable left after substitution: %s", q.name(), expr)
			continue
		}
		rng, err := prom.queryRange(expr, loadStart, end, time.Second)
		if err != nil {
			t.Errorf("%s: query_range %s: %v", q.name(), expr, err)
			continue
		}
		inst, err := prom.query(expr, end)
		if err != nil {
			t.Errorf("%s: query %s: %v", q.name(), expr, err)
			continue
		}
		samples, nonZero := 0, false
		for _, s := range rng {
			samples += len(s.Values)
			for _, v := range s.Values {
				if f, ok := sampleValue(v); ok && f != 0 && !math.IsNaN(f) && !math.IsInf(f, 0) {
					nonZero = true
				}
			}
		}
		reason, quiet := quietQueries[q.name()]
		switch {
		case samples > 0 && len(inst) > 0:
			withData++
			if quiet {
				quietWithData++
				t.Logf("%s: returned data although listed quiet (%s)", q.name(), reason)
			}
		case quiet:
			t.Logf("%s: no series, as expected: %s", q.name(), reason)
		default:
			t.Errorf("%s: no data (%d series, %d samples over the load; %d series at its end) from %s", q.name(), len(rng), samples, len(inst), expr)
			continue
		}
		if liveQuery(q.expr) && !nonZero {
			t.Errorf("%s: never non-zero over the load from %s", q.name(), expr)
		}
	}
	for name := range quietQueries {
		if !slices.ContainsFunc(qs, func(q dashQuery) bool { return q.name() == name }) {
			t.Errorf("quietQueries names %q, which is no dashboard query", name)
		}
	}
	t.Logf("%d queries run over %v of load (%d records produced): %d returned data (%d of them listed quiet), %d quiet without data",
		len(qs), end.Sub(loadStart).Round(time.Second), produced.Load(), withData, quietWithData, len(qs)-withData)
}

// liveQuery reports whether the dashboard definition marks expr live.
func liveQuery(expr string) bool {
	for _, r := range dashboardRows {
		for _, p := range r.panels {
			for _, tg := range p.targets {
				if tg.expr == expr {
					return tg.live
				}
			}
		}
	}
	return false
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// grafanaRegex is what Grafana puts for a multi-value variable in a
// Prometheus query: the values regex-escaped (inside a PromQL string, so
// each backslash doubled) and joined as (a|b).
func grafanaRegex(values []string) string {
	esc := make([]string, len(values))
	for i, v := range values {
		var b strings.Builder
		for _, r := range v {
			if strings.ContainsRune(`$^*{}[]'+?.()|\`, r) {
				b.WriteString(`\\`)
			}
			b.WriteRune(r)
		}
		esc[i] = b.String()
	}
	if len(esc) == 1 {
		return esc[0]
	}
	return "(" + strings.Join(esc, "|") + ")"
}

// startLoad runs franz-go clients against the Kafka listener at addr until
// ctx ends: see TestDashboardLive.
func startLoad(ctx context.Context, t *testing.T, wg *sync.WaitGroup, addr, name string, txns, acl bool, produced *atomic.Int64) {
	t.Helper()
	admin, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	actx, acancel := context.WithTimeout(ctx, 30*time.Second)
	defer acancel()
	for topic, partitions := range map[string]int32{"load": 3, "txn": 1} {
		r, err := kadm.NewClient(admin).CreateTopic(actx, partitions, 1, nil, topic)
		if err == nil {
			err = r.Err
		}
		if err != nil {
			t.Fatalf("%s: create topic %s: %v", name, topic, err)
		}
	}
	if acl {
		// Anonymous clients (PLAINTEXT) may do anything but touch topic
		// "forbidden".
		deny := kadm.NewACLs().Topics("forbidden").ResourcePatternType(kadm.ACLPatternLiteral).
			Deny("User:ANONYMOUS").DenyHosts("*").Operations(kadm.OpAll)
		rs, err := kadm.NewClient(admin).CreateACLs(actx, deny)
		if err == nil && (len(rs) != 1 || rs[0].Err != nil) {
			err = fmt.Errorf("%+v", rs)
		}
		if err != nil {
			t.Fatalf("%s: create a deny ACL: %v", name, err)
		}
	}
	run := func(f func()) {
		wg.Add(1)
		go func() { defer wg.Done(); f() }()
	}
	// An acks=all (and so idempotent) producer.
	run(func() {
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("load"), kgo.RequiredAcks(kgo.AllISRAcks()))
		if err != nil {
			t.Error(err)
			return
		}
		defer cl.Close()
		value := make([]byte, 512)
		for ctx.Err() == nil {
			recs := make([]*kgo.Record, 50)
			for i := range recs {
				recs[i] = &kgo.Record{Key: []byte(strconv.Itoa(i)), Value: value}
			}
			if err := cl.ProduceSync(ctx, recs...).FirstErr(); err == nil {
				produced.Add(int64(len(recs)))
			} else if ctx.Err() == nil {
				t.Logf("%s: produce: %v", name, err)
			}
			sleep(ctx, 20*time.Millisecond)
		}
	})
	// A consumer group. Labelled series appear at their first count, and
	// rate() cannot see the increase that made a series appear, so the
	// group rebalances again once its series are scraped: a second member
	// joins after 4 s, a third after 7 s and leaves at 10 s.
	for i, at := range [][2]time.Duration{{0, 0}, {4 * time.Second, 0}, {7 * time.Second, 10 * time.Second}} {
		run(func() {
			sleep(ctx, at[0])
			cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumerGroup("dash"), kgo.ConsumeTopics("load"),
				kgo.FetchMaxWait(200*time.Millisecond), kgo.AutoCommitInterval(time.Second), kgo.ClientID(fmt.Sprint("member-", i)))
			if err != nil {
				t.Error(err)
				return
			}
			defer cl.Close()
			pctx := ctx
			if at[1] > 0 {
				var cancel context.CancelFunc
				pctx, cancel = context.WithTimeout(ctx, at[1]-at[0])
				defer cancel()
			}
			for pctx.Err() == nil {
				cl.PollFetches(pctx)
			}
		})
	}
	// Transactions, every third one aborted.
	run(func() {
		if !txns {
			return
		}
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.TransactionalID("dash-txn"), kgo.DefaultProduceTopic("txn"))
		if err != nil {
			t.Error(err)
			return
		}
		defer cl.Close()
		for i := 0; ctx.Err() == nil; i++ {
			if err := cl.BeginTransaction(); err != nil {
				t.Logf("%s: begin transaction: %v", name, err)
				return
			}
			err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("t")}, &kgo.Record{Value: []byte("u")}).FirstErr()
			commit := kgo.TryCommit
			if i%3 == 2 || err != nil {
				commit = kgo.TryAbort
			}
			if err := cl.EndTransaction(context.WithoutCancel(ctx), commit); err != nil {
				t.Logf("%s: end transaction: %v", name, err)
				return
			}
			sleep(ctx, 100*time.Millisecond)
		}
	})
	// A producer of a topic that does not exist: its Metadata requests
	// are answered UNKNOWN_TOPIC_OR_PARTITION; and with ACLs one of the
	// topic the anonymous user may not touch (TOPIC_AUTHORIZATION_FAILED).
	refused := []string{"no-such-topic"}
	if acl {
		refused = append(refused, "forbidden")
	}
	// Raw Produce requests to the topic that does not exist (a client
	// asks Metadata first): UNKNOWN_TOPIC_OR_PARTITION in Produce.
	run(func() {
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
		if err != nil {
			t.Error(err)
			return
		}
		defer cl.Close()
		for ctx.Err() == nil {
			req := kmsg.NewPtrProduceRequest()
			req.Acks, req.TimeoutMillis = -1, 1000
			topic := kmsg.NewProduceRequestTopic()
			topic.Topic = "no-such-topic"
			topic.Partitions = append(topic.Partitions, kmsg.NewProduceRequestTopicPartition())
			req.Topics = append(req.Topics, topic)
			resp, err := req.RequestWith(ctx, cl)
			if err == nil && resp.Topics[0].Partitions[0].ErrorCode == 0 {
				t.Errorf("%s: a Produce to a topic that does not exist succeeded", name)
			}
			sleep(ctx, 250*time.Millisecond)
		}
	})
	for _, topic := range refused {
		run(func() {
			cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic), kgo.MetadataMinAge(250*time.Millisecond))
			if err != nil {
				t.Error(err)
				return
			}
			defer cl.Close()
			for ctx.Err() == nil {
				pctx, pcancel := context.WithTimeout(ctx, time.Second)
				if err := cl.ProduceSync(pctx, &kgo.Record{Value: []byte("x")}).FirstErr(); err == nil {
					t.Errorf("%s: produced to %s", name, topic)
				}
				pcancel()
			}
		})
	}
}

// badLogins logs in to the SASL_PLAINTEXT listener at addr with a wrong
// password twice a second, and with the right one once a second, until
// ctx ends.
func badLogins(ctx context.Context, addr string) {
	for i := 0; ctx.Err() == nil; i++ {
		pass := "wrong"
		if i%3 == 0 {
			pass = "dash-secret"
		}
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.SASL(plain.Auth{User: "dash", Pass: pass}.AsMechanism()))
		if err == nil {
			pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			_ = cl.Ping(pctx)
			cancel()
			cl.Close()
		}
		sleep(ctx, 330*time.Millisecond)
	}
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// TestComposeGrafana checks the Grafana service of compose.yaml without a
// container runtime: it mounts the dashboard where its provisioned provider
// looks and makes it the home page, and its provisioned datasource is the
// compose file's Prometheus, with that Prometheus's scrape interval (from
// which Grafana derives $__rate_interval).
func TestComposeGrafana(t *testing.T) {
	var c struct {
		Services map[string]struct {
			Environment map[string]string `yaml:"environment"`
			Volumes     []string          `yaml:"volumes"`
			DependsOn   []string          `yaml:"depends_on"`
			Ports       []string          `yaml:"ports"`
		} `yaml:"services"`
	}
	readYAML(t, "compose.yaml", &c)
	g, ok := c.Services["grafana"]
	if !ok {
		t.Fatal("compose.yaml has no grafana service")
	}
	if !contains(g.DependsOn, "prometheus") {
		t.Errorf("grafana depends on %v, want prometheus", g.DependsOn)
	}
	mounts := map[string]string{} // source → target
	for _, v := range g.Volumes {
		parts := strings.Split(v, ":")
		if len(parts) < 2 {
			t.Fatalf("grafana volume %q", v)
		}
		if _, err := os.Stat(parts[0]); err != nil {
			t.Errorf("grafana mounts %s: %v", parts[0], err)
		}
		mounts[filepath.Clean(parts[0])] = parts[1]
	}
	dash := mounts[filepath.Clean(dashboardFile)]
	if dash == "" {
		t.Fatalf("grafana does not mount %s (mounts %v)", dashboardFile, mounts)
	}
	if home := g.Environment["GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH"]; home != dash {
		t.Errorf("home dashboard %q, want the mounted %s", home, dash)
	}
	for _, kind := range []string{"datasources", "dashboards"} {
		src := filepath.Join("grafana/provisioning", kind)
		if want := "/etc/grafana/provisioning/" + kind; mounts[src] != want {
			t.Errorf("grafana mounts %s at %q, want %s", src, mounts[src], want)
		}
	}

	var providers struct {
		APIVersion int `yaml:"apiVersion"`
		Providers  []struct {
			Type    string `yaml:"type"`
			Options struct {
				Path string `yaml:"path"`
			} `yaml:"options"`
		} `yaml:"providers"`
	}
	readYAML(t, "grafana/provisioning/dashboards/kiggy.yml", &providers)
	if providers.APIVersion != 1 || len(providers.Providers) != 1 || providers.Providers[0].Type != "file" ||
		providers.Providers[0].Options.Path != filepath.Dir(dash) {
		t.Errorf("dashboard provider %+v: want apiVersion 1 and one file provider reading %s", providers, filepath.Dir(dash))
	}

	var sources struct {
		APIVersion  int `yaml:"apiVersion"`
		Datasources []struct {
			Type      string `yaml:"type"`
			URL       string `yaml:"url"`
			IsDefault bool   `yaml:"isDefault"`
			JSONData  struct {
				TimeInterval string `yaml:"timeInterval"`
			} `yaml:"jsonData"`
		} `yaml:"datasources"`
	}
	readYAML(t, "grafana/provisioning/datasources/prometheus.yml", &sources)
	var prom struct {
		Global struct {
			ScrapeInterval string `yaml:"scrape_interval"`
		} `yaml:"global"`
	}
	readYAML(t, "prometheus/prometheus.yml", &prom)
	promPort := ""
	for _, p := range c.Services["prometheus"].Ports {
		_, promPort, _ = strings.Cut(p, ":")
	}
	if len(sources.Datasources) != 1 {
		t.Fatalf("%d datasources, want 1", len(sources.Datasources))
	}
	ds := sources.Datasources[0]
	if sources.APIVersion != 1 || ds.Type != "prometheus" || !ds.IsDefault || ds.URL != "http://prometheus:"+promPort {
		t.Errorf("datasource %+v: want the default, of type prometheus, at http://prometheus:%s", ds, promPort)
	}
	if ds.JSONData.TimeInterval == "" || ds.JSONData.TimeInterval != prom.Global.ScrapeInterval {
		t.Errorf("datasource timeInterval %q, want Prometheus's scrape_interval %q", ds.JSONData.TimeInterval, prom.Global.ScrapeInterval)
	}
}

func readYAML(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}
