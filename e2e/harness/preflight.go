package harness

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/mosk-qa/asap2-e2e/e2e/config"
	"github.com/mosk-qa/asap2-e2e/e2e/offload"
	"github.com/mosk-qa/asap2-e2e/e2e/remote"
	"github.com/mosk-qa/asap2-e2e/e2e/remote/kubeaccess"
	"github.com/mosk-qa/asap2-e2e/e2e/results"
	"github.com/mosk-qa/asap2-e2e/fixtures"
)

// Preflight decides, before the first create, everything that can be
// decided then (issue 36): the project's compute and network quotas
// against what pairs pairs will create (fixtures.CheckQuota), and the host
// tools where the hypervisor commands will run (PreflightTools; targets:
// a fleet's nodes, nil for a single pair). Every problem at once; a
// refused run has created nothing. Its time is the breakdown's preflight.
func (run *Run) Preflight(ctx context.Context, pairs int, targets []kubeaccess.Target) error {
	stop := run.Timings.Track(results.PhasePreflight)
	defer stop()
	var probs []string
	run.checkAPILatency(ctx, pairs)
	if err := run.checkQuota(ctx, pairs); err != nil {
		probs = append(probs, err.Error())
	}
	if err := run.PreflightTools(ctx, targets); err != nil {
		probs = append(probs, err.Error())
	}
	if len(probs) == 0 {
		return nil
	}
	return fmt.Errorf("%s: preflight refused the run before anything was created (%d problem(s)):\n  %s", run.Config.File, len(probs), strings.Join(probs, "\n  "))
}

// callsPerPair is about how many API calls a pair costs a run: a single
// pair's run on the lab made 109 (its api.log, 2026-12-05), with few polls;
// a real cloud's slower boots add polls.
const callsPerPair = 110

// checkAPILatency measures the tenant APIs' round trip, logs it, records
// it in results.json and warns when it is slow (fixtures.SlowAPI): with the
// cost to a run of pairs pairs, so the engineer knows before the first
// create why provisioning will crawl. It never refuses the run.
func (run *Run) checkAPILatency(ctx context.Context, pairs int) {
	if run.Clients == nil || run.Clients.Tenant == nil {
		return
	}
	ls := fixtures.APILatency(ctx, run.fixtureClients())
	var parts []string
	var rec []results.APILatency
	for _, l := range ls {
		parts = append(parts, l.String())
		r := results.APILatency{Service: l.Service, MedianMS: float64(l.Median().Microseconds()) / 1000, Calls: len(l.Samples)}
		if l.Err != nil {
			r.Error = l.Err.Error()
		}
		rec = append(rec, r)
	}
	if len(parts) > 0 {
		run.Logf("API latency: %s", strings.Join(parts, ", "))
	}
	for _, w := range fixtures.LatencyWarnings(ls, callsPerPair*max(pairs, 1)) {
		run.Logf("WARNING: %s", w)
	}
	if run.Results == nil {
		return
	}
	if err := run.Results.Update(func(r *results.Results) { r.Environment.APILatency = rec }); err != nil {
		run.Logf("results: %v", err)
	}
}

// checkQuota sets the tenant project's quotas against what the run will
// create; each row goes to harness.log, a quota the credentials may not
// read is a warning.
func (run *Run) checkQuota(ctx context.Context, pairs int) error {
	if run.Clients == nil || run.Clients.Tenant == nil {
		return nil
	}
	rep, err := fixtures.CheckQuota(ctx, fixtures.QuotaInput{Clients: run.fixtureClients(), Config: run.Config,
		ProjectID: run.Clients.Tenant.ProjectID, ProjectName: run.Clients.Tenant.ProjectName, Pairs: pairs})
	for _, w := range rep.Warnings {
		run.Logf("WARNING: quota: %s", w)
	}
	for _, row := range rep.Rows {
		verdict := "ok"
		if row.Short() {
			verdict = "SHORT"
		}
		run.Logf("quota: %s: %s", verdict, row)
	}
	if err != nil {
		return fmt.Errorf("quotas: %w", err)
	}
	return rep.Err()
}

