package plan

import (
	"fmt"
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/config"
	"github.com/mosk-qa/asap2-e2e/e2e/evidence"
	"github.com/mosk-qa/asap2-e2e/e2e/fleet"
	"github.com/mosk-qa/asap2-e2e/e2e/iperf3"
)

// BudgetLine is one step of a run and the longest it can take under the
// config, with the rule that gave the number.
type BudgetLine struct {
	Step  string
	Bound time.Duration
	Rule  string
}

// Budget is the wall-time allowance of a whole run of the performance
// suite (or of the fleet suite, per pair) under a config: `make e2e` gives it to Ginkgo as --timeout. Every
// step already has its own bound (a named interval, or one derived from the
// profile), so this is only the backstop for a bound that is missing: it
// must never cut a run that keeps to its bounds, and it must stop one that
// does not within minutes of when a healthy run would have ended, not hours
// (a fixed 6h did).
type Budget struct {
	Lines []BudgetLine
	Total time.Duration
}

// budgetMargin is added to a budget's total: process start, compilation
// of the suite, the reports.
const budgetMargin = 10 * time.Minute

// RunBudget is the allowance of a run under cfg, step by step: the waits
// whose length depends on the cloud (boot, SSH, deletes) at their bounds;
// every measured window and evidence flow at its length plus the
// iperf_server interval (servers listening, then exiting); and, because any
// one step may run to its own bound and fail there without ending the run
// (later profiles still run), the longest such bound once more.
func RunBudget(cfg *config.Config) Budget {
	iv := func(name string) time.Duration { return cfg.Interval(name).Timeout }
	cmd, listen := iv(config.IntervalCommand), iv(config.IntervalIperfServer)
	var b Budget
	add := func(step string, d time.Duration, rule string, args ...any) {
		b.Lines = append(b.Lines, BudgetLine{Step: step, Bound: d, Rule: fmt.Sprintf(rule, args...)})
		b.Total += d
	}
	// A fleet (suites/fleet) does per pair what the single run does once:
	// builds pairs fleet.cloud_parallel at a time, reaches them one after
	// another, checks them in rounds of pairs that share no node (a round
	// costs one pair's window), measures them one after another (isolated)
	// or together (concurrent), and records each node once.
	pairs, batches, measured, rounds, fleetRule, roundRule := 1, 1, 1, 1, "", ""
	if f := cfg.Fleet; f != nil {
		pairs, fleetRule = fleetPairs(f)
		rounds, roundRule = fleetRounds(f)
		batches = (pairs + max(f.CloudParallel, 1) - 1) / max(f.CloudParallel, 1)
		if f.Mode != config.FleetConcurrent {
			measured = pairs
		}
	}
	per := func(n int, rule string) string {
		if fleetRule == "" {
			return rule
		}
		return fmt.Sprintf("%d × (%s); %s", n, rule, fleetRule)
	}
	add("build the topology", time.Duration(batches)*(iv(config.IntervalServerActive)+iv(config.IntervalPortActive)), "%s", per(batches, "intervals server_active + port_active"))
	add("reach guests and hypervisors", time.Duration(pairs)*(iv(config.IntervalSSHReady)+2*iv(config.IntervalDataPath)+iv(config.IntervalHypervisorSSH)), "%s", per(pairs, "intervals ssh_ready + 2 × data_path + hypervisor_ssh"))
	add("record the environment", time.Duration(pairs)*cmd, "%s", per(pairs, "intervals.command"))
	if len(cfg.Offload.Checks) > 0 {
		flows := time.Duration(len(evidence.Flows))
		rule := fmt.Sprintf("command (flood ping) + %d evidence flows × (offload.flow_duration + traffic.omit + iperf_server)", len(evidence.Flows))
		if roundRule != "" {
			rule = fmt.Sprintf("%d × (%s); %s", rounds, rule, roundRule)
		}
		add("prove the path (offload checks)", time.Duration(rounds)*(cmd+flows*(cfg.Offload.FlowDuration+cfg.Traffic.Omit+listen)), "%s", rule)
	}
	profiles := SelectedProfiles(cfg)
	window := cfg.Traffic.Duration + cfg.Traffic.Omit + listen
	add("measure the profiles", time.Duration(measured*len(profiles)*cfg.Traffic.Repeats)*window,
		"%s", per(measured, fmt.Sprintf("%d profile(s) × %d repeat(s) × (traffic.duration + traffic.omit + iperf_server)", len(profiles), cfg.Traffic.Repeats)))
	for _, f := range families.All() { // families.go: each family's lines, in order
		if f.Value.budget != nil {
			f.Value.budget(cfg, listen, cmd, add)
		}
	}
	td := Teardown(cfg)
	add(td.Step, td.Bound, "%s", td.Rule)
	// One step that runs to its bound: the longest of a remote command, a
	// UDP run lost at setup every time (iperf3 waits 30 s per attempt), a
	// client cut at -t + -O + iperf_server.
	udpSetup := time.Duration(cfg.Traffic.UDPSetupRetries) * (iperf3.UDPSetupReplyWait + listen + cfg.Traffic.UDPSetupBackoff)
	longest, which := cmd, "intervals.command"
	if udpSetup > longest {
		longest, which = udpSetup, "traffic.udp_setup_retries × (iperf3's 30s setup wait + iperf_server + udp_setup_backoff)"
	}
	if window > longest {
		longest, which = window, "one window cut at its bound"
	}
	add("one step at its bound", longest, "%s", which)
	add("margin", budgetMargin, "process start, suite compilation, reports")
	return b
}

