package harness

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/cloud"
	"github.com/mosk-qa/asap2-e2e/e2e/config"
	"github.com/mosk-qa/asap2-e2e/e2e/iperf3"
	"github.com/mosk-qa/asap2-e2e/e2e/plan"
	"github.com/mosk-qa/asap2-e2e/e2e/remote"
	"github.com/mosk-qa/asap2-e2e/e2e/remote/kubeaccess"
	"github.com/mosk-qa/asap2-e2e/e2e/results"
	"github.com/mosk-qa/asap2-e2e/fixtures"
)

// EnvConfig names the environment variable that points the suites at a
// harness config file (the Makefile's CONFIG=): config.EnvConfig.
const EnvConfig = config.EnvConfig

// ResultsFile is the name of the results JSON inside a run's directory.
const ResultsFile = "results.json"

// Options start a Run.
type Options struct {
	// ConfigPath is the harness config file.
	ConfigPath string
	// Console receives one-line progress messages (Ginkgo's writer in suites,
	// stderr in tools); every line also goes to <run dir>/harness.log.
	Console io.Writer
	// Getenv overrides os.Getenv (tests).
	Getenv func(string) string
	// Kubernetes opens the cluster of hypervisors.access: kubernetes
	// (kube.Open; a fake in tests). The harness imports no client-go: the
	// programs that reach a cluster pass it, and with that access and none
	// the run stops before anything is built.
	Kubernetes kubeaccess.Open
}

// Run is one run of the harness and what all its pairs share: its
// configuration, id, artifacts directory, cloud clients, results file,
// the hypervisors' connections (SSH, or the Kubernetes cluster), the log,
// the output directory's guard (outdir.go), the cleaner, and its Pairs —
// one for the single-pair suites (ProvisionPair), one per measured pair of
// a fleet (Fleet.Provision).
type Run struct {
	Config  *config.Config
	RunID   string
	Dir     string // <output_dir>/<run id>
	Clients *cloud.Clients
	Results *results.Writer
	Timings Timings
	// Pairs are the run's pairs, in the order they were built.
	Pairs []*Pair

	// Hypervisors maps a hypervisor name to its runner (SSH, or exec in its
	// node's OVS pod with hypervisors.access: kubernetes), shared by every
	// pair with a guest on it.
	Hypervisors map[string]remote.Runner
	// hvPods is where each hypervisor's commands run with access kubernetes.
	hvPods map[string]kubeaccess.Pod
	kube   kubeaccess.Cluster
	// openKube is Options.Kubernetes.
	openKube kubeaccess.Open
	// hvTools is where each hypervisor's host tools ran (access kubernetes).
	hvTools map[string]hostTools
	// ovsPods are the OVS pods the Kubernetes preflight found, one per
	// node (the tools probe's, before anything is built).
	ovsPods []kubeaccess.Pod
	// hvDial opens SSH to a hypervisor in tests (nil: dialHypervisor's).
	hvDial func(ctx context.Context, hv string) (remote.Runner, error)
	// podMoves are each hypervisor's moves to the replacement of its
	// vanished OVS pod, in order (podmoves.go).
	podMu    sync.Mutex
	podMoves map[string][]results.PodReplacement
	// cleaner is the run's (set when it provisions): a node debug pod
	// registers its delete with it.
	cleaner fixtures.Cleaner

	dialer *remote.Dialer

	logMu   sync.Mutex
	console io.Writer
	logFile *os.File

	// lost is set by the first failed write into Dir (outdir.go); lostCtx
	// ends with it, and with it every guarded step's context.
	lostMu  sync.Mutex
	lost    error
	lostCtx context.Context
	loseAll context.CancelCauseFunc
}

