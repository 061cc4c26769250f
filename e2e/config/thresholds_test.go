package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mosk-qa/asap2-e2e/e2e/report"
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
	b.WriteString("thresholds:\n")
	metrics := report.ThresholdMetrics()
	for i, m := range metrics {
		path := "asap2"
		if m == report.MetricGain {
			path = ""
		}
		fmt.Fprintf(&b, "  - {name: r%d, profile: tcp-p1, path: %q, metric: %s, op: \">=\", value: 1}\n", i, path, m)
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
		if err := report.ValidateRule(report.ThresholdRule(th)); err != nil {
			t.Errorf("config accepts %+v but report rejects it: %v", th, err)
		}
	}
}
