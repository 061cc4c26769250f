package plan

import (
	"strings"
	"testing"
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/config"
)

func TestFailoverBudget(t *testing.T) {
	cfg := &config.Config{Intervals: map[string]config.Interval{config.IntervalCommand: {Timeout: time.Minute, Poll: time.Second}}}
	var steps []string
	var total time.Duration
	add := func(step string, d time.Duration, rule string, args ...any) { steps = append(steps, step); total += d }
	addFailoverBudget(cfg, 30*time.Second, add)
	if len(steps) != 0 {
		t.Fatalf("disabled: %v", steps)
	}
	cfg.Failover = config.Failover{Enabled: true, Duration: 13 * time.Second, ReoffloadWait: time.Minute, EvidenceFlow: 12 * time.Second}
	addFailoverBudget(cfg, 30*time.Second, add)
	// 13 + 30 + 9×60 + 2×(60 + 60 + 2×(12+30)) s
	if want := (13 + 30 + 540 + 2*(60+60+84)) * time.Second; len(steps) != 1 || !strings.Contains(steps[0], "failover") || total != want {
		t.Errorf("%v %s, want %s", steps, total, want)
	}
}
