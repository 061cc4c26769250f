package harness

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/config"
	"github.com/mosk-qa/asap2-e2e/e2e/evidence"
	"github.com/mosk-qa/asap2-e2e/e2e/fleet"
	"github.com/mosk-qa/asap2-e2e/e2e/internal/fakeremote"
	"github.com/mosk-qa/asap2-e2e/e2e/offload"
	"github.com/mosk-qa/asap2-e2e/e2e/remote"
	"github.com/mosk-qa/asap2-e2e/e2e/results"
	"github.com/mosk-qa/asap2-e2e/fixtures"
)

// The dpctl check's two commands (offload.CheckDpctl).
const (
	dpctlOffloadedCmd = "ovs-appctl dpctl/dump-flows -m type=offloaded"
	dpctlAllCmd       = "ovs-appctl dpctl/dump-flows -m"
)

// flowSpan is one evidence flow of one pair, as its client guest saw it.
type flowSpan struct {
	pair       fleet.Pair
	udp        bool
	start, end time.Time
}

// checksFleet is a fake fleet whose evidence windows run: the dpctl check
// alone (two samples a flow, offload.capture_window apart), no flood
// ping, flows of 2 s; each hypervisor names a representor for every port
// on it, and replays the recorded hardware path's dpctl samples, or the
// software path's on the nodes in software. Each pair's client plays the
// recorded TCP or UDP flow (cut makes a pair's TCP flow end as a deleted
// port cuts it) and logs when it ran. Every hypervisor's ovs-vswitchd
// answers the look after a failed flow.
type checksFleet struct {
	*fakeFleet
	mu    sync.Mutex
	spans []flowSpan
}

func newChecksFleet(t *testing.T, nodes []string, mode string, software map[string]bool, cut map[fleet.Pair]bool) *checksFleet {
	t.Helper()
	ff := newFakeFleet(t, nodes, mode, func(fleet.Pair) []byte { return nil }, func(fleet.Pair) time.Duration { return 0 })
	cf := &checksFleet{fakeFleet: ff}
	cfg := ff.f.Config
	cfg.Offload = config.Offload{Checks: []string{results.CheckDpctl}, FlowDuration: 2 * time.Second,
		Settle: 300 * time.Millisecond, CaptureWindow: 200 * time.Millisecond}
	for n, hv := range ff.hvs {
		scriptDpctl(t, cfg, hv, software[n])
	}
	tcp, udp := swRecording(t, "iperf3-tcp.json"), swRecording(t, "iperf3-udp.json")
	pathCut := stallJSON(t, "v3.12-tcp-p1-path-cut.json")
	for i, p := range ff.f.Pairs {
		scriptRepresentors(ff.hvs, p.Topology)
		// Each flow lasts its -t and until its window's checks are done:
		// a flow of the wall's clock alone made the verdicts depend on the
		// machine (fakeremote.FlowEnds).
		ends := fakeremote.NewFlowEnds()
		p.checksDone = func(ft evidence.FlowTiming) { ends.ChecksDone(ft.Flow) }
		play := ends.Client(fakeremote.SleepThen(func(isUDP bool) remote.Result {
			switch {
			case isUDP:
				return remote.Result{Stdout: udp}
			case cut[p.Nodes]:
				return remote.Result{Stdout: pathCut}
			}
			return remote.Result{Stdout: tcp}
		}))
		ff.clients[i].Play.Client = func(ctx context.Context, secs int, isUDP bool) (remote.Result, error) {
			start := time.Now()
			res, err := play(ctx, secs, isUDP)
			cf.mu.Lock()
			cf.spans = append(cf.spans, flowSpan{pair: p.Nodes, udp: isUDP, start: start, end: time.Now()})
			cf.mu.Unlock()
			return res, err
		}
	}
	return cf
}

// swRecording is a recording of the software path's session
// (e2e/offload/testdata/sw).
func swRecording(tb testing.TB, name string) []byte {
	return readFile(tb, filepath.Join("..", "offload", "testdata", "sw", name))
}

