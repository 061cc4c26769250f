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

// Options start a Session.
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

// Session is one run: its configuration, id, artifacts directory, cloud
// clients, topology, SSH runners and results file.
type Session struct {
	Config  *config.Config
	RunID   string
	Dir     string // <output_dir>/<run id>
	Clients *cloud.Clients
	Results *results.Writer
	Timings Timings

	Topology *fixtures.Topology
	// Guests are the SSH runners of Topology.Servers, index for index:
	// Guests[0] runs the iperf3 servers, Guests[1] the clients.
	Guests []remote.Runner
	// Hypervisors maps a hypervisor name to its runner (SSH, or exec in its
	// node's OVS pod with hypervisors.access: kubernetes).
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
	// vanished OVS pod, in order (podmoves.go; the root session's).
	podMu    sync.Mutex
	podMoves map[string][]results.PodReplacement
	// cleaner is the run's (Provision's): a node debug pod registers its
	// delete with it.
	cleaner fixtures.Cleaner

	dialer *remote.Dialer
	// dataIfaces caches each guest's data interface name (by server index).
	ifaceMu    sync.Mutex
	dataIfaces map[int]string
	// witness answers the look after a failed window (nil = the topology's
	// cloud clients and a TCP connect: cloudWitness); damage is set when a
	// look found the topology damaged, and refuses later windows.
	witness witness
	damage  string

	logMu   sync.Mutex
	console io.Writer
	logFile *os.File

	// lost is set by the first failed write into Dir (outdir.go); lostCtx
	// ends with it, and with it every guarded step's context.
	lostMu  sync.Mutex
	lost    error
	lostCtx context.Context
	loseAll context.CancelCauseFunc

	// parent is the fleet run's Session of a pair's Session (fleet.go):
	// its lines go to the parent's log led by label, and the parent owns
	// the output directory's state (OutputLost, Failed, guard).
	parent *Session
	label  string
	// gate, when set (a concurrent fleet), holds each measured window of
	// RunProfile until every pair is ready and after it until every pair's
	// window is over (gate.go); party is this pair's name at the gate.
	gate  *Gate
	party string
}

