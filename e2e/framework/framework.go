// Package framework is the thin Ginkgo glue of the suites: it turns the
// harness's plain Go steps into suite setup with cleanups registered the
// Ginkgo way (DeferCleanup, last in first out, also on failure and on
// SIGINT/SIGTERM).
//
// SetUp is the BeforeSuite body of the single-pair suites: it skips the suite
// without a target and with a config that has a fleet section, and registers
// the final steps (finalSteps), the last of them report.WriteRun on the closed
// results file. SetUpFleet is the fleet suite's: plan, provision, connect,
// each node's environment, with the same final steps and the pairs' results
// files finished by Fleet.Close. ProfileLabels are the throughput specs'
// labels; Cleaner runs fixtures' deletes through DeferCleanup; ExpectNoError
// fails a step with one sentence, not Gomega's dump of the error.
package framework

import (
	"context"
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/mosk-qa/asap2-e2e/e2e/config"
	"github.com/mosk-qa/asap2-e2e/e2e/harness"
	"github.com/mosk-qa/asap2-e2e/e2e/iperf3"
	"github.com/mosk-qa/asap2-e2e/e2e/remote/kubeaccess"
	"github.com/mosk-qa/asap2-e2e/e2e/report"
	"github.com/mosk-qa/asap2-e2e/fixtures"
)

// Cleaner hands every delete the fixtures register to Ginkgo's
// DeferCleanup, bounded by the config's `delete` interval. Each delete is
// on the interrupt ledger until it succeeds (see watchInterrupts).
func Cleaner(cfg *config.Config) fixtures.Cleaner {
	timeout := cfg.Interval(config.IntervalDelete).Timeout
	return fixtures.CleanerFunc(func(what string, fn func(ctx context.Context) error) {
		id := deletes.add(what)
		DeferCleanup(func(ctx SpecContext) {
			err := fn(ctx)
			if err == nil {
				deletes.done(id)
			}
			ExpectNoError(err, "deleting %s", what)
		}, NodeTimeout(timeout))
	})
}

// Steps selects what SetUp does after provisioning, and how it reaches a
// Kubernetes cluster.
type Steps struct {
	Connect     bool // SSH to guests and hypervisors
	Environment bool // record versions and NIC facts
	// Kubernetes opens the cluster of hypervisors.access: kubernetes: the
	// suites pass kube.Open (harness.Options.Kubernetes), so that the
	// framework and the harness link no Kubernetes client.
	Kubernetes kubeaccess.Open
}

// SetUp is a suite's BeforeSuite body: it starts the run, registers the
// final steps (close the results file, leak check, reports) so they run
// after every delete, then provisions and verifies the run's one pair. A
// config with a fleet section is the fleet suite's (SetUpFleet): the
// single-pair suites skip it.
func SetUp(ctx SpecContext, steps Steps) (*harness.Run, *harness.Pair) {
	run := start(ctx, steps)
	if run.Config.Fleet != nil {
		ExpectNoError(run.Close(), "finishing the results file")
		Skip(fmt.Sprintf("%s has a fleet section: suites/fleet runs it (make e2e SUITES=./suites/fleet CONFIG=%s)", run.Config.File, run.Config.File))
	}
	finalSteps(run)

	pair, err := run.ProvisionPair(ctx, Cleaner(run.Config))
	// Registered after every delete, so it runs before them: what the cloud
	// says about the servers and ports (fault, host, binding, console log)
	// is saved while they still exist, also when provisioning failed.
	DeferCleanup(func(ctx SpecContext) { run.CollectTopologyEvidence(ctx) })
	ExpectNoError(err, "building the topology")
	if steps.Connect {
		ExpectNoError(pair.Connect(ctx), "connecting to the guests and hypervisors")
	}
	if steps.Environment {
		ExpectNoError(pair.CollectEnvironment(ctx), "recording the environment")
	}
	return run, pair
}

