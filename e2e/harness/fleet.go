package harness

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/config"
	"github.com/mosk-qa/asap2-e2e/e2e/fleet"
	"github.com/mosk-qa/asap2-e2e/e2e/iperf3"
	"github.com/mosk-qa/asap2-e2e/e2e/offload"
	"github.com/mosk-qa/asap2-e2e/e2e/remote/kubeaccess"
	"github.com/mosk-qa/asap2-e2e/e2e/results"
	"github.com/mosk-qa/asap2-e2e/fixtures"
)

// Fleet is a fleet run (config fleet:, issue 21): the Run plus its plan.
// Its Pairs, one per measured pair, share the run's config, clients, SSH
// dialer and command log, hypervisors' connections, cleaner, log and
// output directory, and each keeps its own topology, guests and results
// file (<run dir>/pairs/pNN/results.json: the single-pair run's file of
// that pair, raw iperf3 and offload evidence beside it). The run's own
// results file carries the fleet section (results.Fleet), rewritten after
// every pair's step, so a killed run keeps what finished pairs measured.
type Fleet struct {
	*Run
	// Nodes is the resolved fleet (fixtures.ResolveFleet), Shard the part
	// of it this run measures, Planned its pairs (fleet.Plan).
	Nodes   fleet.Resolved
	Shard   fleet.Shard
	Planned []fleet.Pair
	// Topology is what ProvisionFleet built; Run.Pairs the provisioned
	// pairs.
	Topology *fixtures.FleetTopology

	mu      sync.Mutex
	section results.Fleet
	// lastGate is the last concurrent profile's gate (its windows; tests).
	lastGate *Gate
}

// PlanFleet resolves the fleet's nodes from Nova (fleet.nodes,
// availability_zone, aggregate or all), plans this run's pairs (the ring
// or fleet.explicit_pairs, then fleet.shard), writes the fleet section
// (nodes, skipped nodes, pairs, mode, rule) into the results file and runs
// the preflight for those pairs and nodes (Preflight: quotas, host tools).
func (run *Run) PlanFleet(ctx context.Context) (_ *Fleet, err error) {
	fc := run.Config.Fleet
	if fc == nil {
		return nil, fmt.Errorf("%s: no fleet section: the single-pair suites (suites/perf, suites/smoke) run this config", run.Config.File)
	}
	ctx, end, err := run.guard(ctx)
	if err != nil {
		return nil, err
	}
	defer func() { err = end(err) }()
	shard, err := fleet.ParseShard(fc.Shard)
	if err != nil {
		return nil, fmt.Errorf("%s: fleet.shard: %w", run.Config.File, err)
	}
	src := fc.Source()
	res, err := fixtures.ResolveFleet(ctx, run.fixtureClients(), src)
	if err != nil {
		return nil, fmt.Errorf("resolving the fleet's nodes (%s): %w", src.Describe(), err)
	}
	pairs, err := fleet.Plan(res.Names(), explicitPairs(fc), shard)
	if err != nil {
		return nil, fmt.Errorf("planning the fleet's pairs: %w", err)
	}
	f := newFleet(run, res, shard, pairs)
	var names []string
	for _, p := range pairs {
		names = append(names, p.String())
	}
	for _, sk := range res.Skipped {
		run.Logf("fleet: %s skipped: %s", sk.Name, sk.Reason)
	}
	group := ""
	if fc.RunGroup != "" {
		group = fmt.Sprintf(" of run group %s (run id %s)", fc.RunGroup, run.RunID)
	}
	run.Logf("fleet: %d nodes from %s, shard %s%s: %d pairs (%s), mode %s, outlier rule %s",
		len(res.Nodes), src.Describe(), shard, group, len(pairs), strings.Join(names, ", "), fc.Mode, fc.Outlier.Rule)
	if err := f.write(); err != nil {
		return nil, err
	}
	// Before the first create: the quotas for every pair, and every node's
	// host tools (over Kubernetes, every node's OVS pod found).
	var targets []kubeaccess.Target
	for _, n := range f.section.Nodes {
		if !n.Skipped {
			targets = append(targets, kubeaccess.Target{Hypervisor: n.Name, ServiceHost: n.ServiceHost})
		}
	}
	if err := run.Preflight(ctx, len(pairs), targets); err != nil {
		return nil, err
	}
	return f, nil
}

