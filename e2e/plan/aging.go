package plan

import (
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/config"
)

// addAgingBudget adds issue 38's aging and fragment profiles to a run's
// budget. The aging profile: its evidence flow, the max-idle and datapath
// reads, the idle (the longer of aging.flowtable_timeout and OVS's default
// max-idle, plus the margin: a hypervisor whose max-idle is longer
// lengthens it by the difference, which the harness logs), the dump after
// it and the restart. The fragment profile: one evidence flow.
func addAgingBudget(cfg *config.Config, listen, cmd time.Duration, add func(step string, d time.Duration, rule string, args ...any)) {
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