// Start loads and validates the configuration (before anything touches the
// cloud), makes the run's directory, opens the results file, checks the
// Kubernetes cluster with hypervisors.access: kubernetes (PreflightKube),
// builds the cloud clients and, for a single pair, decides what can be
// decided before the first create (Preflight: the project's quotas, the
// hypervisors' host tools); a fleet's preflight is PlanFleet's.
func Start(ctx context.Context, o Options) (*Session, error) {
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
	s := &Session{Config: cfg, RunID: runID, Dir: dir, console: console, logFile: logFile,
		Hypervisors: map[string]remote.Runner{}, openKube: o.Kubernetes}
	s.Logf("run %s: config %s, expected path %s, artifacts in %s", runID, cfg.File, cfg.Run.ExpectedPath, dir)

	s.Results, err = results.NewWriter(filepath.Join(dir, ResultsFile), results.Results{
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
		return nil, s.closeOnError(err)
	}
	s.Results.SetGuard(s)

	// Before any cloud call: a Kubernetes cluster the run cannot use fails
	// the run now, not after two servers were built and reached. The
	// cluster is the run's (its commands in commands.jsonl), opened once.
	if cfg.Hypervisors.Access == config.HypervisorAccessKubernetes {
		if err := s.ensureDialer(); err != nil {
			return nil, s.closeOnError(err)
		}
		if err := s.ensureKube(); err != nil {
			return nil, s.closeOnError(err)
		}
		s.recordKubeVersion(ctx, s.kube)
	}
	if err := s.PreflightKube(ctx, s.kube); err != nil {
		return nil, s.closeOnError(err)
	}

	apiLog, err := os.OpenFile(filepath.Join(dir, "api.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, s.closeOnError(fmt.Errorf("api log: %w", err))
	}
	var apiMu sync.Mutex
	apiLogf := func(format string, args ...any) {
		if s.OutputLost() != nil {
			return
		}
		apiMu.Lock()
		_, err := fmt.Fprintf(apiLog, "%s %s\n", time.Now().UTC().Format(time.RFC3339Nano), fmt.Sprintf(format, args...))
		apiMu.Unlock()
		_ = s.written(err)
	}
	clients, err := cloud.NewClients(ctx, cfg.Cloud,
		cloud.WithRetry(cfg.Interval(config.IntervalAPIRetry)),
		cloud.WithRateLimit(cfg.Interval(config.IntervalRateLimit)),
		cloud.WithLogf(s.Logf),
		cloud.WithRequestLog(apiLogf))
	if err != nil {
		apiLog.Close()
		return nil, s.closeOnError(fmt.Errorf("cloud clients: %w", err))
	}
	s.Clients = clients
	if pins := cfg.Fleet != nil || len(cfg.Placement.Hosts) > 0; pins {
		if why := clients.PinProblem(); why != "" {
			apiLog.Close()
			return nil, s.closeOnError(fmt.Errorf("servers pinned to their hosts (%s): %s", pinWhy(cfg), why))
		}
	}
	s.RecordServiceVersions(ctx)
	// A fleet's pairs and nodes are known once it is planned: PlanFleet
	// runs its preflight.
	if cfg.Fleet == nil {
		if err := s.Preflight(ctx, 1, nil); err != nil {
			apiLog.Close()
			return nil, s.closeOnError(err)
		}
	}
	return s, nil
}

func (s *Session) closeOnError(err error) error {
	s.Logf("ERROR: %v", err)
	if s.dialer != nil {
		_ = s.dialer.Close() // the preflight's hypervisor connections
	}
	if s.kube != nil {
		closeCluster(s.kube, s.Logf)
	}
	s.logFile.Close()
	return err
}

// Logf writes one progress line to the console and to harness.log.
func (s *Session) Logf(format string, args ...any) {
	line := fmt.Sprintf(format, args...)
	if s.parent != nil {
		s.parent.Logf("%s: %s", s.label, line)
		return
	}
	if s.Clients != nil && s.Clients.Redactor != nil {
		line = s.Clients.Redactor.Redact(line)
	}
	stamp := time.Now().UTC().Format("15:04:05")
	lost := s.OutputLost() != nil
	var err error
	s.logMu.Lock()
	fmt.Fprintf(s.console, "[%s] %s\n", stamp, line)
	if s.logFile != nil && !lost {
		_, err = fmt.Fprintf(s.logFile, "%s %s\n", time.Now().UTC().Format(time.RFC3339Nano), line)
	}
	s.logMu.Unlock()
	_ = s.written(err)
}

// Provision builds the topology (every create registering its delete with
// cleaner), saves topology.json and verifies it.
func (s *Session) Provision(ctx context.Context, cleaner fixtures.Cleaner) (err error) {
	// Refused once output is lost, but never cut when it is lost meanwhile:
	// a create cut between its request and its answer could leave a
	// resource whose delete is not registered.
	if lost := s.OutputLost(); lost != nil {
		return lost
	}
	defer func() {
		if lost := s.OutputLost(); lost != nil && err != nil {
			err = lost
		}
	}()
	stop := s.Timings.Track(results.PhaseProvisioning)
	defer stop()
	pub, err := s.publicKey()
	if err != nil {
		return err
	}
	in := fixtures.ProvisionInput{
		Clients:      s.fixtureClients(),
		Config:       s.Config,
		RunID:        s.RunID,
		Cleaner:      s.timedCleaner(cleaner),
		Logf:         s.Logf,
		SSHPublicKey: pub,
		Keep:         s.Config.Run.KeepTopology,
	}
	s.cleaner = in.Cleaner
	topo, err := fixtures.Provision(ctx, in)
	s.Topology = topo
	if topo != nil {
		s.saveJSON("topology.json", topo)
		if topo.KeepHint != "" {
			s.Logf("keep_topology is set: nothing will be deleted. %s", topo.KeepHint)
		}
	}
	if err != nil {
		return fmt.Errorf("provisioning: %w", err)
	}
	if err := fixtures.Verify(ctx, fixtures.VerifyInput{Clients: in.Clients, Config: s.Config, Topology: topo, Logf: s.Logf}); err != nil {
		return fmt.Errorf("verifying the topology: %w", err)
	}
	if err := s.Results.Update(func(r *results.Results) {
		r.Environment.MTU, r.Environment.NetworkType, r.Environment.SegmentationID = topo.Network.MTU, topo.Network.Type, topo.Network.SegmentationID
	}); err != nil {
		return err
	}
	s.Logf("topology %s verified: %s", s.RunID, s.describeTopology())
	return nil
}

// publicKey is ssh.public_key's key for the run's keypair ("" when
// guest_access.keypair names an existing one).
func (s *Session) publicKey() (string, error) {
	if s.Config.GuestAccess.Keypair != "" {
		return "", nil
	}
	data, err := os.ReadFile(s.Config.SSH.PublicKey)
	if err != nil {
		return "", fmt.Errorf("%s: ssh.public_key: %w", s.Config.File, err)
	}
	return strings.TrimSpace(string(data)), nil
}

// timedCleaner wraps every registered delete so teardown time is accounted
// for in the breakdown and in the results file.
func (s *Session) timedCleaner(c fixtures.Cleaner) fixtures.Cleaner {
	if c == nil {
		return nil
	}
	return fixtures.CleanerFunc(func(what string, fn func(ctx context.Context) error) {
		c.Defer(what, func(ctx context.Context) error {
			start := time.Now()
			err := fn(ctx)
			d := time.Since(start)
			s.Timings.Add(results.PhaseTeardown, d)
			if err != nil {
				s.Logf("teardown: %s: %v", what, err)
			} else {
				s.Logf("teardown: %s deleted (%.1fs)", what, d.Seconds())
			}
			return err
		})
	})
}

func (s *Session) fixtureClients() fixtures.Clients { return fixtures.ClientsOf(s.Clients) }

func (s *Session) describeTopology() string {
	var parts []string
	for _, srv := range s.Topology.Servers {
		where := srv.Hypervisor
		if where == "" {
			where = "host " + shortID(srv.HostID)
		}
		parts = append(parts, fmt.Sprintf("%s on %s (data %s %s, access %s)", srv.Name, where, srv.DataIP, srv.DataMAC, srv.AccessIP()))
	}
	return strings.Join(parts, "; ")
}

func shortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// saveJSON writes v as indented JSON into the run directory; a failure is
// logged, never fatal (evidence is a by-product of the run).
func (s *Session) saveJSON(name string, v any) {
	data, err := json.MarshalIndent(v, "", "  ")
	if err == nil {
		err = s.OutputLost()
	}
	if err == nil {
		err = s.written(results.WriteFileAtomic(filepath.Join(s.Dir, name), append(data, '\n'), 0o644))
	}
	if err != nil {
		s.Logf("saving %s: %v", name, err)
	}
}

// SaveArtifact writes raw bytes under the run directory (sub-directories are
// created) and returns the path relative to the run directory.
func (s *Session) SaveArtifact(rel string, data []byte) (string, error) {
	if err := s.OutputLost(); err != nil {
		return "", err
	}
	path := filepath.Join(s.Dir, rel)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", s.Failed(err)
	}
	if err := results.WriteFileAtomic(path, data, 0o644); err != nil {
		return "", s.Failed(err)
	}
	return rel, nil
}

// Close finishes the results file (timings, end time) and closes SSH
// connections, the Kubernetes cluster (its copy of the kubeconfig) and
// logs. It is safe to call once the run is over, also after
// a failure.
func (s *Session) Close() error {
	var errs []error
	if s.dialer != nil {
		errs = append(errs, s.dialer.Close())
	}
	if s.kube != nil && s.parent == nil { // a pair's is the fleet's
		closeCluster(s.kube, s.Logf)
	}
	if lost := s.OutputLost(); lost != nil {
		errs = append(errs, fmt.Errorf("results file not finished: %w", lost))
	} else if s.Results != nil {
		errs = append(errs, s.Results.Update(func(r *results.Results) {
			r.Timings = r.Timings[:0]
			for _, t := range s.Timings.Snapshot() {
				r.Timings = append(r.Timings, results.Timing{Phase: t.Phase, Seconds: t.Spent.Seconds()})
			}
		}))
		errs = append(errs, s.Results.Finish(time.Now().UTC()))
	}
	var lines []string
	for _, t := range s.Timings.Snapshot() {
		lines = append(lines, fmt.Sprintf("%s %.1fs", t.Phase, t.Spent.Seconds()))
	}
	if len(lines) > 0 {
		s.Logf("wall time by phase: %s", strings.Join(lines, ", "))
	}
	if s.logFile != nil {
		errs = append(errs, s.logFile.Close())
	}
	return errors.Join(errs...)
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
		ExpectedPath:    results.Path(cfg.Run.ExpectedPath),
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