// explicitPairs are fleet.explicit_pairs when the config plans by them,
// else nil (the ring).
func explicitPairs(fc *config.Fleet) []fleet.Pair {
	if fc.Pairs == config.PairsExplicit {
		return fc.ExplicitPairs
	}
	return nil
}

// newFleet is the fleet of pairs over res, its section's nodes (this
// run's pairs' nodes, then the skipped ones), pairs, mode, rule, run group
// and, when sharded, every shard's nodes (fleet.PlanShards) set.
func newFleet(run *Run, res fleet.Resolved, shard fleet.Shard, pairs []fleet.Pair) *Fleet {
	fc := run.Config.Fleet
	f := &Fleet{Run: run, Nodes: res, Shard: shard, Planned: pairs}
	f.section = results.Fleet{Mode: fc.Mode, Shard: shard.String(), RunGroup: fc.RunGroup, Rule: fleet.StoredRule(fc.Rule()),
		Plan: fleet.PlanShards(res.Names(), explicitPairs(fc), shard.Count)}
	host := map[string]string{}
	for _, n := range res.Nodes {
		host[n.Name] = n.ServiceHost
	}
	for _, n := range fleet.PairNodes(pairs) {
		f.section.Nodes = append(f.section.Nodes, results.FleetNode{Name: n, ServiceHost: host[n]})
	}
	for _, sk := range res.Skipped {
		f.section.Nodes = append(f.section.Nodes, results.FleetNode{Name: sk.Name, Skipped: true, Reason: sk.Reason})
	}
	for _, p := range pairs {
		f.section.Pairs = append(f.section.Pairs, results.FleetPair{ID: fleet.PairID(p), Sender: p.Sender, Receiver: p.Receiver, Shard: shard.String()})
	}
	return f
}

// Provision builds the fleet's topology (fixtures.ProvisionFleet: the
// shared resources once, then the pairs, at most fleet.cloud_parallel at
// once, every create registering its delete with cleaner), saves
// topology.json, makes each Pair and verifies every pair on its
// nodes (fixtures.VerifyFleet).
func (f *Fleet) Provision(ctx context.Context, cleaner fixtures.Cleaner) (err error) {
	pin, done, err := f.provisioning(cleaner)
	if err != nil {
		return err
	}
	defer func() { err = done(err) }()
	in := fixtures.FleetInput{ProvisionInput: pin, Pairs: f.Planned, CloudParallel: f.Config.Fleet.CloudParallel}
	ft, err := fixtures.ProvisionFleet(ctx, in)
	f.Topology = ft
	if ft != nil {
		f.saveJSON("topology.json", ft)
		for _, pt := range ft.Pairs {
			if pt.Topology == nil {
				continue
			}
			p, perr := f.newPair(pt)
			if perr != nil {
				err = errors.Join(err, perr)
				continue
			}
			f.Pairs = append(f.Pairs, p)
		}
	}
	if err != nil {
		return fmt.Errorf("provisioning the fleet: %w", err)
	}
	if err := fixtures.VerifyFleet(ctx, fixtures.VerifyInput{Clients: in.Clients, Config: f.Config, Logf: f.Logf}, ft); err != nil {
		return fmt.Errorf("verifying the fleet's topology: %w", err)
	}
	if ft.Shared != nil {
		n := ft.Shared.Network
		if err := f.Results.Update(func(r *results.Results) {
			r.Environment.MTU, r.Environment.NetworkType, r.Environment.SegmentationID = n.MTU, n.Type, n.SegmentationID
		}); err != nil {
			return err
		}
	}
	f.Logf("fleet %s verified: %d pairs, each on its two nodes", f.RunID, len(f.Pairs))
	return nil
}

