package harness

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/evidence"
	"github.com/mosk-qa/asap2-e2e/e2e/fleet"
	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// RunOffloadChecks runs every reached pair's evidence window
// (Pair.RunOffloadChecks: the flood ping, then the sustained TCP and
// UDP flows with every check on both hypervisors) in rounds of pairs that
// share no node (fleet.Rounds: 2 rounds for an even ring, 3 for an odd
// one), the rounds one after the other, in both modes. A window's checks
// read only its own pair's two hypervisors while its flows run, so the
// pairs of a round run theirs at once: each flow's window opens for all of
// them by the start barrier (a Gate, as the concurrent profiles' windows)
// when every pair's servers listen, and closes when every pair's clients
// returned; a pair's look after a failed flow, and a pair that stopped
// early, wait until the round's window is over. Each verdict goes into the
// fleet section attributed to the node it was taken on (a node is judged
// by its own verdicts in every pair it is in); each round — its pairs,
// its flows' windows, its start skew — is recorded, the file rewritten
// after it, and a line says each pair is done. The error joins the pairs'
// failures, each led by its pair; the verdicts are judged by CheckVerdict.
func (f *Fleet) RunOffloadChecks(ctx context.Context) error {
	stop := f.Timings.Track(results.PhaseChecks)
	defer stop()
	var live []*Pair
	var pairs []fleet.Pair
	for _, p := range f.Pairs {
		if p.Broken == nil {
			live = append(live, p)
			pairs = append(pairs, p.Nodes)
		}
	}
	rounds := fleet.Rounds(pairs)
	var plan []string
	f.mu.Lock()
	f.section.Rounds = nil
	for k, r := range rounds {
		fr := results.FleetRound{Round: k + 1, Shard: f.Shard.String(), FlowSeconds: f.Config.Offload.FlowDuration.Seconds()}
		for _, i := range r {
			fr.Pairs = append(fr.Pairs, live[i].ID)
		}
		f.section.Rounds = append(f.section.Rounds, fr)
		plan = append(plan, fmt.Sprintf("round %d %s", k+1, strings.Join(fr.Pairs, ", ")))
	}
	f.mu.Unlock()
	f.Logf("offload checks: %d pair(s) in %d round(s) of pairs that share no node, each round's windows together: %s",
		len(live), len(rounds), strings.Join(plan, "; "))
	errs := []error{f.write()}
	for k, r := range rounds {
		if err := ctx.Err(); err != nil {
			errs = append(errs, err)
			break
		}
		members := make([]*Pair, len(r))
		for j, i := range r {
			members[j] = live[i]
		}
		errs = append(errs, f.checkRound(ctx, k, len(rounds), members))
	}
	return errors.Join(errs...)
}

// checkRound runs round k's pairs' evidence windows at once behind one
// Gate (see RunOffloadChecks), then records their verdicts and the round.
func (f *Fleet) checkRound(ctx context.Context, k, of int, members []*Pair) error {
	names := make([]string, len(members))
	for i, p := range members {
		names[i] = p.Nodes.String()
	}
	f.Logf("checks round %d/%d: %d pair(s) at once (%s)", k+1, of, len(members), strings.Join(names, ", "))
	fcs := make([][]evidence.FlowCheck, len(members))
	errs := make([]error, len(members))
	g := atOnce(members, func(g *Gate, i int, p *Pair) {
		fcs[i], errs[i] = p.runOffloadChecks(ctx, gateBarrier{g: g, party: p.party})
		// The flows it did not run (its window refused, a flow failed): the
		// others no longer wait for it, and it is done only once no window
		// of the round runs.
		if qerr := g.Quit(ctx, p.party); qerr != nil && errs[i] == nil {
			errs[i] = qerr
		}
	})
	var failed []error
	for i, p := range members {
		f.addChecks(p, fcs[i])
		line := checkSummary(fcs[i])
		if errs[i] != nil {
			failed = append(failed, fmt.Errorf("%s: %w", p.label, errs[i]))
			line += "; the window FAILED: " + errs[i].Error()
		}
		f.Logf("%s checks done (round %d/%d): %s", f.progress(p), k+1, of, line)
	}
	f.recordRound(k, of, members, g.Windows(), failed)
	return errors.Join(append(failed, f.write())...)
}

