package harness

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/cloud"
	"github.com/mosk-qa/asap2-e2e/e2e/config"
	"github.com/mosk-qa/asap2-e2e/e2e/evidence"
	"github.com/mosk-qa/asap2-e2e/e2e/fleet"
	"github.com/mosk-qa/asap2-e2e/e2e/internal/fakeremote"
	"github.com/mosk-qa/asap2-e2e/e2e/remote"
	"github.com/mosk-qa/asap2-e2e/e2e/results"
	"github.com/mosk-qa/asap2-e2e/fixtures"
	"github.com/mosk-qa/asap2-e2e/fixtures/fakecloud"
)

// The simulated fleet (issue 35, "the 100-node model, measured, not
// extrapolated"): the real harness code — Fleet.Provision (fixtures'
// ProvisionFleet with its bound, fleet.cloud_parallel, and VerifyFleet),
// RunOffloadChecks (fleet.Rounds, each round's windows behind one gate),
// RunProfile (tcp-p1 in fleet.mode), the registered deletes and the leak
// check — against the fake cloud (fixtures/fakecloud) and fake guests and
// hypervisors (fakeremote), which take the lab's recorded times.
//
// The clock is scaled, not faked: every recorded delay is divided by
// simScale and every time reported multiplied back. The harness takes no
// clock (time.Now, timers and wait.Poll's sleeps are the wall's, in the
// harness, e2e/evidence, e2e/iperf3 and fixtures alike), and threading a
// fake one through all of them would change product code for a model; the
// delays the harness itself waits on are all configured (the intervals'
// polls, offload.settle, offload.capture_window) or played by the fakes
// (the cloud's latencies, the guests' iperf3 -t), so dividing them is
// enough. What is not divided is the harness's own work (HTTP to the fake,
// JSON, the results file rewritten after every pair's step): it is real
// time, multiplied by simScale like the rest, so the figures err on the
// slow side by simScale × that work. The intervals' timeouts are bounds,
// not delays (they cost nothing unless something fails), and keep the
// lab's values, so a loaded machine does not make the model fail.
const simScale = 100

// simDelays are one release's recorded cloud times (the fake cloud's);
// the rest of the model is lab/harness-fleet.yaml itself (simConfig).
type simDelays struct {
	release string
	// boot: a server's create until ACTIVE; del: its delete until Nova
	// answers 404; api: every other call (a port's create, a delete of a
	// port, a group, a network...).
	boot, del, api time.Duration
	// parallel and mode, when set, replace the lab file's fleet.cloud_parallel
	// and fleet.mode: the levers a real 100-node sweep would pull.
	parallel int
	mode     string
	// flow, when set, replaces offload.flow_duration (the lab's 20 s). The
	// simulated flow lasts flow/simScale of real time while the checks inside
	// it are the harness's real work: at 20 s that is 200 ms, which the checks
	// of a round outlast on a loaded machine (175 ms at load 11 beside a
	// compile), and the window is then rightly inconclusive ("outlasted the
	// flow"). The correctness tests give the flow room; the model keeps 20 s.
	flow time.Duration
}

// name is the benchmark's name for d: the release, and the levers when set.
func (d simDelays) name() string {
	n := d.release
	if d.parallel > 0 {
		n += fmt.Sprintf("-parallel%d", d.parallel)
	}
	if d.mode != "" {
		n += "-" + d.mode
	}
	return n
}