// newPair is pair pt of the fleet (see Fleet): its directory and results
// file. ProvisionFleet's servers are [sender, receiver]; a Pair's Guests[1]
// runs the iperf3 clients, so it holds them the other way round.
func (f *Fleet) newPair(pt fixtures.PairTopology) (*Pair, error) {
	id := strings.TrimSuffix(fixtures.PairRole(pt.Index), "-")
	topo := *pt.Topology
	if len(topo.Servers) == 2 {
		topo.Servers = []fixtures.Server{topo.Servers[1], topo.Servers[0]}
	}
	dir := filepath.Join(f.Dir, "pairs", id)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, f.Failed(err)
	}
	pair := &Pair{run: f.Run, Index: pt.Index, Nodes: pt.Pair, ID: fleet.PairID(pt.Pair), Dir: dir, Timings: &Timings{},
		Topology: &topo, label: fixtures.PairLabel(pt.Index, pt.Pair), party: id}
	// The pair's file names the run's identity as the fleet's does.
	var env results.Environment
	results.KeepIdentity(&env, f.Results.Snapshot().Environment)
	env.MTU, env.NetworkType, env.SegmentationID = topo.Network.MTU, topo.Network.Type, topo.Network.SegmentationID
	w, err := results.NewWriter(filepath.Join(dir, ResultsFile), results.Results{
		SchemaVersion: results.SchemaVersion,
		RunID:         f.RunID,
		StartedAt:     time.Now().UTC(),
		Config:        configSummary(f.Config),
		Environment:   env,
	})
	if err != nil {
		return nil, f.written(fmt.Errorf("%s: results file: %w", pair.label, err))
	}
	w.SetGuard(f.Run)
	pair.Results = w
	return pair, nil
}

// progress names pair p for the progress lines: "pair 3/8 compute5→compute6".
func (f *Fleet) progress(p *Pair) string {
	return fmt.Sprintf("pair %d/%d %s", p.Index+1, len(f.Planned), p.Nodes)
}

// Connect reaches every pair in turn (Pair.Connect: SSH to its guests,
// the data path between them, its hypervisors — each one once, shared by
// the pairs on it). A pair that cannot be reached is not measured
// (Pair.Broken, its nodes named by the verdict); the fleet fails only
// when no pair can be reached.
func (f *Fleet) Connect(ctx context.Context) (err error) {
	ctx, end, err := f.guard(ctx)
	if err != nil {
		return err
	}
	defer func() { err = end(err) }()
	stop := f.Timings.Track(results.PhaseSSHWait)
	defer stop()
	if err := f.ensureDialer(); err != nil {
		return err
	}
	if f.Config.Hypervisors.Access == config.HypervisorAccessKubernetes {
		if err := f.ensureKube(); err != nil {
			return err
		}
	}
	var broken []error
	for _, p := range f.Pairs {
		if err := p.Connect(ctx); err != nil {
			p.Broken = err
			broken = append(broken, fmt.Errorf("%s: %w", p.label, err))
			f.Logf("%s NOT measured: %v", f.progress(p), err)
			continue
		}
		f.Logf("%s connected", f.progress(p))
	}
	if len(broken) > 0 {
		if err := f.Results.Update(func(r *results.Results) {
			for _, b := range broken {
				r.Errors = append(r.Errors, "connect: "+b.Error())
			}
		}); err != nil {
			return err
		}
	}
	if len(broken) == len(f.Pairs) {
		return fmt.Errorf("no pair of the fleet could be reached: %w", errors.Join(broken...))
	}
	return nil
}