// recordRound stores round k's flow windows, its start skew and its
// failures in the fleet section, and says how the windows went.
func (f *Fleet) recordRound(k, of int, members []*Pair, ws []Window, failed []error) {
	id := map[string]string{}
	for _, p := range members {
		id[p.party] = p.ID
	}
	goal := results.SkewGoal(f.Config.Offload.FlowDuration.Seconds())
	var lines []string
	f.mu.Lock()
	r := &f.section.Rounds[k]
	for _, w := range ws {
		rw := results.FleetRoundWindow{Flow: w.Key, Start: w.Open.UTC(), SkewSeconds: w.Skew().Seconds()}
		end := "not closed"
		if !w.Close.IsZero() {
			c := w.Close.UTC()
			rw.End, end = &c, c.Format("15:04:05.000")
		}
		for _, p := range w.Pairs {
			rw.Pairs = append(rw.Pairs, id[p])
		}
		r.Windows = append(r.Windows, rw)
		r.SkewSeconds = max(r.SkewSeconds, rw.SkewSeconds)
		line := fmt.Sprintf("%s window of %d pair(s) from %s to %s, start skew %s", w.Key, len(w.Pairs), rw.Start.Format("15:04:05.000"), end, w.Skew().Round(time.Millisecond))
		if rw.SkewSeconds > goal {
			line += fmt.Sprintf(" (over the goal of %s: max(1 s, 10 %% of offload.flow_duration))", time.Duration(goal*float64(time.Second)))
		}
		lines = append(lines, line)
	}
	var msgs []string
	for _, err := range failed {
		msgs = append(msgs, err.Error())
	}
	r.Error = strings.Join(msgs, "; ")
	f.mu.Unlock()
	if len(lines) == 0 {
		lines = append(lines, "no flow window opened")
	}
	f.Logf("checks round %d/%d: %s", k+1, of, strings.Join(lines, "; "))
}

// gateBarrier is one pair's side of its checks round's Gate
// (evidence.Barrier): each evidence flow is a round of the gate, keyed by
// the flow's name.
type gateBarrier struct {
	g     *Gate
	party string
}

func (b gateBarrier) Start(ctx context.Context, flow string) error {
	return b.g.Start(ctx, flow, b.party)
}

func (b gateBarrier) Done(ctx context.Context, flow string) error {
	return b.g.Done(ctx, flow, b.party)
}

func (b gateBarrier) Leave(ctx context.Context, flow string) error {
	return b.g.Leave(ctx, flow, b.party)
}

// addChecks records pair p's verdicts, each on the node it was taken on.
func (f *Fleet) addChecks(p *Pair, fcs []evidence.FlowCheck) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, fc := range fcs {
		f.section.Checks = append(f.section.Checks, results.FleetCheck{
			Node: fc.Hypervisor, Pair: p.ID, Check: fc.Check.Name, Flow: fc.Flow, Verdict: fc.Check.Verdict, Reason: fc.Check.Reason,
		})
	}
}

// checkSummary counts verdicts per node: "compute1 6 offloaded; compute2
// 4 offloaded, 2 software".
func checkSummary(fcs []evidence.FlowCheck) string {
	counts := map[string]map[results.Verdict]int{}
	var nodes []string
	for _, fc := range fcs {
		if counts[fc.Hypervisor] == nil {
			counts[fc.Hypervisor] = map[results.Verdict]int{}
			nodes = append(nodes, fc.Hypervisor)
		}
		counts[fc.Hypervisor][fc.Check.Verdict]++
	}
	if len(nodes) == 0 {
		return "no verdict"
	}
	sort.Strings(nodes)
	var parts []string
	for _, n := range nodes {
		var vs []string
		for _, v := range []results.Verdict{results.VerdictOffloaded, results.VerdictSoftware, results.VerdictInconclusive} {
			if c := counts[n][v]; c > 0 {
				vs = append(vs, fmt.Sprintf("%d %s", c, v))
			}
		}
		parts = append(parts, n+" "+strings.Join(vs, ", "))
	}
	return strings.Join(parts, "; ")
}
