package harness

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/mosk-qa/asap2-e2e/e2e/config"
	"github.com/mosk-qa/asap2-e2e/e2e/results"
	"github.com/mosk-qa/asap2-e2e/fixtures"
)

// ThresholdsFor evaluates the configured thresholds that name profile id on
// this run's path (gain rules need a baseline file and are left to the
// report command) and records them in the results file.
func (pair *Pair) ThresholdsFor(id string) ([]results.ThresholdResult, error) {
	var rules []results.ThresholdRule
	for _, t := range pair.run.Config.Thresholds {
		if t.Profile != id || t.Metric == results.MetricGain {
			continue
		}
		if t.Path != "" && t.Path != string(pair.run.Config.Run.ExpectedPath) {
			continue
		}
		rules = append(rules, results.ThresholdRule(t))
	}
	if len(rules) == 0 {
		return nil, nil
	}
	snap := pair.Results.Snapshot()
	got := results.EvaluateThresholds(rules, &snap)
	return got, pair.Results.Update(func(r *results.Results) { r.Thresholds = append(r.Thresholds, got...) })
}

// LeakCheck lists, from the cloud, every resource that still carries this
// run's id. It is the suite's last word: anything listed is a leak (unless
// keep_topology is set, when it lists what was kept).
func (run *Run) LeakCheck(ctx context.Context) (*fixtures.SweepReport, error) {
	rep, err := fixtures.Sweep(ctx, fixtures.SweepInput{
		Clients:  run.fixtureClients(),
		Prefix:   run.Config.Run.NamePrefix,
		RunID:    run.RunID,
		Interval: run.Config.Interval(config.IntervalDelete),
		Logf:     run.Logf,
	})
	if err != nil {
		return rep, err
	}
	// The node debug pods of hypervisors.access: kubernetes, by the run's
	// label (kubehost.go).
	pods, err := run.leakedDebugPods(ctx)
	rep.Resources = append(rep.Resources, pods...)
	rep.Left += len(pods)
	if err != nil {
		return rep, fmt.Errorf("leak check of the node debug pods: %w", err)
	}
	return rep, nil
}

// DescribeLeft is a one-line list of what a sweep report found.
func DescribeLeft(r *fixtures.SweepReport) string {
	var parts []string
	for _, res := range r.Resources {
		parts = append(parts, fmt.Sprintf("%s %s (%s)", res.Kind, res.Name, res.ID))
	}
	return strings.Join(parts, ", ")
}

// ConfigPathFromEnv returns the harness config path from ASAP2E2E_CONFIG.
func ConfigPathFromEnv() string { return os.Getenv(EnvConfig) }