// CollectEnvironment records, once per node and before any window, what
// Pair.CollectEnvironment records of a hypervisor (kernel, OVS, tc,
// ovn-controller, the representor's `ethtool -i`: driver and firmware),
// taken through a reached pair with a guest on the node, OVS's
// hw-offload and tc-policy (offload.CmdOtherConfig), and the data path's
// links (linkDrift: eswitch mode, the MTUs of the representors, their
// uplink and its bond, the bond's state); the run's
// Environment lists every node, and the fleet section's drift compares
// them (results.MarkDrift).
func (f *Fleet) CollectEnvironment(ctx context.Context) (err error) {
	ctx, end, err := f.guard(ctx)
	if err != nil {
		return err
	}
	defer func() { err = end(err) }()
	stop := f.Timings.Track(results.PhaseEnvironment)
	defer stop()
	var problems []string
	var env results.Environment
	f.networkBackend(ctx, &env, &problems)
	var drift []results.FleetNodeDrift
	for _, node := range f.measuredNodes() {
		p, srv := f.guestOn(node)
		if p == nil {
			problems = append(problems, fmt.Sprintf("%s: no reached pair has a guest on it: its configuration is not recorded", node))
			continue
		}
		h, ok := p.hypervisorFacts(ctx, srv, env.NetworkBackend, &problems)
		if !ok {
			problems = append(problems, fmt.Sprintf("%s: no connection to it: its configuration is not recorded", node))
			continue
		}
		env.Hypervisors = append(env.Hypervisors, h)
		values := driftValues(h)
		f.offloadConfig(ctx, node, values, &problems)
		f.linkDrift(ctx, node, f.representorsOn(ctx, node, h.NIC, srv, &problems), h.NICBusInfo, values, &problems)
		drift = append(drift, results.FleetNodeDrift{Node: node, Values: values})
	}
	if err := f.Results.Update(func(r *results.Results) {
		results.KeepIdentity(&env, r.Environment)
		r.Environment = env
		f.recordPodMoves(r)
		for _, p := range problems {
			r.Errors = append(r.Errors, "environment: "+p)
		}
	}); err != nil {
		return err
	}
	for _, p := range problems {
		f.Logf("environment: %s", p)
	}
	f.mu.Lock()
	f.section.Drift = drift
	results.MarkDrift(f.section.Drift)
	var lines []string
	for _, d := range f.section.Drift {
		for _, k := range d.Differs {
			major, _ := results.DriftMajority(f.section.Drift, k)
			lines = append(lines, fmt.Sprintf("%s %s %q (fleet: %q)", d.Node, k, d.Values[k], major))
		}
	}
	f.mu.Unlock()
	if len(lines) > 0 {
		f.Logf("fleet drift: %s", strings.Join(lines, "; "))
	} else {
		f.Logf("fleet drift: none over %d nodes", len(drift))
	}
	return f.write()
}

// representorsOn are the representors of every reached guest's data port
// on node: rep, hypervisorFacts' lookup of srv's (when it found one), and
// one lookup for each other guest there (a ring puts two on each node).
func (f *Fleet) representorsOn(ctx context.Context, node, rep string, srv fixtures.Server, problems *[]string) []string {
	var reps []string
	if rep != "" {
		reps = append(reps, rep)
	}
	for _, p := range f.Pairs {
		if p.Broken != nil || p.Topology == nil {
			continue
		}
		for _, o := range p.Topology.Servers {
			if o.Hypervisor != node || o.DataPortID == srv.DataPortID {
				continue
			}
			r, err := p.representor(ctx, node, o.DataPortID)
			if err != nil {
				*problems = append(*problems, err.Error())
				continue
			}
			if !slices.Contains(reps, r) {
				reps = append(reps, r)
			}
		}
	}
	return reps
}

// driftValues are a hypervisor's facts under the drift keys it has.
func driftValues(h results.Hypervisor) map[string]string {
	v := map[string]string{}
	put := func(k, val string) {
		if val != "" {
			v[k] = val
		}
	}
	driver := h.NICDriver
	if driver != "" && h.NICDriverVersion != "" {
		driver += " " + h.NICDriverVersion
	}
	put(results.DriftNICDriver, driver)
	put(results.DriftNICFirmware, h.NICFirmware)
	put(results.DriftOVSVersion, h.OVSVersion)
	put(results.DriftKernelVersion, h.Kernel)
	return v
}

// offloadConfig adds node's OVS hw-offload and tc-policy (other_config;
// an unset key as OVS reads it: "false (unset)", "none (unset)") to values.
func (f *Fleet) offloadConfig(ctx context.Context, node string, values map[string]string, problems *[]string) {
	r, ok := f.Hypervisors[node]
	if !ok {
		return
	}
	res, err := r.Run(ctx, offload.CmdOtherConfig)
	if err == nil {
		err = res.Err()
	}
	var oc map[string]string
	if err == nil {
		oc, err = offload.ParseOtherConfig(res.Stdout)
	}
	if err != nil {
		*problems = append(*problems, fmt.Sprintf("%s: %v", node, err))
		return
	}
	for key, k := range map[string]string{results.DriftHWOffload: offload.OtherConfigHWOffload, results.DriftTCPolicy: offload.OtherConfigTCPolicy} {
		v, set := oc[k]
		if !set {
			v = map[string]string{offload.OtherConfigHWOffload: offload.HWOffloadDefault, offload.OtherConfigTCPolicy: offload.TCPolicyDefault}[k] + " (unset)"
		}
		values[key] = v
	}
}

