package plan

import (
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/config"
	"github.com/mosk-qa/asap2-e2e/e2e/evidence"
	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

func init() {
	families.Register(50, family{budget: func(cfg *config.Config, listen, _ time.Duration, add adder) { addFailoverBudget(cfg, listen, add) }}, results.FamilyFailover)
}

// addFailoverBudget adds the failover profile (config failover): its
// window, five bond reads and four commands (each at most a remote
// command's bound), and the re-offload after the failover and after the
// restore, each up to failover.reoffload_wait plus one evidence window
// that starts just before the bound.
func addFailoverBudget(cfg *config.Config, listen time.Duration, add adder) {
	fc := cfg.Failover
	if !fc.Enabled {
		return
	}
	cmd := cfg.Interval(config.IntervalCommand).Timeout
	window := cmd + time.Duration(len(evidence.Flows))*(fc.EvidenceFlow+cfg.Traffic.Omit+listen)
	add("measure the bond failover", fc.Duration+listen+9*cmd+2*(fc.ReoffloadWait+window),
		"failover.duration + iperf_server + 9 × command (5 bond reads, 4 commands) + 2 × (failover.reoffload_wait + one evidence window: command + %d flows × (failover.evidence_flow + traffic.omit + iperf_server))", len(evidence.Flows))
}