// scriptDpctl makes fake hypervisor hv answer the dpctl check with the
// recorded hardware path's two samples (e2e/evidence/testdata/window), or
// the software path's when software, and the look after a failed flow with
// an ovs-vswitchd that answers.
func scriptDpctl(tb testing.TB, cfg *config.Config, hv *fakeremote.Runner, software bool) {
	hw := func(name string) []byte {
		return readFile(tb, filepath.Join("..", "evidence", "testdata", "window", name))
	}
	off1, off2, all1, all2 := hw("dpctl-offloaded-sample1.txt"), hw("dpctl-offloaded-sample2.txt"), hw("dpctl-offloaded-sample1.txt"), hw("dpctl-offloaded-sample2.txt")
	if software {
		off1, off2 = swRecording(tb, "dpctl-tcp-offloaded-1.txt"), swRecording(tb, "dpctl-tcp-offloaded-2.txt")
		all1, all2 = swRecording(tb, "dpctl-tcp-all-1.txt"), swRecording(tb, "dpctl-tcp-all-2.txt")
	}
	hv.On(dpctlOffloadedCmd, fakeremote.Reply{Stdout: off1}, fakeremote.Reply{Stdout: off2})
	hv.On(dpctlAllCmd, fakeremote.Reply{Stdout: all1}, fakeremote.Reply{Stdout: all2})
	look := offload.VswitchdCommand(offload.AppctlSecs(cfg.Interval(config.IntervalCommand).Timeout))
	hv.On(look, fakeremote.Reply{Stdout: []byte(vswitchdRecording(tb, "ovs-3.1-answering.txt"))})
}

// scriptRepresentors makes each node's fake name a representor for the
// data port of each of topo's servers on it.
func scriptRepresentors(hvs map[string]*fakeremote.Runner, topo *fixtures.Topology) {
	for _, srv := range topo.Servers {
		hvs[srv.Hypervisor].On(offload.FindInterfaceCommand(srv.DataPortID), fakeremote.Reply{Stdout: []byte("rep-" + srv.DataPortID + "\n")})
	}
}

func sharesNode(a, b fleet.Pair) bool {
	return a.Sender == b.Sender || a.Sender == b.Receiver || a.Receiver == b.Sender || a.Receiver == b.Receiver
}

// quietRounds fails when anything but the round's own checks and clients
// reached a guest or a hypervisor while a window of a round ran (the
// dpctl samples and the iperf3 clients are the window itself).
func (cf *checksFleet) quietRounds(t *testing.T, rounds []results.FleetRound) {
	t.Helper()
	for _, r := range rounds {
		for _, w := range r.Windows {
			if w.End == nil {
				t.Errorf("round %d %s window never closed", r.Round, w.Flow)
				continue
			}
			for _, e := range cf.w.Log() {
				if !e.At.After(w.Start) || !e.At.Before(*w.End) {
					continue
				}
				if strings.HasPrefix(e.Cmd, "iperf3 -c ") || (strings.HasPrefix(e.Runner, "hypervisor ") && strings.HasPrefix(e.Cmd, "ovs-appctl dpctl/dump-flows")) {
					continue
				}
				t.Errorf("round %d %s window (%s..%s): %s ran %q at %s", r.Round, w.Flow, w.Start.Format("15:04:05.000"),
					w.End.Format("15:04:05.000"), e.Runner, e.Cmd, e.At.Format("15:04:05.000"))
			}
		}
	}
}