func (f *Fleet) measuredNodes() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.section.MeasuredNodes()
}

// guestOn is a reached pair with a guest on node, and that guest's server.
func (f *Fleet) guestOn(node string) (*Pair, fixtures.Server) {
	for _, p := range f.Pairs {
		if p.Broken != nil || p.Topology == nil {
			continue
		}
		for _, srv := range p.Topology.Servers {
			if srv.Hypervisor == node {
				return p, srv
			}
		}
	}
	return nil, fixtures.Server{}
}

// RunProfile measures profile p on every reached pair: with fleet.mode
// isolated one pair after the other; with concurrent every pair at once,
// each repeat's window opened together by a Gate and closed when every
// pair's clients returned. Each pair's result goes into its own results
// file (Pair.RunProfile) and, compact, into the fleet section, which is
// judged again (per-node rates, outliers) and rewritten as each pair
// finishes. The error joins the pairs' failures, each led by its pair.
func (f *Fleet) RunProfile(ctx context.Context, p iperf3.Profile) error {
	stop := f.Timings.Track(results.PhaseTraffic)
	defer stop()
	var live []*Pair
	var errs []error
	for _, fp := range f.Pairs {
		if fp.Broken != nil {
			errs = append(errs, f.pairDone(fp, p, results.ProfileResult{}, fmt.Errorf("not measured: %w", fp.Broken)))
			continue
		}
		live = append(live, fp)
	}
	if f.Config.Fleet.Mode == config.FleetConcurrent && len(live) > 1 {
		return errors.Join(append(errs, f.runTogether(ctx, p, live))...)
	}
	for _, fp := range live {
		pr, err := fp.RunProfile(ctx, p)
		errs = append(errs, f.pairDone(fp, p, pr, err))
	}
	return errors.Join(errs...)
}

// runTogether is RunProfile's concurrent mode.
func (f *Fleet) runTogether(ctx context.Context, p iperf3.Profile, live []*Pair) error {
	f.Logf("%s: %d pairs start each repeat together (fleet.mode concurrent)", p.ID, len(live))
	errs := make([]error, len(live))
	g := atOnce(live, func(g *Gate, i int, fp *Pair) {
		pr, err := fp.runProfile(ctx, p, g)
		// Repeats it did not run (the topology damaged, cancelled): the
		// others no longer wait for it.
		if qerr := g.Quit(ctx, fp.party); qerr != nil && err == nil {
			err = qerr
		}
		errs[i] = f.pairDone(fp, p, pr, err)
	})
	f.mu.Lock()
	f.lastGate = g
	f.mu.Unlock()
	for _, w := range g.Windows() {
		f.Logf("%s: window of %d pairs (%s) from %s to %s, start skew %s", w.Key, len(w.Pairs), strings.Join(w.Pairs, ", "),
			w.Open.UTC().Format("15:04:05.000"), w.Close.UTC().Format("15:04:05.000"), w.Skew().Round(time.Millisecond))
	}
	return errors.Join(errs...)
}

// atOnce runs do for every pair at once, each in its own goroutine, with
// one Gate of their parties, and returns the gate once every do has
// returned: how a concurrent profile's repeats and a round of checks run
// their pairs together.
func atOnce(pairs []*Pair, do func(g *Gate, i int, fp *Pair)) *Gate {
	parties := make([]string, len(pairs))
	for i, fp := range pairs {
		parties[i] = fp.party
	}
	g := NewGate(parties)
	var wg sync.WaitGroup
	for i, fp := range pairs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			do(g, i, fp)
		}()
	}
	wg.Wait()
	return g
}

