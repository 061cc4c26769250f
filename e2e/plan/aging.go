package plan

import (
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/config"
	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

const (
	// artifactsPerDump is one `dpctl/dump-flows -m` of a real hypervisor
	// kept whole (the aging profile's dumps after the idle and after the
	// restart, every intervals.aging_sample.poll on two hypervisors): a
	// share of artifactsPerFlow, whose flow holds about 16 outputs.
	artifactsPerDump = 512 << 10
)

func init() {
	families.Register(40, family{budget: func(cfg *config.Config, listen, cmd time.Duration, add adder) { addAgingBudget(cfg, listen, cmd, add) }, artifacts: agingArtifacts}, results.FamilyAging, results.FamilyFragments)
}

// addAgingBudget adds issue 38's aging and fragment profiles to a run's
// budget. The aging profile: its evidence flow, the max-idle and datapath
// reads, the idle (the longer of aging.flowtable_timeout and OVS's default
// max-idle, plus the margin: a hypervisor whose max-idle is longer
// lengthens it by the difference, which the harness logs), the dump after
// it and the restart. The fragment profile: one evidence flow.
func addAgingBudget(cfg *config.Config, listen, cmd time.Duration, add adder) {
	flow := cfg.Offload.FlowDuration + cfg.Traffic.Omit + listen
	if a := cfg.Aging; a.Enabled {
		idle := max(a.FlowtableTimeout, 10*time.Second) + a.IdleMargin
		add("aging and re-offload", flow+3*cmd+idle+a.RestartDuration+listen,
			"offload.flow_duration + traffic.omit + iperf_server (the first flow) + 3 × intervals.command (max-idle, datapath, the dump after the idle) + max(aging.flowtable_timeout, OVS's default max-idle 10s) + aging.idle_margin + aging.restart_duration + iperf_server")
	}
	if cfg.Fragments.Enabled {
		add("fragmented UDP", flow, "offload.flow_duration + traffic.omit + iperf_server")
	}
}

// agingArtifacts: on a single pair with checks, the aging profile's first
// flow and the fragment profile's flow are evidence flows; the aging
// profile's dumps before and after the idle and every poll after the
// restart.
func agingArtifacts(cfg *config.Config) artifactShare {
	var a artifactShare
	if cfg.Fleet != nil || len(cfg.Offload.Checks) == 0 {
		return a
	}
	dumps := 0
	if cfg.Aging.Enabled {
		a.flows++
		if iv := cfg.Interval(config.IntervalAgingSample); iv.Poll > 0 {
			dumps = 2 * (2 + int(iv.Timeout/iv.Poll) + 1)
		}
	}
	if cfg.Fragments.Enabled {
		a.flows++
	}
	a.terms = []artifactTerm{{n: int64(dumps), each: artifactsPerDump, words: "%d aging dumps × 512 KiB"}}
	return a
}
