package deploy

// A Prometheus server for TestDashboardLive, and its HTTP API
// (/api/v1/query, /api/v1/query_range, /api/v1/label/<name>/values).

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kiggy-io/kiggy/internal/testing/testtools"
)

// promServer is a Prometheus server on loopback.
type promServer struct {
	base string
	http *http.Client
}

// startPrometheus starts Prometheus scraping the admin listeners targets as
// job kiggy every second, its data in dir, and returns once it is ready. It
// is stopped with SIGTERM when t ends.
func startPrometheus(t *testing.T, bin, dir string, targets ...string) *promServer {
	t.Helper()
	quoted := make([]string, len(targets))
	for i, tg := range targets {
		quoted[i] = strconv.Quote(tg)
	}
	cfg := filepath.Join(dir, "prometheus.yml")
	conf := fmt.Sprintf("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n  - job_name: kiggy\n    static_configs:\n      - targets: [%s]\n",
		strings.Join(quoted, ", "))
	if err := os.WriteFile(cfg, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(dir, "prometheus.log")
	for attempt := 0; ; attempt++ {
		port, err := testtools.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		p := &promServer{base: "http://127.0.0.1:" + strconv.Itoa(port), http: &http.Client{Timeout: 30 * time.Second}}
		logFile, err := os.Create(logPath)
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bin, "--config.file="+cfg, "--storage.tsdb.path="+filepath.Join(dir, "tsdb"),
			"--web.listen-address=127.0.0.1:"+strconv.Itoa(port), "--storage.tsdb.retention.time=1h")
		cmd.Stdout, cmd.Stderr = logFile, logFile
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			logFile.Close()
			t.Fatalf("start prometheus: %v", err)
		}
		exited := make(chan struct{})
		go func() { _ = cmd.Wait(); logFile.Close(); close(exited) }()
		stop := func() {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-exited:
			case <-time.After(20 * time.Second):
				_ = cmd.Process.Kill()
				<-exited
			}
		}
		ready := testtools.EventuallyEvery(60*time.Second, 100*time.Millisecond, func() bool {
			select {
			case <-exited:
				return true
			default:
			}
			resp, err := p.http.Get(p.base + "/-/ready")
			if err != nil {
				return false
			}
			resp.Body.Close()
			return resp.StatusCode == http.StatusOK
		})
		select {
		case <-exited:
			if attempt < 2 && strings.Contains(testtools.FileTail(logPath, 20), "address already in use") {
				continue // the free port was taken meanwhile
			}
			t.Fatalf("prometheus exited at start:\n%s", testtools.FileTail(logPath, 20))
		default:
		}
		t.Cleanup(stop)
		if !ready {
			t.Fatalf("prometheus not ready within a minute:\n%s", testtools.FileTail(logPath, 20))
		}
		out, _ := exec.Command(bin, "--version").CombinedOutput()
		t.Logf("prometheus %s on %s", strings.Fields(string(out) + " ? ? ?")[2], p.base)
		return p
	}
}

// promSeries is one series of a query's result: Values for a range query,
// Value for an instant one.
type promSeries struct {
	Metric map[string]string `json:"metric"`
	Values [][2]any          `json:"values"`
	Value  [2]any            `json:"value"`
}

// last returns the series' last value.
func (s promSeries) last() (float64, bool) {
	if len(s.Values) > 0 {
		return sampleValue(s.Values[len(s.Values)-1])
	}
	return sampleValue(s.Value)
}

// sampleValue returns the value of a [time, "value"] pair.
func sampleValue(v [2]any) (float64, bool) {
	s, ok := v[1].(string)
	if !ok {
		return 0, false
	}
	f, err := strconv.ParseFloat(s, 64)
	return f, err == nil
}

// api calls the HTTP API at path and returns its data, or an error for a
// status other than success.
func (p *promServer) api(path string, params url.Values, data any) error {
	resp, err := p.http.Get(p.base + path + "?" + params.Encode())
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	var r struct {
		Status    string          `json:"status"`
		Error     string          `json:"error"`
		ErrorType string          `json:"errorType"`
		Warnings  []string        `json:"warnings"`
		Data      json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return fmt.Errorf("HTTP %d: %v: %.200s", resp.StatusCode, err, body)
	}
	if r.Status != "success" {
		return fmt.Errorf("status %q (HTTP %d): %s: %s", r.Status, resp.StatusCode, r.ErrorType, r.Error)
	}
	if len(r.Warnings) > 0 {
		return fmt.Errorf("warnings: %v", r.Warnings)
	}
	return json.Unmarshal(r.Data, data)
}

func (p *promServer) result(path string, params url.Values, want string) ([]promSeries, error) {
	var data struct {
		ResultType string       `json:"resultType"`
		Result     []promSeries `json:"result"`
	}
	if err := p.api(path, params, &data); err != nil {
		return nil, err
	}
	if data.ResultType != want {
		return nil, fmt.Errorf("result type %q, want %q", data.ResultType, want)
	}
	return data.Result, nil
}

// query runs an instant query at ts.
func (p *promServer) query(expr string, ts time.Time) ([]promSeries, error) {
	return p.result("/api/v1/query", url.Values{"query": {expr}, "time": {unix(ts)}}, "vector")
}

// queryRange runs a range query.
func (p *promServer) queryRange(expr string, start, end time.Time, step time.Duration) ([]promSeries, error) {
	return p.result("/api/v1/query_range", url.Values{
		"query": {expr}, "start": {unix(start)}, "end": {unix(end)}, "step": {strconv.FormatFloat(step.Seconds(), 'f', -1, 64)},
	}, "matrix")
}

// labelValues is Grafana's label_values(match, label).
func (p *promServer) labelValues(t *testing.T, label, match string) []string {
	t.Helper()
	var values []string
	if err := p.api("/api/v1/label/"+label+"/values", url.Values{"match[]": {match}}, &values); err != nil {
		t.Fatalf("label_values(%s, %s): %v", match, label, err)
	}
	return values
}

func unix(ts time.Time) string {
	return strconv.FormatFloat(float64(ts.UnixNano())/1e9, 'f', 3, 64)
}