// pairDone records pair fp's result in profile p in the fleet section,
// rewrites the results file and says so; it returns err led by the pair.
func (f *Fleet) pairDone(fp *Pair, p iperf3.Profile, pr results.ProfileResult, err error) error {
	r := results.FleetPairRate{
		Pair: fp.ID, Profile: p.ID, Repeats: pr.Summary.Runs, Failed: pr.Summary.Failed,
		Delivered: pr.Summary.Delivered, Offered: pr.Summary.Offered,
		LossPercent: pr.Summary.Loss.Median, Retransmits: pr.Summary.Retransmits.Median,
	}
	rel, _ := filepath.Rel(f.Dir, fp.Dir)
	for _, run := range pr.Runs {
		if run.EvidenceFile != "" {
			r.EvidenceFiles = append(r.EvidenceFiles, filepath.ToSlash(filepath.Join(rel, run.EvidenceFile)))
		}
	}
	if err != nil {
		r.Error = err.Error()
	}
	f.mu.Lock()
	i := slices.IndexFunc(f.section.Results, func(x results.FleetPairRate) bool { return x.Pair == r.Pair && x.Profile == r.Profile })
	if i >= 0 {
		f.section.Results[i] = r
	} else {
		f.section.Results = append(f.section.Results, r)
	}
	f.mu.Unlock()
	werr := f.write()
	line := fmt.Sprintf("%s %s: %d/%d repeats, delivered %s", p.ID, p.Name, r.Repeats, r.Repeats+r.Failed, results.FormatBps(r.Delivered.Median))
	if r.Repeats == 0 {
		line = fmt.Sprintf("%s %s: moved nothing", p.ID, p.Name)
	}
	if err != nil {
		line += "; FAILED: " + err.Error()
	}
	f.Logf("%s done: %s", f.progress(fp), line)
	if err != nil {
		err = fmt.Errorf("%s: %w", fp.label, err)
	}
	return errors.Join(err, werr)
}

// write judges the fleet section again (fleet.Rejudge: per-node rates
// against the fleet median, outliers, drift marks) and rewrites the
// results file with it.
func (f *Fleet) write() error {
	f.mu.Lock()
	jerr := fleet.Rejudge(&f.section)
	snap := cloneFleet(f.section)
	f.mu.Unlock()
	err := f.Results.Update(func(r *results.Results) { r.Fleet = &snap })
	if jerr != nil {
		return errors.Join(fmt.Errorf("judging the fleet: %w", jerr), err)
	}
	return err
}

// Section is a copy of the fleet section as last judged.
func (f *Fleet) Section() results.Fleet {
	f.mu.Lock()
	defer f.mu.Unlock()
	return cloneFleet(f.section)
}

func cloneFleet(s results.Fleet) results.Fleet {
	c := s
	c.Nodes, c.Pairs, c.Results = slices.Clone(s.Nodes), slices.Clone(s.Pairs), slices.Clone(s.Results)
	c.Checks, c.Rates, c.Notes = slices.Clone(s.Checks), slices.Clone(s.Rates), slices.Clone(s.Notes)
	c.Rounds = slices.Clone(s.Rounds)
	for i, r := range c.Rounds {
		c.Rounds[i].Pairs, c.Rounds[i].Windows = slices.Clone(r.Pairs), slices.Clone(r.Windows)
	}
	c.Drift = make([]results.FleetNodeDrift, len(s.Drift))
	for i, d := range s.Drift {
		c.Drift[i] = results.FleetNodeDrift{Node: d.Node, Values: map[string]string{}, Differs: slices.Clone(d.Differs)}
		for k, v := range d.Values {
			c.Drift[i].Values[k] = v
		}
	}
	if s.Drift == nil {
		c.Drift = nil
	}
	return c
}

// Verdict is the fleet's verdict under the expected path
// (results.JudgeFleet): the nodes whose offload proof failed or that no
// check was taken on (asap2), the outliers, the nodes of pairs that moved
// nothing — by node, never by pair.
func (f *Fleet) Verdict() results.FleetVerdict {
	s := f.Section()
	return results.JudgeFleet(&s, f.Config.Run.ExpectedPath, fleet.StoredLine)
}

// CheckVerdict is Verdict on the offload checks alone.
func (f *Fleet) CheckVerdict() results.FleetVerdict {
	s := f.Section()
	s.Results, s.Rates = nil, nil
	return results.JudgeFleet(&s, f.Config.Run.ExpectedPath, fleet.StoredLine)
}

// DescribeVerdict is a verdict's failures, one node a line:
// "compute3: outlier: compute3: tcp-p1 4.1 Gbit/s as sender, 0.25× …".
func DescribeVerdict(v results.FleetVerdict) string {
	var lines []string
	for _, fl := range v.Failures {
		lines = append(lines, fl.Node+": "+strings.Join(fl.Reasons, "; "))
	}
	return strings.Join(lines, "\n")
}