// A 4-node ring's checks run in 2 rounds of pairs that share no node, in
// isolated mode too: the flows of the pairs of a round overlap (each
// flow's window opened for both by the start barrier), the flows of pairs
// that share a node never do, each round's pairs, windows and start skew
// are in the results file, nothing but the checks reaches a guest or a
// hypervisor while a window runs, and every node is judged by its own
// verdicts.
func TestFleetChecksRunInRounds(t *testing.T) {
	t.Parallel()
	nodes := []string{"compute1", "compute2", "compute3", "compute4"}
	cf := newChecksFleet(t, nodes, config.FleetIsolated, nil, nil)
	began := time.Now()
	if err := cf.f.RunOffloadChecks(context.Background()); err != nil {
		cf.w.Dump(t)
		t.Fatalf("RunOffloadChecks: %v", err)
	}
	took := time.Since(began)
	t.Logf("4 pairs' checks (2 flows of 2 s each) in %s", took.Round(10*time.Millisecond))
	s := cf.f.Section()
	var plan []string
	for _, r := range s.Rounds {
		plan = append(plan, fmt.Sprint(r.Pairs))
	}
	if want := "[compute1→compute2 compute3→compute4] [compute2→compute3 compute4→compute1]"; strings.Join(plan, " ") != want {
		t.Fatalf("rounds %s, want %s", strings.Join(plan, " "), want)
	}
	goal := results.SkewGoal(cf.f.Config.Offload.FlowDuration.Seconds())
	for _, r := range s.Rounds {
		if r.Shard != "1/1" || r.FlowSeconds != 2 || r.Error != "" || len(r.Windows) != 2 {
			t.Errorf("round %+v", r)
		}
		for i, w := range r.Windows {
			if w.Flow != []string{"tcp", "udp"}[i] || !slices.Equal(w.Pairs, r.Pairs) {
				t.Errorf("round %d window %d: %+v, want the %s flow of both pairs", r.Round, i, w, []string{"tcp", "udp"}[i])
			}
		}
		t.Logf("round %d: start skew %.1f ms", r.Round, 1000*r.SkewSeconds)
		if r.SkewSeconds > goal || r.SkewSeconds > 0.1 {
			t.Errorf("round %d: start skew %v s (goal %v s)", r.Round, r.SkewSeconds, goal)
		}
	}
	cf.mu.Lock()
	spans := slices.Clone(cf.spans)
	cf.mu.Unlock()
	if len(spans) != 8 {
		t.Fatalf("%d flows, want 2 per pair", len(spans))
	}
	for i, a := range spans {
		for _, b := range spans[i+1:] {
			overlap := a.start.Before(b.end) && b.start.Before(a.end)
			switch {
			case sharesNode(a.pair, b.pair) && overlap:
				t.Errorf("%s and %s share a node, yet their flows overlapped (%s..%s, %s..%s)", a.pair, b.pair,
					a.start.Format("15:04:05.000"), a.end.Format("15:04:05.000"), b.start.Format("15:04:05.000"), b.end.Format("15:04:05.000"))
			case !sharesNode(a.pair, b.pair) && a.udp == b.udp && !overlap:
				t.Errorf("%s and %s share no node and ran in one round, yet their %v flows did not overlap", a.pair, b.pair, map[bool]string{false: "tcp", true: "udp"}[a.udp])
			}
		}
	}
	cf.quietRounds(t, s.Rounds)
	if u := cf.w.Unexpected(); len(u) > 0 {
		t.Errorf("unexpected commands: %q", u)
	}
	if v := cf.f.CheckVerdict(); !v.Pass() || len(s.Checks) != 16 {
		t.Errorf("%d checks, verdict:\n%s", len(s.Checks), DescribeVerdict(v))
	}
	r, err := results.Load(filepath.Join(cf.f.Dir, ResultsFile))
	if err != nil || len(r.Fleet.Rounds) != 2 || len(r.Fleet.Rounds[1].Windows) != 2 {
		t.Errorf("results file: %v", err)
	}
	for _, want := range []string{
		"offload checks: 4 pair(s) in 2 round(s) of pairs that share no node, each round's windows together: round 1 compute1→compute2, compute3→compute4; round 2 ",
		"checks round 1/2: 2 pair(s) at once (compute1→compute2, compute3→compute4)",
		"pair 3/4 compute3→compute4 checks done (round 1/2): compute3 2 offloaded; compute4 2 offloaded",
		"checks round 2/2: tcp window of 2 pair(s) from ",
	} {
		if !strings.Contains(cf.console.String(), want) {
			t.Errorf("console lacks %q:\n%s", want, cf.console.String())
		}
	}
	if t.Failed() {
		cf.w.Dump(t)
	}
}