// labClouds are the delays and where each comes from:
//
//	what                       Zed     Epoxy   source
//	server create → ACTIVE     12.5 s  12.5 s  lab, 10–15 s a server (issue 35's brief); docs/CONFIG.md
//	                                           fleet "Cost": one pair's provisioning 12.9 s
//	server delete → 404        3 s     6.5 s   docs/CONFIG.md fleet "Cost": Zed teardown 24 s for 4 pairs
//	                                           (6 s a pair: its two servers); "Epoxy's Nova takes 6.5 s
//	                                           to delete a server"
//	any other API call         0.3 s   0.3 s   lab, a port's create ≈ 0.3 s (issue 35's brief)
//	evidence flow (TCP, UDP)   20 s    20 s    lab/harness-fleet.yaml offload.flow_duration
//	settle, capture window     3 s     3 s     lab/harness-fleet.yaml offload.settle, capture_window
//	tcp-p1                     5 s ×1  5 s ×1  lab/harness-fleet.yaml traffic.duration, repeats
//	pairs provisioned at once  2       2       lab/harness-fleet.yaml fleet.cloud_parallel
//	polls                      1 s     1 s     lab/harness-fleet.yaml intervals (server_active,
//	                                           port_active, delete), the defaults for the others
//
// Not simulated: the SSH wait (Fleet.Connect: the guests' sshd and the
// data path, nothing recorded per guest), each node's environment
// (CollectEnvironment), the flood ping before each window (offload.
// flood_pings, under a second) and the checks other than dpctl (every
// check runs inside the flow, so the flow's length is the window's).
var labClouds = []simDelays{
	{release: "zed", boot: 12500 * time.Millisecond, del: 3 * time.Second, api: 300 * time.Millisecond},
	{release: "epoxy", boot: 12500 * time.Millisecond, del: 6500 * time.Millisecond, api: 300 * time.Millisecond},
}

// sweepClouds are labClouds with what an overnight sweep of a real fleet
// would set instead of the 2-core lab's values: 8 pairs at the cloud at once
// and every pair's tcp-p1 window opened together (fleet.mode concurrent).
var sweepClouds = []simDelays{
	{release: "zed", boot: 12500 * time.Millisecond, del: 3 * time.Second, api: 300 * time.Millisecond, parallel: 8, mode: "concurrent"},
	{release: "epoxy", boot: 12500 * time.Millisecond, del: 6500 * time.Millisecond, api: 300 * time.Millisecond, parallel: 8, mode: "concurrent"},
}

// simConfig is lab/harness-fleet.yaml with the delays the harness waits on
// divided by simScale, asap2's proof by the dpctl check alone, no flood
// ping, and the fleet's nodes.
func simConfig(tb testing.TB, nodes []string) *config.Config {
	tb.Helper()
	cfg, err := config.Parse(filepath.Join("..", "..", "lab", "harness-fleet.yaml"), readFile(tb, filepath.Join("..", "..", "lab", "harness-fleet.yaml")))
	if err != nil {
		tb.Fatal(err)
	}
	scaled := func(d time.Duration) time.Duration { return max(d/simScale, time.Millisecond) }
	if cfg.Intervals == nil {
		cfg.Intervals = map[string]config.Interval{}
	}
	for k := range config.DefaultIntervals {
		iv := cfg.Interval(k)
		cfg.Intervals[k] = config.Interval{Timeout: iv.Timeout, Poll: scaled(iv.Poll)}
	}
	cfg.Offload.Settle, cfg.Offload.CaptureWindow = scaled(cfg.Offload.Settle), scaled(cfg.Offload.CaptureWindow)
	cfg.Offload.Checks, cfg.Offload.FloodPings = []string{results.CheckDpctl}, 0
	cfg.Run.ExpectedPath = results.PathASAP2
	cfg.Fleet.All, cfg.Fleet.Nodes = false, nodes
	key := filepath.Join(tb.TempDir(), "id.pub")
	if err := os.WriteFile(key, []byte("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIEXAMPLE sim\n"), 0o600); err != nil {
		tb.Fatal(err)
	}
	cfg.SSH.PublicKey = key
	return cfg
}

// simCloud is the fake cloud with the lab's image and management network,
// nodes as its hypervisors, and d's times divided by simScale.
func simCloud(tb testing.TB, cfg *config.Config, nodes []string, d simDelays) *fakecloud.Cloud {
	c := fakecloud.New()
	tb.Cleanup(c.Close)
	c.AddImage(cfg.Image.Name)
	c.AddNetwork(cfg.GuestAccess.ManagementNetwork, "198.19.128.0/24", false)
	c.Hypervisors = nodes
	c.NovaFillsProfile = true
	c.BootTime, c.DeleteTime = d.boot/simScale, d.del/simScale
	c.Latency = func(method, path string) time.Duration {
		if method == "GET" {
			return 0
		}
		return d.api / simScale
	}
	return c
}

