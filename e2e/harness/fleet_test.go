package harness

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/config"
	"github.com/mosk-qa/asap2-e2e/e2e/envinfo"
	"github.com/mosk-qa/asap2-e2e/e2e/evidence"
	"github.com/mosk-qa/asap2-e2e/e2e/fleet"
	"github.com/mosk-qa/asap2-e2e/e2e/hostcpu"
	"github.com/mosk-qa/asap2-e2e/e2e/internal/fakeremote"
	"github.com/mosk-qa/asap2-e2e/e2e/iperf3"
	"github.com/mosk-qa/asap2-e2e/e2e/offload"
	"github.com/mosk-qa/asap2-e2e/e2e/remote"
	"github.com/mosk-qa/asap2-e2e/e2e/results"
	"github.com/mosk-qa/asap2-e2e/e2e/wait"
	"github.com/mosk-qa/asap2-e2e/fixtures"
)

// lockedBuffer is a console the pairs' goroutines may share.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// fakeFleet is a Fleet over a ring of fake nodes: each pair's guests play
// iperf3 (fakeremote), every hypervisor is one fake shared by the pairs on
// it and answers the CPU reading with the lab's recorded readings; every
// command lands in one World's time-stamped log.
type fakeFleet struct {
	w       *fakeremote.World
	f       *Fleet
	hvs     map[string]*fakeremote.Runner
	console *lockedBuffer
	// clients[i] is pair i's sending guest.
	clients []*fakeremote.Runner
}

// newFakeFleet builds the fleet over nodes in mode; out gives each pair's
// client output (an iperf3 -J recording), listen how long its servers take
// to listen.
func newFakeFleet(t *testing.T, nodes []string, mode string, out func(p fleet.Pair) []byte, listen func(p fleet.Pair) time.Duration) *fakeFleet {
	t.Helper()
	return newFakeShard(t, nodes, fleet.Shard{Index: 1, Count: 1}, "", mode, out, listen)
}

