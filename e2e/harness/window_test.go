package harness

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/config"
	"github.com/mosk-qa/asap2-e2e/e2e/evidence"
	"github.com/mosk-qa/asap2-e2e/e2e/internal/fakeremote"
	"github.com/mosk-qa/asap2-e2e/e2e/iperf3"
	"github.com/mosk-qa/asap2-e2e/e2e/offload"
	"github.com/mosk-qa/asap2-e2e/e2e/remote"
	"github.com/mosk-qa/asap2-e2e/e2e/results"
	"github.com/mosk-qa/asap2-e2e/e2e/wait"
	"github.com/mosk-qa/asap2-e2e/fixtures"
)

// The evidence window itself is tested in e2e/evidence with fake runners;
// here, that the harness wires it to this run: the pair, the lookups, the
// artifacts directory, the results file, the log and the look after a
// failed flow.

var (
	hvNames  = fakeremote.HVNames
	readFile = fakeremote.ReadFile
)

// pair is a session's parts around fake guests (which play iperf3) and
// hypervisors: config, topology and fakes.
type pair struct {
	t       *testing.T
	cfg     *config.Config
	topo    *fixtures.Topology
	guests  [2]*fakeremote.Runner
	hvs     [2]*fakeremote.Runner
	console bytes.Buffer
	witness *fakeWitness
	world   *fakeremote.World // the fakes' command log
}

func newPair(t *testing.T) *pair {
	wd := &pair{t: t}
	wd.cfg = &config.Config{
		Run:         config.Run{ExpectedPath: results.PathASAP2},
		GuestAccess: config.GuestAccess{User: "ubuntu"},
		Traffic:     config.Traffic{Port: config.DefaultTrafficPort, Repeats: 1},
		Offload:     config.Offload{Checks: append([]string(nil), results.AllChecks...), FlowDuration: 6 * time.Second, Settle: 300 * time.Millisecond},
		Intervals: map[string]wait.Interval{
			config.IntervalIperfServer: {Timeout: 5 * time.Second, Poll: 50 * time.Millisecond},
		},
	}
	wd.topo = fakeremote.PairTopology()
	wd.witness = healthyWitness(wd.topo)
	links := string(readFile(t, filepath.Join("testdata", "ip-o-link-addr.txt")))
	wd.world = fakeremote.NewWorld()
	wd.guests, wd.hvs = fakeremote.PairRunners(t, wd.world, wd.topo, filepath.Join("..", "offload", "testdata"), links)
	return wd
}