// simRun is one simulated fleet run's outcome: each phase's wall time
// (simulated seconds, i.e. measured × simScale) and the fleet as it ended.
type simRun struct {
	nodes  int
	phases []simPhase
	f      *Fleet
	left   *fixtures.SweepReport
	cloud  *fakecloud.Cloud
}

type simPhase struct {
	name    string
	seconds float64
}

// runSim runs a fleet of n nodes (a ring: n pairs) end to end: plan,
// provision, the fakes on every pair, the offload checks in rounds, tcp-p1
// on every pair in fleet.mode, the registered deletes, the leak check.
func runSim(tb testing.TB, n int, d simDelays) simRun {
	tb.Helper()
	var nodes []string
	for i := 1; i <= n; i++ {
		nodes = append(nodes, fmt.Sprintf("compute%d", i))
	}
	cfg := simConfig(tb, nodes)
	if d.parallel > 0 {
		cfg.Fleet.CloudParallel = d.parallel
	}
	if d.mode != "" {
		cfg.Fleet.Mode = d.mode
	}
	if d.flow > 0 {
		cfg.Offload.FlowDuration = d.flow
	}
	c := simCloud(tb, cfg, nodes, d)
	w := fakeremote.NewWorld()
	runID, err := fixtures.NewRunID(time.Now())
	if err != nil {
		tb.Fatal(err)
	}
	dir := tb.TempDir()
	res, err := results.NewWriter(filepath.Join(dir, ResultsFile), results.Results{
		SchemaVersion: results.SchemaVersion, RunID: runID, StartedAt: time.Now().UTC(), Config: configSummary(cfg),
	})
	if err != nil {
		tb.Fatal(err)
	}
	s := &Run{Config: cfg, RunID: runID, Dir: dir, Results: res, console: &lockedBuffer{}, Hypervisors: map[string]remote.Runner{},
		Clients: &cloud.Clients{
			Tenant: &cloud.Set{Compute: c.Compute(), Network: c.Network(), Image: c.Image()},
			Admin:  &cloud.Set{Compute: c.AdminCompute(), Network: c.AdminNetwork(), Image: c.Image(), Placement: c.AdminPlacement()},
		}}
	res.SetGuard(s)
	hvs := map[string]*fakeremote.Runner{}
	var rn []fleet.Node
	for i, node := range nodes {
		hvs[node] = fakeHypervisor(tb, w, cfg, i, node)
		scriptDpctl(tb, cfg, hvs[node], false)
		s.Hypervisors[node] = hvs[node]
		rn = append(rn, fleet.Node{Name: node, ServiceHost: node})
	}
	pairs, err := fleet.Ring(nodes)
	if err != nil {
		tb.Fatal(err)
	}
	f := newFleet(s, fleet.Resolved{Nodes: rn}, fleet.Shard{Index: 1, Count: 1}, pairs)
	ctx := context.Background()
	stack := &fixtures.Stack{}
	if err := f.Provision(ctx, stack); err != nil {
		_ = stack.Run(ctx)
		tb.Fatalf("provisioning: %v", err)
	}
	// The guests: the fake hypervisors replay the recorded session's dpctl
	// samples, which name its MACs, so each pair's guests take them
	// (newFakeFleet's do the same); each iperf3 client plays the recorded
	// TCP or UDP flow for its -t on the scaled clock, and a checks' flow
	// until its window's checks are done too (fakeremote.FlowEnds: on the
	// scaled clock a 2 min flow is 1.2 s of the wall's, which a starved
	// go test -race outlasted).
	links := guestLinks(tb)
	tcp, udp := swRecording(tb, "iperf3-tcp.json"), swRecording(tb, "iperf3-udp.json")
	play := fakeremote.SleepScaledThen(time.Second/simScale, func(isUDP bool) remote.Result {
		if isUDP {
			return remote.Result{Stdout: udp}
		}
		return remote.Result{Stdout: tcp}
	})
	var ends []*fakeremote.FlowEnds
	for _, p := range f.Pairs {
		srv := p.Topology.Servers
		srv[0].DataMAC, srv[1].DataMAC = fakeremote.MACServer, fakeremote.MACClient
		scriptRepresentors(hvs, p.Topology)
		e := fakeremote.NewFlowEnds()
		p.checksDone = func(ft evidence.FlowTiming) { e.ChecksDone(ft.Flow) }
		ends = append(ends, e)
		fakeGuests(tb, w, p, links, 0, e.Client(play))
	}
	checksErr := f.RunOffloadChecks(ctx)
	for _, e := range ends {
		e.Release() // the profile's clients end on their own
	}
	trafficErr := f.RunProfile(ctx, tcpP1(tb))
	teardownErr := stack.Run(ctx)
	began := time.Now()
	left, leakErr := f.LeakCheck(ctx)
	leak := time.Since(began)
	for what, err := range map[string]error{"checks": checksErr, "tcp-p1": trafficErr, "teardown": teardownErr, "leak check": leakErr} {
		if err != nil {
			tb.Errorf("%s: %v", what, err)
		}
	}
	if u := w.Unexpected(); len(u) > 0 {
		tb.Errorf("unexpected commands: %q", u[:min(len(u), 5)])
	}
	r := simRun{nodes: n, f: f, left: left, cloud: c}
	spent := map[string]time.Duration{}
	for _, t := range f.Timings.Snapshot() {
		spent[t.Phase] = t.Spent
	}
	spent["leak check"] = leak
	for _, ph := range []string{results.PhaseProvisioning, results.PhaseChecks, results.PhaseTraffic, results.PhaseTeardown, "leak check"} {
		r.phases = append(r.phases, simPhase{name: ph, seconds: spent[ph].Seconds() * simScale})
	}
	return r
}