// SetUpFleet is the fleet suite's BeforeSuite body (config fleet:): as
// SetUp, with the fleet's steps — the nodes resolved and the pairs planned
// (harness.Run.PlanFleet), every pair provisioned and verified on its
// nodes, every pair connected, each node's environment and drift recorded
// once — and the same final steps (the fleet's pairs' results files are
// finished with the run's). A config without a fleet section is the
// single-pair suites': this one skips it.
func SetUpFleet(ctx SpecContext, steps Steps) *harness.Fleet {
	run := start(ctx, steps)
	if run.Config.Fleet == nil {
		ExpectNoError(run.Close(), "finishing the results file")
		Skip(fmt.Sprintf("%s has no fleet section: suites/perf and suites/smoke run a single pair; see docs/CONFIG.md, fleet", run.Config.File))
	}
	finalSteps(run)
	f, err := run.PlanFleet(ctx)
	ExpectNoError(err, "planning the fleet")
	err = f.Provision(ctx, Cleaner(run.Config))
	DeferCleanup(func(ctx SpecContext) { run.CollectTopologyEvidence(ctx) })
	ExpectNoError(err, "building the fleet's topology")
	if steps.Connect {
		ExpectNoError(f.Connect(ctx), "connecting to the fleet's guests and hypervisors")
	}
	if steps.Environment {
		ExpectNoError(f.CollectEnvironment(ctx), "recording each node's environment")
	}
	return f
}

// start loads the config and starts the run; with no config the suite is skipped.
func start(ctx SpecContext, steps Steps) *harness.Run {
	cfgPath := harness.ConfigPathFromEnv()
	if cfgPath == "" {
		// `go test ./...` from the module root meets the suites with no cloud: they
		// have nothing to run against, which is not a failure.
		Skip(fmt.Sprintf("no target cloud: set %s to a harness config file (make e2e CONFIG=FILE, or make lab for the local lab); every spec of this suite is skipped", harness.EnvConfig))
	}
	run, err := harness.Start(ctx, harness.Options{ConfigPath: cfgPath, Console: GinkgoWriter, Kubernetes: steps.Kubernetes})
	ExpectNoError(err, "starting the run")
	return run
}

// finalSteps registers, before anything is built so that they run after
// every delete: the leak check, then closing the results files (the
// pairs' and the run's: Run.Close), then the reports from the closed file.
func finalSteps(run *harness.Run) {
	// Registered first, so they run last: after every delete below.
	stopWatching := watchInterrupts(run)
	// Last of all: the reports, from the finished results file.
	DeferCleanup(func(ctx SpecContext) {
		if lost := run.OutputLost(); lost != nil {
			fmt.Fprintf(GinkgoWriter, "reports not written: %v\n", lost)
			return
		}
		files, err := report.WriteRun(run.Dir, run.Results.Snapshot())
		ExpectNoError(err, "writing the reports")
		for _, f := range files {
			fmt.Fprintf(GinkgoWriter, "report: %s\n", f)
		}
	})
	// Then, before them: close the results file (timings with teardown, end time).
	DeferCleanup(func() {
		stopWatching()
		ExpectNoError(run.Close(), "finishing the results file")
	})
	DeferCleanup(func(ctx SpecContext) {
		left, err := run.LeakCheck(ctx)
		ExpectNoError(err, "listing what run %s left in the cloud", run.RunID)
		if run.Config.Run.KeepTopology {
			fmt.Fprintf(GinkgoWriter, "kept on purpose (keep_topology): %s\n", harness.DescribeLeft(left))
			return
		}
		Expect(left.AnythingLeft()).To(BeFalse(),
			"run %s left resources behind: %s (remove them with: %s)",
			run.RunID, harness.DescribeLeft(left), fixtures.SweepHint(run.Config.File, run.RunID, runGroup(run.Config)))
	}, NodeTimeout(run.Config.Interval(config.IntervalDelete).Timeout))
}

// ProfileLabels selects a throughput profile by protocol, by "throughput"
// and by its own id: --label-filter tcp-p15 runs that profile alone. "cpu":
// every throughput profile carries the hypervisors' CPU readings around
// its windows (traffic.host_cpu, on by default).
func ProfileLabels(p iperf3.Profile) Labels {
	proto := "tcp"
	if p.Protocol == iperf3.UDP {
		proto = "udp"
	}
	return Label(proto, "throughput", "cpu", p.ID)
}

// runGroup is the fleet's run group of cfg ("" for a single pair's run or
// an unsharded fleet without one): its shards' leftovers are swept by it.
func runGroup(cfg *config.Config) string {
	if cfg == nil || cfg.Fleet == nil {
		return ""
	}
	return cfg.Fleet.RunGroup
}
