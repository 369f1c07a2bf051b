package deploy

import (
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

const (
	rulesFile     = "prometheus/kiggy-rules.yml"
	ruleTestsFile = "prometheus/tests.yml"
	metricsDoc    = "../docs/METRICS.md"
)

// TestPrometheusRules checks the rules with promtool and runs their unit
// tests (prometheus/tests.yml) on synthetic series.
func TestPrometheusRules(t *testing.T) {
	p := promtool(t)
	for _, args := range [][]string{
		{"check", "rules", rulesFile},
		{"test", "rules", ruleTestsFile},
	} {
		out, err := exec.Command(p, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		t.Logf("promtool %s: %s", strings.Join(args, " "), strings.TrimSpace(string(out)))
	}
}

// documentedMetrics returns the series docs/METRICS.md lists, histograms
// with their _bucket, _sum and _count series.
func documentedMetrics(t *testing.T) map[string]bool {
	t.Helper()
	b, err := os.ReadFile(metricsDoc)
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("(?m)^\\| `([a-z_][a-z0-9_]*)` \\| ([a-z]+) \\|")
	names := map[string]bool{}
	for _, m := range row.FindAllStringSubmatch(string(b), -1) {
		names[m[1]] = true
		if m[2] == "histogram" {
			for _, s := range []string{"_bucket", "_sum", "_count"} {
				names[m[1]+s] = true
			}
		}
	}
	if len(names) < 50 {
		t.Fatalf("found only %d metrics in %s: has its table format changed?", len(names), metricsDoc)
	}
	return names
}

// TestRulesUseDocumentedMetrics: every series the rules, their annotations
// and their tests name is one kiggy serves (docs/METRICS.md, which
// cmd/kiggy's TestMetricsEndpoint keeps equal to /metrics).
func TestRulesUseDocumentedMetrics(t *testing.T) {
	doc := documentedMetrics(t)
	series := regexp.MustCompile(`\b(?:kiggy|go)_[a-z0-9_]+\b`)
	for _, f := range []string{rulesFile, ruleTestsFile} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for _, name := range series.FindAllString(string(b), -1) {
			if !doc[name] && !seen[name] {
				t.Errorf("%s names %s, which docs/METRICS.md does not list", f, name)
			}
			seen[name] = true
		}
		if len(seen) < 10 {
			t.Errorf("%s: only %d series found", f, len(seen))
		}
	}
}

type ruleFile struct {
	Groups []struct {
		Name  string `yaml:"name"`
		Rules []struct {
			Record      string            `yaml:"record"`
			Alert       string            `yaml:"alert"`
			Expr        string            `yaml:"expr"`
			Labels      map[string]string `yaml:"labels"`
			Annotations map[string]string `yaml:"annotations"`
		} `yaml:"rules"`
	} `yaml:"groups"`
}

type ruleTests struct {
	Tests []struct {
		AlertRuleTest []struct {
			Alertname string `yaml:"alertname"`
			ExpAlerts []any  `yaml:"exp_alerts"`
		} `yaml:"alert_rule_test"`
		PromQLExprTest []struct {
			Expr string `yaml:"expr"`
		} `yaml:"promql_expr_test"`
	} `yaml:"tests"`
}

// TestEveryAlertTested: each alert has a severity, a summary and a
// description, reads no recording rule, and tests.yml shows it firing and
// quiet; what tests.yml names exists in the rules.
func TestEveryAlertTested(t *testing.T) {
	var rf ruleFile
	var rt ruleTests
	for f, v := range map[string]any{rulesFile: &rf, ruleTestsFile: &rt} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := yaml.Unmarshal(b, v); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
	}
	fires, quiet, exprs := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, tc := range rt.Tests {
		for _, a := range tc.AlertRuleTest {
			if len(a.ExpAlerts) > 0 {
				fires[a.Alertname] = true
			} else {
				quiet[a.Alertname] = true
			}
		}
		for _, e := range tc.PromQLExprTest {
			exprs[e.Expr] = true
		}
	}
	var alerts, records []string
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			switch {
			case r.Alert != "":
				alerts = append(alerts, r.Alert)
				if s := r.Labels["severity"]; s != "critical" && s != "warning" {
					t.Errorf("%s: severity %q: want critical or warning", r.Alert, s)
				}
				if r.Annotations["summary"] == "" || r.Annotations["description"] == "" {
					t.Errorf("%s: needs a summary and a description", r.Alert)
				}
				if strings.Contains(r.Expr, "kiggy:") {
					t.Errorf("%s reads a recording rule (%s): groups are evaluated independently, so it would lag; inline the expression", r.Alert, r.Expr)
				}
				if !fires[r.Alert] || !quiet[r.Alert] {
					t.Errorf("%s: tests.yml must show it firing (%v) and quiet (%v)", r.Alert, fires[r.Alert], quiet[r.Alert])
				}
			case r.Record != "":
				records = append(records, r.Record)
				if !strings.HasPrefix(r.Record, "kiggy:") {
					t.Errorf("recording rule %s: name it kiggy:<what>:<window> (Prometheus's level:metric:operations)", r.Record)
				}
			}
		}
	}
	for name := range fires {
		if !contains(alerts, name) {
			t.Errorf("tests.yml tests %s, which is not a rule", name)
		}
	}
	for e := range exprs {
		if strings.HasPrefix(e, "kiggy:") && !contains(records, e) {
			t.Errorf("tests.yml evaluates %s, which is not a recording rule", e)
		}
	}
	sort.Strings(alerts)
	t.Logf("%d alerts: %s; %d recording rules", len(alerts), strings.Join(alerts, ", "), len(records))
	if len(alerts) < 8 || len(records) < 5 {
		t.Fatalf("%d alerts and %d recording rules: the file did not parse as expected", len(alerts), len(records))
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