// One pair of a round fails (its TCP flow cut) on a node that also runs
// in software: the failure names that pair alone, the other pair of the
// round runs both its flows and keeps its verdicts, the failed pair looks
// at its hypervisors only once the round's TCP window closed, and the
// verdict names the node whose own checks said software — not the failed
// pair's other node, nor the nodes of the other pair.
func TestFleetChecksFailureStaysWithItsPair(t *testing.T) {
	t.Parallel()
	nodes := []string{"compute1", "compute2", "compute3", "compute4"}
	failed := fleet.Pair{Sender: "compute3", Receiver: "compute4"}
	cf := newChecksFleet(t, nodes, config.FleetConcurrent, map[string]bool{"compute4": true}, map[fleet.Pair]bool{failed: true})
	err := cf.f.RunOffloadChecks(context.Background())
	if err == nil || !strings.Contains(err.Error(), "pair p03 compute3→compute4: ") || !strings.Contains(err.Error(), "after the window: ") ||
		strings.Contains(err.Error(), "p01") {
		t.Fatalf("RunOffloadChecks: %v, want pair p03's failure alone, explained", err)
	}
	s := cf.f.Section()
	first := s.Rounds[0]
	if !strings.HasPrefix(first.Error, "pair p03 compute3→compute4: ") || strings.Contains(first.Error, "p01") || s.Rounds[1].Error != "" {
		t.Errorf("rounds' errors %q, %q: want round 1's to name p03 alone", first.Error, s.Rounds[1].Error)
	}
	if len(first.Windows) != 2 || !slices.Equal(first.Windows[0].Pairs, []string{"compute1→compute2", "compute3→compute4"}) ||
		!slices.Equal(first.Windows[1].Pairs, []string{"compute1→compute2"}) {
		t.Errorf("round 1 windows %+v: want tcp of both pairs, udp of compute1→compute2 alone", first.Windows)
	}
	look := offload.VswitchdCommand(offload.AppctlSecs(cf.f.Config.Interval(config.IntervalCommand).Timeout))
	var looked []string
	for _, e := range cf.w.Log() {
		if e.Cmd != look {
			continue
		}
		looked = append(looked, e.Runner)
		if e.At.Before(*first.Windows[0].End) {
			t.Errorf("%s was looked at at %s, before round 1's tcp window closed at %s", e.Runner, e.At.Format("15:04:05.000"), first.Windows[0].End.Format("15:04:05.000"))
		}
	}
	slices.Sort(looked)
	if !slices.Equal(looked, []string{"hypervisor compute3", "hypervisor compute4"}) {
		t.Errorf("looked at %q, want the failed pair's two hypervisors once", looked)
	}
	cf.quietRounds(t, s.Rounds)
	v := cf.f.CheckVerdict()
	if got := v.Failed(); !slices.Equal(got, []string{"compute4"}) {
		t.Fatalf("failed nodes %v, want [compute4]:\n%s", got, DescribeVerdict(v))
	}
	if r := strings.Join(v.Failures[0].Reasons, "\n"); !strings.Contains(r, "in pair compute3→compute4") || !strings.Contains(r, "in pair compute4→compute1") {
		t.Errorf("compute4's reasons:\n%s\nwant its verdicts in both of its pairs", r)
	}
	if u := cf.w.Unexpected(); len(u) > 0 {
		t.Errorf("unexpected commands: %q", u)
	}
	if t.Failed() {
		cf.w.Dump(t)
	}
}