// Start loads and validates the configuration (before anything touches the
// cloud), makes the run's directory, opens the results file, checks the
// Kubernetes cluster with hypervisors.access: kubernetes (PreflightKube),
// builds the cloud clients and, for a single pair, decides what can be
// decided before the first create (Preflight: the project's quotas, the
// hypervisors' host tools); a fleet's preflight is PlanFleet's.
func Start(ctx context.Context, o Options) (*Run, error) {
	if o.ConfigPath == "" {
		return nil, fmt.Errorf("no harness config: set %s (make e2e CONFIG=<file>)", EnvConfig)
	}
	var opts []config.Option
	ids := make([]string, 0, len(iperf3.Catalogue()))
	for _, p := range iperf3.Catalogue() {
		ids = append(ids, p.ID)
	}
	ids = append(ids, iperf3.PPSIDs()...)
	opts = append(opts, config.KnownProfiles(ids...), config.KnownPPSProfiles(iperf3.PPSIDs()...))
	if o.Getenv != nil {
		opts = append(opts, config.WithGetenv(o.Getenv))
	}
	cfg, err := config.Load(o.ConfigPath, opts...)
	if err != nil {
		return nil, err
	}
	started := time.Now()
	runID, err := fixtures.NewRunID(started)
	if err != nil {
		return nil, err
	}
	need, rule := plan.ArtifactsEstimate(cfg)
	if err := CheckOutputDir(cfg.Run.OutputDir, need, rule); err != nil {
		return nil, err
	}
	dir := filepath.Join(cfg.Run.OutputDir, runID)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("run directory: %w", err)
	}
	logFile, err := os.OpenFile(filepath.Join(dir, "harness.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("run log: %w", err)
	}
	console := o.Console
	if console == nil {
		console = os.Stderr
	}
	run := &Run{Config: cfg, RunID: runID, Dir: dir, console: console, logFile: logFile,
		Hypervisors: map[string]remote.Runner{}, openKube: o.Kubernetes}
	run.Logf("run %s: config %s, expected path %s, artifacts in %s", runID, cfg.File, cfg.Run.ExpectedPath, dir)

	run.Results, err = results.NewWriter(filepath.Join(dir, ResultsFile), results.Results{
		SchemaVersion: results.SchemaVersion,
		RunID:         runID,
		StartedAt:     started.UTC(),
		Config:        configSummary(cfg),
		Environment: results.Environment{
			Cloud:            cfg.Cloud.Tenant,
			BuildLabel:       cfg.Run.BuildLabel,
			BuildID:          cfg.Run.BuildID,
			Harness:          harnessBuild(),
			InsecureHostKeys: cfg.SSH.InsecureIgnoreHostKey,
		},
	})
	if err != nil {
		return nil, run.closeOnError(err)
	}
	run.Results.SetGuard(run)

	// Before any cloud call: a Kubernetes cluster the run cannot use fails
	// the run now, not after two servers were built and reached. The
	// cluster is the run's (its commands in commands.jsonl), opened once.
	if cfg.Hypervisors.Access == config.HypervisorAccessKubernetes {
		if err := run.ensureDialer(); err != nil {
			return nil, run.closeOnError(err)
		}
		if err := run.ensureKube(); err != nil {
			return nil, run.closeOnError(err)
		}
		run.recordKubeVersion(ctx, run.kube)
	}
	if err := run.PreflightKube(ctx, run.kube); err != nil {
		return nil, run.closeOnError(err)
	}

	apiLog, err := os.OpenFile(filepath.Join(dir, "api.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, run.closeOnError(fmt.Errorf("api log: %w", err))
	}
	var apiMu sync.Mutex
	apiLogf := func(format string, args ...any) {
		if run.OutputLost() != nil {
			return
		}
		apiMu.Lock()
		_, err := fmt.Fprintf(apiLog, "%s %s\n", time.Now().UTC().Format(time.RFC3339Nano), fmt.Sprintf(format, args...))
		apiMu.Unlock()
		_ = run.written(err)
	}
	clients, err := cloud.NewClients(ctx, cfg.Cloud,
		cloud.WithRetry(cfg.Interval(config.IntervalAPIRetry)),
		cloud.WithRateLimit(cfg.Interval(config.IntervalRateLimit)),
		cloud.WithLogf(run.Logf),
		cloud.WithRequestLog(apiLogf))
	if err != nil {
		apiLog.Close()
		return nil, run.closeOnError(fmt.Errorf("cloud clients: %w", err))
	}
	run.Clients = clients
	if pins := cfg.Fleet != nil || len(cfg.Placement.Hosts) > 0; pins {
		if why := clients.PinProblem(); why != "" {
			apiLog.Close()
			return nil, run.closeOnError(fmt.Errorf("servers pinned to their hosts (%s): %s", pinWhy(cfg), why))
		}
	}
	run.RecordServiceVersions(ctx)
	// A fleet's pairs and nodes are known once it is planned: PlanFleet
	// runs its preflight.
	if cfg.Fleet == nil {
		if err := run.Preflight(ctx, 1, nil); err != nil {
			apiLog.Close()
			return nil, run.closeOnError(err)
		}
	}
	return run, nil
}

func (run *Run) closeOnError(err error) error {
	run.Logf("ERROR: %v", err)
	if run.dialer != nil {
		_ = run.dialer.Close() // the preflight's hypervisor connections
	}
	if run.kube != nil {
		closeCluster(run.kube, run.Logf)
	}
	run.logFile.Close()
	return err
}

// Logf writes one progress line to the console and to harness.log.
func (run *Run) Logf(format string, args ...any) {
	line := fmt.Sprintf(format, args...)
	if run.Clients != nil && run.Clients.Redactor != nil {
		line = run.Clients.Redactor.Redact(line)
	}
	stamp := time.Now().UTC().Format("15:04:05")
	lost := run.OutputLost() != nil
	var err error
	run.logMu.Lock()
	fmt.Fprintf(run.console, "[%s] %s\n", stamp, line)
	if run.logFile != nil && !lost {
		_, err = fmt.Fprintf(run.logFile, "%s %s\n", time.Now().UTC().Format(time.RFC3339Nano), line)
	}
	run.logMu.Unlock()
	_ = run.written(err)
}

// ProvisionPair builds the run's one pair, the single-pair suites' (every
// create registering its delete with cleaner), saves topology.json and
// verifies it. The pair is returned, and among Pairs, also when building
// failed: its topology is what was built (CollectTopologyEvidence).
func (run *Run) ProvisionPair(ctx context.Context, cleaner fixtures.Cleaner) (_ *Pair, err error) {
	pair := run.singlePair()
	in, done, err := run.provisioning(cleaner)
	if err != nil {
		return pair, err
	}
	defer func() { err = done(err) }()
	topo, err := fixtures.Provision(ctx, in)
	pair.Topology = topo
	if topo != nil {
		run.saveJSON("topology.json", topo)
		if topo.KeepHint != "" {
			run.Logf("keep_topology is set: nothing will be deleted. %s", topo.KeepHint)
		}
	}
	if err != nil {
		return pair, fmt.Errorf("provisioning: %w", err)
	}
	if err := fixtures.Verify(ctx, fixtures.VerifyInput{Clients: in.Clients, Config: run.Config, Topology: topo, Logf: run.Logf}); err != nil {
		return pair, fmt.Errorf("verifying the topology: %w", err)
	}
	if err := run.Results.Update(func(r *results.Results) {
		r.Environment.MTU, r.Environment.NetworkType, r.Environment.SegmentationID = topo.Network.MTU, topo.Network.Type, topo.Network.SegmentationID
	}); err != nil {
		return pair, err
	}
	run.Logf("topology %s verified: %s", run.RunID, pair.describeTopology())
	return pair, nil
}

// provisioning starts a build of the run's topology (ProvisionPair, the
// fleet's Provision): what fixtures provision with, every delete
// registered with cleaner through the run's (timedCleaner). It is refused
// once output is lost, but never cut when output is lost meanwhile: a
// create cut between its request and its answer could leave a resource
// whose delete is not registered. done ends it: its time is
// provisioning's, and the build's error the loss once output was lost.
func (run *Run) provisioning(cleaner fixtures.Cleaner) (_ fixtures.ProvisionInput, done func(error) error, _ error) {
	if lost := run.OutputLost(); lost != nil {
		return fixtures.ProvisionInput{}, nil, lost
	}
	stop := run.Timings.Track(results.PhaseProvisioning)
	done = func(err error) error {
		stop()
		if lost := run.OutputLost(); lost != nil && err != nil {
			return lost
		}
		return err
	}
	pub, err := run.publicKey()
	if err != nil {
		return fixtures.ProvisionInput{}, nil, done(err)
	}
	in := fixtures.ProvisionInput{
		Clients:      run.fixtureClients(),
		Config:       run.Config,
		RunID:        run.RunID,
		Cleaner:      run.timedCleaner(cleaner),
		Logf:         run.Logf,
		SSHPublicKey: pub,
		Keep:         run.Config.Run.KeepTopology,
	}
	run.cleaner = in.Cleaner
	return in, done, nil
}

// publicKey is ssh.public_key's key for the run's keypair ("" when
// guest_access.keypair names an existing one).
func (run *Run) publicKey() (string, error) {
	if run.Config.GuestAccess.Keypair != "" {
		return "", nil
	}
	data, err := os.ReadFile(run.Config.SSH.PublicKey)
	if err != nil {
		return "", fmt.Errorf("%s: ssh.public_key: %w", run.Config.File, err)
	}
	return strings.TrimSpace(string(data)), nil
}

// timedCleaner wraps every registered delete so teardown time is accounted
// for in the breakdown and in the results file.
func (run *Run) timedCleaner(c fixtures.Cleaner) fixtures.Cleaner {
	if c == nil {
		return nil
	}
	return fixtures.CleanerFunc(func(what string, fn func(ctx context.Context) error) {
		c.Defer(what, func(ctx context.Context) error {
			start := time.Now()
			err := fn(ctx)
			d := time.Since(start)
			run.Timings.Add(results.PhaseTeardown, d)
			if err != nil {
				run.Logf("teardown: %s: %v", what, err)
			} else {
				run.Logf("teardown: %s deleted (%.1fs)", what, d.Seconds())
			}
			return err
		})
	})
}

func (run *Run) fixtureClients() fixtures.Clients { return fixtures.ClientsOf(run.Clients) }

// saveJSON writes v as indented JSON into the run directory; a failure is
// logged, never fatal (evidence is a by-product of the run).
func (run *Run) saveJSON(name string, v any) {
	data, err := json.MarshalIndent(v, "", "  ")
	if err == nil {
		err = run.OutputLost()
	}
	if err == nil {
		err = run.written(results.WriteFileAtomic(filepath.Join(run.Dir, name), append(data, '\n'), 0o644))
	}
	if err != nil {
		run.Logf("saving %s: %v", name, err)
	}
}

// Close finishes the results file of every pair that has its own (a
// fleet's: pairs/pNN/results.json), then the run's (timings, end time),
// and closes SSH connections, the Kubernetes cluster (its copy of the
// kubeconfig) and logs. It is safe to call once the run is over, also
// after a failure.
func (run *Run) Close() error {
	var errs []error
	for _, pair := range run.Pairs {
		if pair.Results != run.Results {
			errs = append(errs, pair.finish())
		}
	}
	if run.dialer != nil {
		errs = append(errs, run.dialer.Close())
	}
	if run.kube != nil {
		closeCluster(run.kube, run.Logf)
	}
	if lost := run.OutputLost(); lost != nil {
		errs = append(errs, fmt.Errorf("results file not finished: %w", lost))
	} else if run.Results != nil {
		errs = append(errs, finishResults(run.Results, &run.Timings))
	}
	var lines []string
	for _, t := range run.Timings.Snapshot() {
		lines = append(lines, fmt.Sprintf("%s %.1fs", t.Phase, t.Spent.Seconds()))
	}
	if len(lines) > 0 {
		run.Logf("wall time by phase: %s", strings.Join(lines, ", "))
	}
	if run.logFile != nil {
		errs = append(errs, run.logFile.Close())
	}
	return errors.Join(errs...)
}

// finishResults writes the wall-time breakdown t into w and finishes it
// (its end time).
func finishResults(w *results.Writer, t *Timings) error {
	if err := w.Update(func(r *results.Results) {
		r.Timings = r.Timings[:0]
		for _, pt := range t.Snapshot() {
			r.Timings = append(r.Timings, results.Timing{Phase: pt.Phase, Seconds: pt.Spent.Seconds()})
		}
	}); err != nil {
		return err
	}
	return w.Finish(time.Now().UTC())
}

// CollectTopologyEvidence saves, before teardown, what the cloud says
// about every pair's servers and ports, into each pair's directory
// (Pair.CollectTopologyEvidence).
func (run *Run) CollectTopologyEvidence(ctx context.Context) {
	for _, pair := range run.Pairs {
		pair.CollectTopologyEvidence(ctx)
	}
}

func configSummary(cfg *config.Config) results.ConfigSummary {
	profiles := cfg.Traffic.Profiles
	if len(profiles) == 0 {
		for _, p := range iperf3.Catalogue() {
			profiles = append(profiles, p.ID)
		}
	}
	return results.ConfigSummary{
		Cloud:           cfg.Cloud.Tenant,
		BuildLabel:      cfg.Run.BuildLabel,
		BuildID:         cfg.Run.BuildID,
		ExpectedPath:    cfg.Run.ExpectedPath,
		Profiles:        profiles,
		DurationSeconds: cfg.Traffic.Duration.Seconds(),
		Repeats:         cfg.Traffic.Repeats,
		Checks:          cfg.Offload.Checks,
		PartialProof:    cfg.Offload.PartialProof,
		CVLimitPercent:  cfg.Traffic.CVLimitPercent,
		LineRateBps:     cfg.Traffic.LineRateBps,
		VNICType:        fixtures.VNICType(cfg),
		BindingProfile:  string(cfg.DataPort.BindingProfile),
		PortSecurity:    new(cfg.DataPort.PortSecurity),
	}
}

// pinWhy names what makes the run pin servers to hosts.
func pinWhy(cfg *config.Config) string {
	if cfg.Fleet != nil {
		return "the fleet"
	}
	return "placement.hosts"
}
