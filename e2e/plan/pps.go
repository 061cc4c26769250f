package plan

import (
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/config"
	"github.com/mosk-qa/asap2-e2e/e2e/iperf3"
	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

func init() {
	families.Register(10, family{budget: func(cfg *config.Config, listen, _ time.Duration, add adder) { addPPSBudget(cfg, listen, add) }}, results.FamilyPPS)
}

// addPPSBudget adds the small-packet profiles and the searches to a run's
// budget (RunBudget): each window at its length plus the iperf_server
// interval, each search at its trial budget.
func addPPSBudget(cfg *config.Config, listen time.Duration, add adder) {
	n := 0
	for _, id := range iperf3.PPSIDs() {
		if Selected(cfg, id) {
			n++
		}
	}
	if n > 0 {
		window := cfg.Traffic.Duration + cfg.Traffic.Omit + listen
		add("measure the small-packet profiles", time.Duration(n*cfg.Traffic.Repeats)*window,
			"%d pps profile(s) × %d repeat(s) × (traffic.duration + traffic.omit + iperf_server)", n, cfg.Traffic.Repeats)
	}
	sc := cfg.PPS.Search
	if sc.MaxTrials <= 0 { // a config built without the pps section (tests)
		return
	}
	searches := len(sc.Searches())
	add("the zero-loss searches", time.Duration(searches*sc.MaxTrials)*(sc.TrialDuration+listen),
		"%d search(es) × pps.search.max_trials %d × (pps.search.trial_duration + iperf_server)", searches, sc.MaxTrials)
}