// PreflightTools probes, before anything is built, the host tools
// (offload.HostTools) where the hypervisor commands will run, and refuses
// a required one missing where nothing can stand in for it, naming the
// node and the tool; ethtool is optional (offload.OptionalTools).
//
// With hypervisors.access: kubernetes, one OVS pod per distinct image
// (kubeaccess.PreflightTools): targets' pods (a fleet's nodes, each found
// or named as missing), else every node's that the Kubernetes preflight
// found; a missing tool is refused only without debug_image (the debug
// pod then runs it; its own tools are probed at connect). Over SSH, each
// of targets, else placement.hosts, else every hypervisors.hosts entry,
// is reached and probed; its connection is kept for Connect. Without
// offload checks nothing runs the tools, and nothing is probed.
func (run *Run) PreflightTools(ctx context.Context, targets []kubeaccess.Target) error {
	if len(run.Config.Offload.Checks) == 0 {
		return nil
	}
	if run.Config.Hypervisors.Access == config.HypervisorAccessKubernetes {
		return run.preflightKubeTools(ctx, targets)
	}
	names := make([]string, 0, len(targets))
	for _, t := range targets {
		names = append(names, t.Hypervisor)
	}
	if len(names) == 0 {
		names = run.Config.Placement.Hosts
	}
	if len(names) == 0 {
		names = slices.Sorted(maps.Keys(run.Config.Hypervisors.Hosts))
	}
	var probs []string
	for _, hv := range names {
		r, ok := run.Hypervisors[hv]
		if !ok {
			var err error
			if r, err = run.dialHypervisor(ctx, hv); err != nil {
				probs = append(probs, err.Error())
				continue
			}
			run.Hypervisors[hv] = r
		}
		probe, err := offload.ProbeTools(ctx, r)
		if err != nil {
			probs = append(probs, fmt.Sprintf("hypervisor %s: %v", hv, err))
			continue
		}
		required := probe.MissingRequired()
		if len(required) > 0 {
			probs = append(probs, fmt.Sprintf("hypervisor %s (%s) lacks %s: install them there (the offload checks run them over SSH)", hv, r.Name(), probe.Why(required)))
			continue
		}
		run.Logf("preflight: ok: host tools on hypervisor %s: %s", hv, listOrNone(probe.Found))
		noteOptional(run.Logf, hv, probe.Missing())
	}
	if len(probs) > 0 {
		return errors.New(strings.Join(probs, "\n  "))
	}
	return nil
}

// preflightKubeTools is PreflightTools over Kubernetes.
func (run *Run) preflightKubeTools(ctx context.Context, targets []kubeaccess.Target) error {
	if run.kube == nil {
		return nil // no cluster opened: PreflightKube refused already
	}
	var probs []string
	pods := run.ovsPods
	if len(targets) > 0 {
		pods = nil
		for _, t := range targets {
			r, m, err := run.kube.Runner(ctx, t)
			if err != nil {
				probs = append(probs, fmt.Sprintf("%s: its node's OVS pod: %v", t, err))
				continue
			}
			run.Logf("preflight: ok: %s → node %s (%s), %s", t, r.Pod().Node, m.How, r.Pod())
			pods = append(pods, r.Pod())
		}
	}
	probe := func(ctx context.Context, r remote.Runner) (kubeaccess.ProbedTools, error) {
		return offload.ProbeTools(ctx, run.bounded(r))
	}
	for _, ch := range kubeaccess.PreflightTools(ctx, run.kube, pods, run.Config.Hypervisors.Kubernetes.DebugImage, probe) {
		if ch.Problem != "" {
			probs = append(probs, ch.Problem)
			run.Logf("preflight: FAILED: %s", ch.Problem)
		} else {
			run.Logf("preflight: ok: %s", ch.What)
		}
	}
	if len(probs) > 0 {
		return errors.New(strings.Join(probs, "\n  "))
	}
	return nil
}