// wall is the run's simulated wall time: its phases, one after the other.
func (r simRun) wall() float64 {
	var s float64
	for _, p := range r.phases {
		s += p.seconds
	}
	return s
}

func (r simRun) phase(name string) float64 {
	for _, p := range r.phases {
		if p.name == name {
			return p.seconds
		}
	}
	return 0
}

// sequentialChecks is the checks phase as it was before the rounds, pair
// by pair. The harness has no such path any more (RunOffloadChecks runs
// rounds in both modes), so it is computed from the same delays: one
// pair's window is its two flows of offload.flow_duration (the lab
// measured 41 s a pair at 20 s flows, docs/CONFIG.md fleet "Cost"), one
// window per pair.
func (r simRun) sequentialChecks() float64 {
	return float64(len(r.f.Pairs)) * 2 * r.f.Config.Offload.FlowDuration.Seconds()
}

// table is the run's wall time by phase, with the sequential model beside it.
func (r simRun) table(release string) string {
	var b strings.Builder
	wall := r.wall()
	fmt.Fprintf(&b, "simulated fleet of %d nodes on %s's recorded times (clock scaled 1/%d, times multiplied back): %d pairs, %d check rounds, fleet.cloud_parallel %d, mode %s\n",
		r.nodes, release, simScale, len(r.f.Pairs), len(r.f.Section().Rounds), r.f.Config.Fleet.CloudParallel, r.f.Config.Fleet.Mode)
	fmt.Fprintf(&b, "  %-14s %9s %7s %7s\n", "phase", "wall", "share", "a node")
	for _, p := range r.phases {
		fmt.Fprintf(&b, "  %-14s %8.0fs %6.0f%% %6.1fs\n", p.name, p.seconds, 100*p.seconds/wall, p.seconds/float64(r.nodes))
	}
	fmt.Fprintf(&b, "  %-14s %8.0fs (%.1f min) %6.1fs a node; goal 1800 s (18 s a node)\n", "total", wall, wall/60, wall/float64(r.nodes))
	seq := r.sequentialChecks()
	sw := wall - r.phase(results.PhaseChecks) + seq
	fmt.Fprintf(&b, "  checks pair by pair (computed, no such path left: %d pairs × 2 flows × offload.flow_duration %s): %.0fs; total %.0fs (%.1f min, %.1fs a node)\n",
		len(r.f.Pairs), r.f.Config.Offload.FlowDuration, seq, sw, sw/60, sw/float64(r.nodes))
	fmt.Fprintf(&b, "  the harness's own work (HTTP, JSON, the results file rewritten per pair) is real time here, counted ×%d with the delays: the figures are an upper bound\n", simScale)
	return b.String()
}