// Teardown is RunBudget's "tear down" step: the deletes' wait and the
// leak check's listing, at their bounds. deploy/'s Jobs give a pod at least
// this (and Ginkgo's grace periods) between SIGTERM and SIGKILL.
func Teardown(cfg *config.Config) BudgetLine {
	return BudgetLine{Step: "tear down",
		Bound: cfg.Interval(config.IntervalDelete).Timeout + cfg.Interval(config.IntervalAPIRetry).Timeout,
		Rule:  "intervals delete + api_retry (leak check)"}
}

// GinkgoGracePeriod is Ginkgo's --grace-period default: after an
// interrupt (SIGINT, SIGTERM) the running node, and each cleanup without
// a NodeTimeout of its own, get this long.
const GinkgoGracePeriod = 30 * time.Second

// AfterSIGTERM is the longest a run takes from SIGTERM to its exit, and the
// rule: Ginkgo's grace period for the interrupted node, for the topology
// evidence and for the reports (cleanups without a NodeTimeout), and the
// Teardown step. A pod's terminationGracePeriodSeconds must be at least
// this, or the kubelet's SIGKILL cuts the deletes (deploy/, dist's launcher).
func AfterSIGTERM(cfg *config.Config) (time.Duration, string) {
	td := Teardown(cfg)
	return 3*GinkgoGracePeriod + td.Bound, fmt.Sprintf("3 × Ginkgo's grace period %s (the interrupted node, the topology evidence, the reports) + tear down %s (%s)",
		GinkgoGracePeriod, td.Bound, td.Rule)
}

// GinkgoTimeout is the total rounded up to a whole minute: Ginkgo's
// --timeout for the run (make e2e, tools/budget -ginkgo-timeout, dist's
// launcher).
func (b Budget) GinkgoTimeout() time.Duration {
	total := b.Total.Round(time.Minute)
	if total < b.Total {
		total += time.Minute
	}
	return total
}

// fleetRounds is how many rounds of offload checks a fleet config's pairs
// take (fleet.Rounds over this shard's pairs), and the rule. A ring over
// a zone, an aggregate or all: 3, the most a ring ever takes.
func fleetRounds(f *config.Fleet) (int, string) {
	sh, err := fleet.ParseShard(f.Shard)
	if err != nil {
		sh = fleet.Shard{Index: 1, Count: 1}
	}
	var pairs []fleet.Pair
	switch {
	case f.Pairs == config.PairsExplicit:
		pairs, err = fleet.ShardPairs(f.ExplicitPairs, sh)
	case len(f.Nodes) > 0:
		pairs, err = fleet.ShardRing(f.Nodes, sh)
	default:
		return 3, "3 round(s) of pairs that share no node: a ring over Nova's nodes takes 2 or 3"
	}
	if err != nil || len(pairs) == 0 {
		n, _ := fleetPairs(f)
		return n, fmt.Sprintf("%d round(s): one a pair, the pairs not planned (%v)", n, err)
	}
	n := len(fleet.Rounds(pairs))
	return n, fmt.Sprintf("%d round(s) of pairs that share no node (fleet.Rounds over %d pair(s))", n, len(pairs))
}

// fleetPairs is how many pairs a fleet config measures, as far as the
// config says (this shard's share of them, rounded up), and the rule.
// A zone, an aggregate or all: the count is Nova's, unknown here.
func fleetPairs(f *config.Fleet) (int, string) {
	n, what := 0, ""
	switch {
	case f.Pairs == config.PairsExplicit:
		n, what = len(f.ExplicitPairs), "fleet.explicit_pairs"
	case len(f.Nodes) > 0:
		n, what = len(f.Nodes), "a ring over fleet.nodes"
	default:
		return 1, "fleet: the node count is Nova's, unknown before the run: give make e2e E2E_TIMEOUT"
	}
	if sh, err := fleet.ParseShard(f.Shard); err == nil && sh.Count > 1 {
		n = (n + sh.Count - 1) / sh.Count
		what += fmt.Sprintf(", shard %s", sh)
	}
	return max(n, 1), fmt.Sprintf("%d pair(s): %s", max(n, 1), what)
}