// newFakeShard is newFakeFleet's shard of a sharded run in run group
// group: its own run id, the shard's pairs of the ring.
func newFakeShard(t *testing.T, nodes []string, shard fleet.Shard, group, mode string, out func(p fleet.Pair) []byte, listen func(p fleet.Pair) time.Duration) *fakeFleet {
	t.Helper()
	cfg := &config.Config{
		Run:         config.Run{ExpectedPath: results.PathASAP2},
		GuestAccess: config.GuestAccess{User: "ubuntu"},
		Traffic:     config.Traffic{Port: config.DefaultTrafficPort, Repeats: 2, Duration: time.Second, HostCPU: true},
		Intervals: map[string]wait.Interval{
			config.IntervalIperfServer: {Timeout: 5 * time.Second, Poll: 20 * time.Millisecond},
		},
		Fleet: &config.Fleet{Nodes: nodes, Mode: mode, CloudParallel: 2, Outlier: config.FleetOutlier{Rule: fleet.RuleRatio, Ratio: 0.8},
			Shard: shard.String(), RunGroup: group},
	}
	ff := &fakeFleet{w: fakeremote.NewWorld(), hvs: map[string]*fakeremote.Runner{}, console: &lockedBuffer{}}
	dir := t.TempDir()
	runID, err := fixtures.NewRunID(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	res, err := results.NewWriter(filepath.Join(dir, ResultsFile), results.Results{
		SchemaVersion: results.SchemaVersion, RunID: runID, StartedAt: time.Now().UTC(), Config: configSummary(cfg),
	})
	if err != nil {
		t.Fatal(err)
	}
	s := &Run{Config: cfg, RunID: runID, Dir: dir, Results: res, console: ff.console,
		Hypervisors: map[string]remote.Runner{}}
	res.SetGuard(s)
	for i, n := range nodes {
		hv := fakeHypervisor(t, ff.w, cfg, i, n)
		ff.hvs[n] = hv
		s.Hypervisors[n] = hv
	}
	pairs, err := fleet.ShardRing(nodes, shard)
	if err != nil {
		t.Fatal(err)
	}
	var rn []fleet.Node
	for _, n := range nodes {
		rn = append(rn, fleet.Node{Name: n, ServiceHost: n})
	}
	ff.f = newFleet(s, fleet.Resolved{Nodes: rn}, shard, pairs)
	links := guestLinks(t)
	for i, p := range pairs {
		// As ProvisionFleet builds it: servers [sender, receiver]. Every
		// pair's guests have the MACs of the recorded evidence
		// (fakeremote.MACClient, MACServer), which the replayed dpctl
		// samples of the checks name; each node's fake is its own.
		topo := &fixtures.Topology{RunID: runID, Prefix: "asap2e2e", Network: fixtures.Network{MTU: 8950}, Servers: []fixtures.Server{
			{ID: fmt.Sprintf("srv-%d-0", i), Name: fmt.Sprintf("asap2e2e-%s-%svm0", runID, fixtures.PairRole(i)), Hypervisor: p.Sender,
				DataPortID: fmt.Sprintf("port-%d-0", i), DataMAC: fakeremote.MACClient, DataIP: fmt.Sprintf("198.18.210.%d", 10+2*i)},
			{ID: fmt.Sprintf("srv-%d-1", i), Name: fmt.Sprintf("asap2e2e-%s-%svm1", runID, fixtures.PairRole(i)), Hypervisor: p.Receiver,
				DataPortID: fmt.Sprintf("port-%d-1", i), DataMAC: fakeremote.MACServer, DataIP: fmt.Sprintf("198.18.210.%d", 11+2*i)},
		}}
		fp, err := ff.f.newPair(fixtures.PairTopology{Index: i, Pair: p, Topology: topo})
		if err != nil {
			t.Fatal(err)
		}
		data := out(p)
		play := fakeremote.SleepThen(func(bool) remote.Result { return remote.Result{Stdout: data} })
		ff.clients = append(ff.clients, fakeGuests(t, ff.w, fp, links, listen(p), play))
		ff.f.Pairs = append(ff.f.Pairs, fp)
	}
	return ff
}

// fakeHypervisor is node n's fake (the i-th node's), which answers the
// CPU reading with the lab's recorded readings of hv1 or hv2.
func fakeHypervisor(tb testing.TB, w *fakeremote.World, cfg *config.Config, i int, n string) *fakeremote.Runner {
	td := filepath.Join("..", "hostcpu", "testdata")
	hv := fakeremote.New("hypervisor "+n, w)
	rec := []string{"hv1", "hv2"}[i%2]
	hv.On(hostcpu.Command(),
		fakeremote.Reply{Stdout: readFile(tb, filepath.Join(td, "reading-lab-"+rec+"-before.txt"))},
		fakeremote.Reply{Stdout: readFile(tb, filepath.Join(td, "reading-lab-"+rec+"-after.txt"))})
	// OVS's drop counters around each window (drops.go): the lab's switch, dropping nothing.
	hv.On(coverageCommand(cfg),
		fakeremote.Reply{Stdout: readFile(tb, filepath.Join("..", "offload", "testdata", "coverage", "ovs-3.1-lab-zed-hv1.txt"))})
	return hv
}

// guestLinks is the guests' recorded `ip -o link show`.
func guestLinks(tb testing.TB) string {
	return string(readFile(tb, filepath.Join("testdata", "ip-o-link-addr.txt")))
}

// fakeGuests gives pair fp fake guests (fakeremote.PairRunners over its
// topology) whose iperf3 servers listen after listen and whose client
// plays play; it returns the client guest.
func fakeGuests(tb testing.TB, w *fakeremote.World, fp *Pair, links string, listen time.Duration, play func(context.Context, int, bool) (remote.Result, error)) *fakeremote.Runner {
	guests, _ := fakeremote.PairRunners(tb, w, fp.Topology, filepath.Join("..", "offload", "testdata"), links)
	guests[0].Play.ListenDelay = listen
	guests[1].Play.Client = play
	fp.Guests = []remote.Runner{guests[0], guests[1]}
	return guests[1]
}

func tcpP1(t testing.TB) iperf3.Profile {
	p, ok := iperf3.Lookup("tcp-p1")
	if !ok {
		t.Fatal("no tcp-p1")
	}
	return p
}

// In concurrent mode every repeat's window opens for all pairs at once,
// although one pair's servers take 400 ms longer to listen, and nothing
// but the iperf3 clients themselves reaches any guest or hypervisor of any
// pair while a window runs: the CPU readings come before it opens and
// after it closes, the servers' listen checks before. Without the gate the
// fast pair's clients start 400 ms early and its readings after its window
// fall into the slow pair's.
func TestConcurrentFleetStartsTogetherAndNothingPollsInAWindow(t *testing.T) {
	nodes := []string{"compute1", "compute2"}
	rec := iperfJSON(t, "v3.12-tcp-p1.json")
	ff := newFakeFleet(t, nodes, config.FleetConcurrent, func(fleet.Pair) []byte { return rec }, func(p fleet.Pair) time.Duration {
		if p.Sender == "compute1" {
			return 400 * time.Millisecond
		}
		return 0
	})
	// Each node's environment and drift first, as SetUpFleet does: its
	// link, devlink and bond commands must land before every window.
	for _, n := range nodes {
		scriptLinks(t, ff, n, healthyLinks(t))
	}
	if err := ff.f.CollectEnvironment(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := ff.f.RunProfile(context.Background(), tcpP1(t)); err != nil {
		ff.w.Dump(t)
		t.Fatalf("RunProfile: %v", err)
	}
	windows := ff.f.lastGate.Windows()
	if len(windows) != 2 {
		t.Fatalf("windows %+v, want one per repeat", windows)
	}
	events := ff.w.Log()
	drift := 0
	for _, e := range events {
		switch e.Cmd {
		case envinfo.IPLinkCommand, eswitchCmd, bondCmd, offload.CmdOtherConfig:
			drift++
			if !e.At.Before(windows[0].Open) {
				t.Errorf("%s ran %q at %s, after the first window opened", e.Runner, e.Cmd, e.At.Format("15:04:05.000"))
			}
		}
	}
	if drift != 4*len(nodes) {
		t.Errorf("%d drift commands, want 4 per node", drift)
	}
	for _, w := range windows {
		if !slices.Equal(w.Pairs, []string{"p01", "p02"}) || w.Close.IsZero() {
			t.Errorf("window %+v: want both pairs, closed", w)
		}
		var starts []time.Time
		for _, e := range events {
			inside := e.At.After(w.Open) && e.At.Before(w.Close)
			switch {
			case strings.HasPrefix(e.Cmd, "iperf3 -c ") && inside:
				starts = append(starts, e.At)
			case inside:
				t.Errorf("window %s (%s..%s): %s ran %q at %s, inside the window", w.Key,
					w.Open.Format("15:04:05.000"), w.Close.Format("15:04:05.000"), e.Runner, e.Cmd, e.At.Format("15:04:05.000"))
			}
		}
		if len(starts) != 2 {
			t.Errorf("window %s: %d client starts inside it, want 2 (one per pair)", w.Key, len(starts))
			continue
		}
		for _, at := range starts {
			if d := at.Sub(w.Open); d > 100*time.Millisecond {
				t.Errorf("window %s: a client started %s after the window opened", w.Key, d)
			}
		}
	}
	if t.Failed() {
		ff.w.Dump(t)
	}
	s := ff.f.Section()
	if len(s.Results) != 2 {
		t.Fatalf("fleet results %+v", s.Results)
	}
	for _, r := range s.Results {
		if r.Repeats != 2 || r.Delivered.Median <= 0 || r.Error != "" || len(r.EvidenceFiles) != 2 || !strings.HasPrefix(r.EvidenceFiles[0], "pairs/p0") {
			t.Errorf("pair result %+v", r)
		}
	}
	// Per node, as sender and receiver: 2 nodes × 2 roles.
	if len(s.Rates) != 4 {
		t.Errorf("rates %+v", s.Rates)
	}
}

// In isolated mode each pair is measured alone, and the results file holds
// every finished pair while the next one runs (a killed run keeps them);
// a line names each pair done.
func TestIsolatedFleetWritesEachPairAsItFinishes(t *testing.T) {
	nodes := []string{"compute1", "compute2", "compute3"}
	rec := iperfJSON(t, "v3.12-tcp-p1.json")
	ff := newFakeFleet(t, nodes, config.FleetIsolated, func(fleet.Pair) []byte { return rec }, func(fleet.Pair) time.Duration { return 0 })
	// While pair 3's client runs, read the file as a killed run leaves it.
	var seen []string
	var readErr error
	last := ff.clients[2]
	play := last.Play.Client
	last.Play.Client = func(ctx context.Context, secs int, udp bool) (remote.Result, error) {
		if seen == nil {
			r, err := results.Load(filepath.Join(ff.f.Dir, ResultsFile))
			if err != nil {
				readErr = err
			} else if r.Fleet != nil {
				seen = []string{}
				for _, pr := range r.Fleet.Results {
					seen = append(seen, fmt.Sprintf("%s %d", pr.Pair, pr.Repeats))
				}
			}
		}
		return play(ctx, secs, udp)
	}
	if err := ff.f.RunProfile(context.Background(), tcpP1(t)); err != nil {
		t.Fatalf("RunProfile: %v", err)
	}
	if readErr != nil {
		t.Fatalf("results file mid-run: %v", readErr)
	}
	if want := []string{"compute1→compute2 2", "compute2→compute3 2"}; !slices.Equal(seen, want) {
		t.Errorf("results file while pair 3 ran: %q, want %q", seen, want)
	}
	// One pair at a time: every client returned before the next started.
	at, end := ff.w.Clients()
	for i := 1; i < len(at); i++ {
		if at[i].Before(end[i-1]) {
			t.Errorf("client %d started at %s before client %d returned at %s", i, at[i], i-1, end[i-1])
		}
	}
	for _, want := range []string{"pair 1/3 compute1→compute2 done: tcp-p1", "pair 3/3 compute3→compute1 done: tcp-p1"} {
		if !strings.Contains(ff.console.String(), want) {
			t.Errorf("console lacks %q:\n%s", want, ff.console.String())
		}
	}
	if r, err := results.Load(filepath.Join(ff.f.Dir, ResultsFile)); err != nil || r.Fleet == nil || len(r.Fleet.Results) != 3 {
		t.Errorf("results file at the end: %v", err)
	}
}

// A node whose NIC is slow both ways (every pair it is in delivers 7.5
// Gbit/s, the others 11.5) is the one the verdict names; its neighbours'
// low rates are explained by it.
func TestFleetVerdictNamesTheSlowNode(t *testing.T) {
	nodes := []string{"compute1", "compute2", "compute3", "compute4"}
	slow, fast := iperfJSON(t, "v3.12-tcp-p1.json"), iperfJSON(t, "v3.12-tcp-p15.json")
	ff := newFakeFleet(t, nodes, config.FleetConcurrent, func(p fleet.Pair) []byte {
		if p.Sender == "compute3" || p.Receiver == "compute3" {
			return slow
		}
		return fast
	}, func(fleet.Pair) time.Duration { return 0 })
	ff.f.Config.Run.ExpectedPath = results.PathBaseline // no check taken: judged on the rates
	if err := ff.f.RunProfile(context.Background(), tcpP1(t)); err != nil {
		t.Fatalf("RunProfile: %v", err)
	}
	v := ff.f.Verdict()
	if got := v.Failed(); !slices.Equal(got, []string{"compute3"}) {
		t.Fatalf("failed nodes %v, want [compute3]:\n%s", got, DescribeVerdict(v))
	}
	if d := DescribeVerdict(v); !strings.Contains(d, "compute3: tcp-p1 7.49 Gbit/s as sender") {
		t.Errorf("verdict %q does not say how compute3 is low", d)
	}
}

// Each verdict of a pair's evidence window is the node's it was taken on:
// compute2's software verdicts, taken in both of its pairs, fail compute2
// and only it, whichever end of the pair it was.
func TestFleetChecksAreAttributedToTheirNode(t *testing.T) {
	nodes := []string{"compute1", "compute2", "compute3"}
	rec := iperfJSON(t, "v3.12-tcp-p1.json")
	ff := newFakeFleet(t, nodes, config.FleetIsolated, func(fleet.Pair) []byte { return rec }, func(fleet.Pair) time.Duration { return 0 })
	verdict := func(hv string) results.Verdict {
		if hv == "compute2" {
			return results.VerdictSoftware
		}
		return results.VerdictOffloaded
	}
	for _, p := range ff.f.Pairs {
		var fcs []evidence.FlowCheck
		for _, hv := range []string{p.Nodes.Sender, p.Nodes.Receiver} {
			fcs = append(fcs, evidence.FlowCheck{Flow: "tcp", Hypervisor: hv,
				Check: offload.Check{Name: results.CheckTC, Verdict: verdict(hv), Reason: "tc on " + hv}})
		}
		ff.f.addChecks(p, fcs)
	}
	if err := ff.f.write(); err != nil {
		t.Fatal(err)
	}
	v := ff.f.CheckVerdict()
	if got := v.Failed(); !slices.Equal(got, []string{"compute2"}) {
		t.Fatalf("failed nodes %v, want [compute2]:\n%s", got, DescribeVerdict(v))
	}
	if r := v.Failures[0].Reasons; len(r) != 2 || !strings.Contains(r[0], "tc on compute2") ||
		!strings.Contains(r[0], "pair compute1→compute2") || !strings.Contains(r[1], "pair compute2→compute3") {
		t.Errorf("compute2's reasons %q: want its verdict in each of its pairs", r)
	}
	for _, c := range ff.f.Section().Checks {
		if c.Reason != "tc on "+c.Node {
			t.Errorf("check %+v attributed to the wrong node", c)
		}
	}
	if r, err := results.Load(filepath.Join(ff.f.Dir, ResultsFile)); err != nil || len(r.Fleet.Checks) != 6 {
		t.Errorf("results file: %v", err)
	}
}

// A pair that could not be reached moves nothing in every profile, and
// the verdict names its nodes.
func TestFleetBrokenPairNamesItsNodes(t *testing.T) {
	nodes := []string{"compute1", "compute2", "compute3"}
	rec := iperfJSON(t, "v3.12-tcp-p1.json")
	ff := newFakeFleet(t, nodes, config.FleetConcurrent, func(fleet.Pair) []byte { return rec }, func(fleet.Pair) time.Duration { return 0 })
	ff.f.Config.Run.ExpectedPath = results.PathBaseline
	ff.f.Pairs[1].Broken = fmt.Errorf("ssh to guest: connection refused")
	err := ff.f.RunProfile(context.Background(), tcpP1(t))
	if err == nil || !strings.Contains(err.Error(), "pair p02 compute2→compute3: not measured: ssh to guest") {
		t.Fatalf("RunProfile error %v", err)
	}
	v := ff.f.Verdict()
	if got := v.Failed(); !slices.Equal(got, []string{"compute2", "compute3"}) {
		t.Fatalf("failed nodes %v:\n%s", got, DescribeVerdict(v))
	}
}

// Each node's configuration is read once, before any window, and a node
// whose OVS lost hw-offload is marked against the fleet's majority. The
// other nodes answer with the lab's recorded other_config (no hw-offload:
// "false (unset)"); compute2's answer is test input, not a recording: the
// same map with hw-offload="true" added.
func TestFleetDriftMarksTheOddNode(t *testing.T) {
	nodes := []string{"compute1", "compute2", "compute3"}
	rec := iperfJSON(t, "v3.12-tcp-p1.json")
	ff := newFakeFleet(t, nodes, config.FleetIsolated, func(fleet.Pair) []byte { return rec }, func(fleet.Pair) time.Duration { return 0 })
	lab := readFile(t, filepath.Join("..", "offload", "testdata", "ovs", "other-config-lab-zed.json"))
	for _, n := range nodes {
		out := lab
		if n == "compute2" {
			out = []byte(strings.Replace(string(lab), `[["userspace-tso-enable","true"]]`, `[["hw-offload","true"],["userspace-tso-enable","true"]]`, 1))
		}
		ff.hvs[n].On(offload.CmdOtherConfig, fakeremote.Reply{Stdout: out})
	}
	if err := ff.f.CollectEnvironment(context.Background()); err != nil {
		t.Fatal(err)
	}
	r, err := results.Load(filepath.Join(ff.f.Dir, ResultsFile))
	if err != nil {
		t.Fatal(err)
	}
	var marked []string
	for _, d := range r.Fleet.Drift {
		if d.Values[results.DriftTCPolicy] != "none (unset)" {
			t.Errorf("%s: tc-policy %q", d.Node, d.Values[results.DriftTCPolicy])
		}
		for _, k := range d.Differs {
			marked = append(marked, d.Node+" "+k+"="+d.Values[k])
		}
	}
	if want := []string{"compute2 ovs_hw_offload=true"}; !slices.Equal(marked, want) {
		t.Errorf("drift marks %q, want %q", marked, want)
	}
	n := 0
	for _, e := range ff.w.Log() {
		if e.Cmd == offload.CmdOtherConfig {
			n++
		}
	}
	if n != len(nodes) {
		t.Errorf("other_config read %d times, want once per node", n)
	}
}

// A pair whose repeats fail in a concurrent fleet looks after each of them,
// and asks its hypervisors' ovs-vswitchd (shared with the other pair, which
// measures on them) only once every pair's window of that repeat has
// closed: no look-up lands inside any window.
func TestConcurrentFleetLooksAfterTheWindow(t *testing.T) {
	nodes := []string{"compute1", "compute2"}
	ok, cut := iperfJSON(t, "v3.12-tcp-p1.json"), stallJSON(t, "v3.12-tcp-p1-path-cut.json")
	ff := newFakeFleet(t, nodes, config.FleetConcurrent, func(p fleet.Pair) []byte {
		if p.Sender == "compute1" {
			return cut
		}
		return ok
	}, func(fleet.Pair) time.Duration { return 0 })
	cmd := offload.VswitchdCommand(offload.AppctlSecs(ff.f.Config.Interval(config.IntervalCommand).Timeout))
	for _, n := range nodes {
		ff.hvs[n].On(cmd, fakeremote.Reply{Stdout: []byte(vswitchdRecording(t, "ovs-3.1-answering.txt"))})
	}
	err := ff.f.RunProfile(context.Background(), tcpP1(t))
	if err == nil || !strings.Contains(err.Error(), "after the window: ") {
		t.Fatalf("RunProfile: %v, want the failed pair's repeats explained", err)
	}
	windows := ff.f.lastGate.Windows()
	if len(windows) != 2 {
		t.Fatalf("windows %+v, want one per repeat", windows)
	}
	cov := coverageCommand(ff.f.Config)
	var asked, covRead int
	for _, e := range ff.w.Log() {
		switch e.Cmd {
		case cmd:
			asked++
		case cov:
			covRead++
		default:
			continue
		}
		for _, w := range windows {
			if !e.At.Before(w.Open) && !e.At.After(w.Close) {
				t.Errorf("%s was asked %q at %s, inside window %s (%s..%s)", e.Runner, e.Cmd, e.At.Format("15:04:05.000"), w.Key,
					w.Open.Format("15:04:05.000"), w.Close.Format("15:04:05.000"))
			}
		}
	}
	// The failed pair's two hypervisors, after each of its two repeats.
	if asked != 4 {
		t.Errorf("ovs-vswitchd asked %d times, want 4", asked)
	}
	// Every pair's OVS drop counters, on its two hypervisors, before and
	// after each repeat's window: 2 pairs × 2 × 2 × 2 repeats.
	if covRead != 16 {
		t.Errorf("OVS drop counters read %d times, want 16", covRead)
	}
	if u := ff.w.Unexpected(); len(u) > 0 {
		t.Errorf("unexpected commands: %q", u)
	}
	if t.Failed() {
		ff.w.Dump(t)
	}
}