// session builds the Run and its one Pair under test around the fakes. Both
// hypervisors' ovs-vswitchd answer the look after a failed window
// (e2e/offload/testdata/vswitchd), with ovs-appctl's wait from the config as it is now.
func (wd *pair) session() *Pair {
	t := wd.t
	answering := vswitchdRecording(t, "ovs-3.1-answering.txt")
	for _, hv := range wd.hvs {
		hv.On(offload.VswitchdCommand(offload.AppctlSecs(wd.cfg.Interval(config.IntervalCommand).Timeout)), fakeremote.Reply{Stdout: []byte(answering)})
	}
	dir := t.TempDir()
	runID, err := fixtures.NewRunID(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	res, err := results.NewWriter(filepath.Join(dir, ResultsFile), results.Results{
		RunID: runID, StartedAt: time.Now().UTC(), Config: configSummary(wd.cfg),
	})
	if err != nil {
		t.Fatal(err)
	}
	run := &Run{
		Config: wd.cfg, RunID: runID, Dir: dir, Results: res,
		Hypervisors: map[string]remote.Runner{hvNames[0]: wd.hvs[0], hvNames[1]: wd.hvs[1]},
		console:     &wd.console,
	}
	s := run.singlePair()
	s.Topology, s.Guests, s.witness = wd.topo, []remote.Runner{wd.guests[0], wd.guests[1]}, wd.witness
	return s
}

// RunOffloadChecks gives the evidence window this run's pair, lookups,
// artifacts directory, results file, log and look after a failed flow.
func TestEvidenceWindowWiring(t *testing.T) {
	wd := newPair(t)
	ctx := context.Background()
	delete(wd.witness.ports, wd.topo.Servers[0].DataPortID)
	wd.hvs[0].On(offload.FindInterfaceCommand(wd.topo.Servers[0].DataPortID), fakeremote.Reply{Stdout: []byte("enp8s0f0_1\n")})
	s := wd.session()
	w := s.evidenceWindow()

	if w.Config != s.run.Config || len(w.Hypervisors) != 2 || w.Hypervisors[hvNames[1]] != remote.Runner(wd.hvs[1]) {
		t.Errorf("config or hypervisors not the session's: %+v", w)
	}
	for i, srv := range wd.topo.Servers {
		want := evidence.Guest{Name: srv.Name, Hypervisor: srv.Hypervisor, PortID: srv.DataPortID, MAC: srv.DataMAC, DataIP: srv.DataIP, Runner: wd.guests[i]}
		if w.Guests[i] != want {
			t.Errorf("guest %d = %+v, want %+v", i, w.Guests[i], want)
		}
	}
	if rep, err := w.Representor(ctx, hvNames[0], wd.topo.Servers[0].DataPortID); err != nil || rep != "enp8s0f0_1" {
		t.Errorf("representor = %q, %v", rep, err)
	}
	if _, err := os.Stat(filepath.Join(s.Dir, "offload", "representor-lookup", hvNames[0]+"-ovs-vsctl-find-iface-"+wd.topo.Servers[0].DataPortID+".txt")); err != nil {
		t.Errorf("representor lookup evidence: %v", err)
	}
	if iface, err := w.DataInterface(ctx, 1); err != nil || iface != "eth1" {
		t.Errorf("data interface = %q, %v", iface, err)
	}
	p, _ := iperf3.Lookup("tcp-p1")
	if in := w.Iperf(p, time.Second); in.Server != remote.Runner(wd.guests[0]) || in.Client != remote.Runner(wd.guests[1]) || in.ServerAddr != wd.topo.Servers[0].DataIP || in.Duration != time.Second {
		t.Errorf("iperf3 input = %+v", in)
	}
	if rel, err := w.Save("offload/flood_ping.txt", []byte("x\n")); err != nil || rel != "offload/flood_ping.txt" {
		t.Errorf("save = %q, %v", rel, err)
	}
	w.Logf("checks start %s", "now")
	if !strings.Contains(wd.console.String(), "] checks start now\n") {
		t.Errorf("log: %q", wd.console.String())
	}

	// The look after a failed flow: the server guest's data port deleted
	// while the flow ran (the lab scenario): the failure says so,
	// and when the client's data stopped.
	cut := stallJSON(t, "v3.12-tcp-p1-path-cut.json")
	m := iperf3.Measurement{Processes: []iperf3.ProcessRun{{ClientJSON: cut}}}
	orig := errors.New("iperf3 run tcp-p1: guest asap2e2e-client: port 5201: iperf3 reported: control socket has closed unexpectedly")
	err := w.Explain(ctx, "the sustained tcp flow", m, orig)
	want := "iperf3 reported: control socket has closed unexpectedly; after the window: data port asap2e2e-20261202t091530-3fa2-vm0-data (6c1f2f9e-8a4b-4c1d-9f3e-2b7a5d0e1a01) no longer exists; " +
		"iperf3 client on asap2e2e-client stopped receiving at 15:57:11"
	if !errors.Is(err, orig) || !strings.Contains(err.Error(), want) {
		t.Errorf("explain = %v, want it to contain %q", err, want)
	}

	fc := evidence.FlowCheck{Flow: "tcp", Hypervisor: hvNames[0], Files: []string{"offload/tcp/compute1/x.txt"},
		Check: offload.Check{Name: results.CheckDpctl, Verdict: results.VerdictOffloaded, Reason: "why"}}
	if err := w.Record([]evidence.FlowCheck{fc}); err != nil {
		t.Fatal(err)
	}
	res, err := results.Load(filepath.Join(s.Dir, ResultsFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Offload) != 1 || res.Offload[0].Reason != "compute1: why" || res.Offload[0].EvidenceFiles[0] != fc.Files[0] {
		t.Errorf("results file offload = %+v", res.Offload)
	}
	// The look found the damage: the window is refused.
	if err := w.NotRun("the offload checks"); err == nil || !strings.HasPrefix(err.Error(), "the offload checks: not run: ") {
		t.Errorf("not run on damage: %v", err)
	}
}
