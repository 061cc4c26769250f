package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// Every metric e2e/report evaluates is accepted by the validation, and a
// rule the validation accepts is never "invalid" when report evaluates it.
// The file is testdata/minimal.yaml (written for TestDefaults) plus one
// rule per metric, generated here.
func TestThresholdMetricsMatchReport(t *testing.T) {
	fakeHome(t)
	base, err := os.ReadFile("testdata/minimal.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.Write(base)
	b.WriteString("traffic:\n  repeats: 2\n")                                  // cv_percent needs repeats
	b.WriteString("connections:\n  counts: [100]\n")                           // the connection metrics name a count
	b.WriteString("rule_scale:\n  counts: [1000]\nchurn:\n  duration: 120s\n") // rules_per_second and churn_count name their profiles
	b.WriteString("failover:\n  enabled: true\n")                              // failover_outage_ms names the profile
	b.WriteString("thresholds:\n")
	metrics := results.ThresholdMetrics()
	for i, m := range metrics {
		path, profile := "asap2", "tcp-p1"
		if m == results.MetricGain {
			path = ""
		}
		if results.IsSearchMetric(m) { // a search's rate names the search
			profile = results.SearchID(map[bool]string{true: results.SearchNDR, false: results.SearchPDR}[m == results.MetricNDR], 1, 64)
		} else if results.IsLatencyMetric(m) {
			profile = results.LatencyIdleID
		} else if results.IsConnectionMetric(m) {
			profile = results.ConnectionProfileID(100)
		} else if m == results.MetricRulesPerSecond {
			profile = results.RuleScaleProfileID(1000)
		} else if m == results.MetricChurnCount {
			profile = results.ChurnProfileID
		} else if results.IsAgingMetric(m) {
			profile = results.AgingProfileID
		} else if m == results.MetricFailoverOutage {
			profile = results.FailoverProfileID
		}
		fmt.Fprintf(&b, "  - {name: r%d, profile: %s, path: %q, metric: %s, op: \">=\", value: 1}\n", i, profile, path, m)
	}
	file := filepath.Join(t.TempDir(), "thresholds.yaml")
	if err := os.WriteFile(file, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(file, WithGetenv(noEnv))
	if err != nil {
		t.Fatalf("a rule on each of %v must validate:\n%v", metrics, err)
	}
	if len(cfg.Thresholds) != len(metrics) {
		t.Fatalf("loaded %d rules, want %d", len(cfg.Thresholds), len(metrics))
	}
	for _, th := range cfg.Thresholds {
		if err := results.ValidateRule(results.ThresholdRule(th)); err != nil {
			t.Errorf("config accepts %+v but report rejects it: %v", th, err)
		}
	}
}

// An IPv6 data network with the representor check would make that check
// unable to fail (its capture counts IPv4 only); the file is
// testdata/minimal.yaml with an IPv6 CIDR and the representor check,
// generated here.
func TestIPv6NetworkWithRepresentorCheck(t *testing.T) {
	fakeHome(t)
	base, err := os.ReadFile("testdata/minimal.yaml")
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Replace(string(base), "cidr: 198.18.10.0/24", "cidr: fd00:198:18::/64", 1)
	text = strings.Replace(text, "checks: []", "checks: [tc, representor]\n  partial_proof: true", 1)
	text = strings.Replace(text, "cloud:\n  tenant: lab\n", "cloud:\n  tenant: lab\n  admin: lab-admin\n", 1)
	text += "hypervisors:\n  hosts:\n    cmp-1: {address: 198.18.20.11}\n    cmp-2: {address: 198.18.20.12}\n"
	file := filepath.Join(t.TempDir(), "v6.yaml")
	if err := os.WriteFile(file, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = Load(file, WithGetenv(noEnv))
	assertMessages(t, err, []string{
		file + `: network.cidr: must be IPv4 when offload.checks has representor (its capture counts IPv4 packets only: an IPv6 flow would always look offloaded), got "fd00:198:18::/64"`,
	}, "")
	// Without the representor check an IPv6 network is fine.
	text = strings.Replace(text, "checks: [tc, representor]", "checks: [tc, dpctl]", 1)
	if err := os.WriteFile(file, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(file, WithGetenv(noEnv)); err != nil {
		t.Errorf("IPv6 with tc and dpctl: %v", err)
	}
}