// BenchmarkFleet100 is the 100-node model, measured (see simScale):
//
//	go test -run XXX -bench BenchmarkFleet100 -benchtime 1x ./e2e/harness/
//
// One run per release's recorded cloud times; metrics in simulated
// seconds: the wall per phase, the total, a node's share, and the checks
// pair by pair (computed, sequentialChecks).
func BenchmarkFleet100(b *testing.B) {
	for _, d := range slices.Concat(labClouds, sweepClouds) {
		b.Run(d.name(), func(b *testing.B) {
			var last simRun
			for range b.N {
				last = runSim(b, 100, d)
			}
			b.Log("\n" + last.table(d.name()))
			for _, p := range last.phases {
				b.ReportMetric(p.seconds, strings.ReplaceAll(p.name, " ", "_")+"_s")
			}
			b.ReportMetric(last.wall(), "wall_s")
			b.ReportMetric(last.wall()/float64(last.nodes), "s/node")
			b.ReportMetric(last.wall()-last.phase(results.PhaseChecks)+last.sequentialChecks(), "sequential_wall_s")
		})
	}
}

// The simulated fleet's structure on 6 nodes (times are BenchmarkFleet100's
// business): 2 check rounds of 3 pairs that share no node, every node
// judged by its own verdicts and passing, tcp-p1 on every pair, and
// nothing of the run left in the fake cloud.
func TestSimulatedFleetOfSix(t *testing.T) {
	t.Parallel()
	d := labClouds[0]
	d.flow = 2 * time.Minute // 1.2 s of real time for the checks inside each flow: see simDelays.flow
	r := runSim(t, 6, d)
	t.Log("\n" + r.table(d.release))
	s := r.f.Section()
	if len(s.Rounds) != 2 {
		t.Errorf("%d check rounds, want 2 for a ring of 6", len(s.Rounds))
	}
	for _, rd := range s.Rounds {
		if len(rd.Pairs) != 3 || len(rd.Windows) != 2 || rd.Error != "" {
			t.Errorf("round %+v: want 3 pairs, a TCP and a UDP window, no error", rd)
		}
	}
	judged := map[string]int{}
	for _, c := range s.Checks {
		judged[c.Node]++
	}
	for i := 1; i <= 6; i++ {
		// dpctl, TCP and UDP, in each of its two pairs.
		if n := fmt.Sprintf("compute%d", i); judged[n] != 4 {
			t.Errorf("%s: %d verdicts, want 4", n, judged[n])
		}
	}
	if v := r.f.CheckVerdict(); !v.Pass() {
		t.Errorf("check verdict:\n%s", DescribeVerdict(v))
	}
	var measured []string
	for _, pr := range s.Results {
		if pr.Profile == "tcp-p1" && pr.Repeats == 1 && pr.Error == "" {
			measured = append(measured, pr.Pair)
		}
	}
	if len(measured) != 6 {
		t.Errorf("tcp-p1 measured on %q, want all 6 pairs", measured)
	}
	if r.left == nil || r.left.AnythingLeft() {
		t.Errorf("leak check: %+v", r.left)
	}
	for _, k := range []string{"servers", "ports", "floatingips", "networks", "subnets", "security-groups", "os-server-groups", "flavors", "keypairs"} {
		if left := slices.DeleteFunc(r.cloud.Names(k), func(n string) bool { return !strings.HasPrefix(n, "asap2e2e-") }); len(left) > 0 {
			t.Errorf("%s left in the fake cloud: %q", k, left)
		}
	}
	for _, p := range r.phases {
		if p.seconds <= 0 {
			t.Errorf("phase %s took no time", p.name)
		}
	}
}
