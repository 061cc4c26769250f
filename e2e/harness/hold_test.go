package harness

import (
	"context"
	"fmt"
	"net/netip"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/config"
	"github.com/mosk-qa/asap2-e2e/e2e/conntrack"
	"github.com/mosk-qa/asap2-e2e/e2e/internal/fakeremote"
	"github.com/mosk-qa/asap2-e2e/e2e/offload"
	"github.com/mosk-qa/asap2-e2e/e2e/remote"
	"github.com/mosk-qa/asap2-e2e/e2e/results"
	"github.com/mosk-qa/asap2-e2e/e2e/wait"
)

// churnRecording is a recorded sequence of e2e/offload/testdata/churn
// (record-churn.sh, a private OVS 3.1.0) as the fake hypervisor's answers:
// its dumps with the recording's sender MAC made the pair's client's, and
// its coverage readings.
func churnRecording(t *testing.T, seq, mac string) (dumps, coverage []fakeremote.Reply) {
	t.Helper()
	for i := 0; i < 12; i++ {
		d := readFile(t, filepath.Join("..", "offload", "testdata", "churn", seq, fmt.Sprintf("%02d.txt", i)))
		c := readFile(t, filepath.Join("..", "offload", "testdata", "churn", seq, fmt.Sprintf("coverage-%02d.txt", i)))
		dumps = append(dumps, fakeremote.Reply{Stdout: []byte(strings.ReplaceAll(string(d), "16:00:da:94:76:b3", mac))})
		coverage = append(coverage, fakeremote.Reply{Stdout: c})
	}
	// The fake repeats its answers from the start once they run out: the
	// last read is kept after the twelfth.
	for i := 0; i < 40; i++ {
		dumps, coverage = append(dumps, dumps[11]), append(coverage, coverage[11])
	}
	return dumps, coverage
}

// The churn window over the fakes: the client hypervisor answers the
// recorded purge (fast/: re-added within a read period), the server's the
// steady flow; a userspace datapath, so the slow path is not judged.
// Every read falls inside the client's run, and the result is in the
// results file with its reads saved.
func TestChurnWindowOverRecordings(t *testing.T) {
	wd := newPair(t)
	wd.cfg.Churn = config.Churn{Duration: 2 * time.Second, Bitrate: 10_000_000, Length: 1000, SlowPathShare: 0.01, SlowPathPeriod: time.Second}
	// Each read's bound and the commands': room for a starved go test
	// -race (the rule-scale test's reads, bounded at 1 s, were cut there).
	iv := wait.Interval{Timeout: 20 * time.Second, Poll: 100 * time.Millisecond}
	wd.cfg.Intervals[config.IntervalChurnSample] = iv
	wd.cfg.Intervals[config.IntervalCommand] = wait.Interval{Timeout: time.Minute, Poll: time.Second}
	out := iperfJSON(t, "v3.12-udp-b0-p1.json")
	// The client's flow lasts its -t and until each hypervisor has answered
	// 8 dumps (the purge is at the fifth, and the steady host needs 5): a
	// flow of the wall's clock alone held too few reads when a starved
	// go test -race slowed them.
	const dumpsInFlow = 8
	served := newDumpsServed(len(wd.hvs), dumpsInFlow)
	sleep := fakeremote.SleepThen(func(bool) remote.Result { return remote.Result{Stdout: out} })
	wd.guests[1].Play.Client = func(ctx context.Context, secs int, udp bool) (remote.Result, error) {
		res, err := sleep(ctx, secs, udp)
		served.wait(ctx)
		return res, err
	}
	// When each answered dump arrived (before the fake's check of its
	// context, so a read the window let begin is here and one it had
	// stopped is not), and the span the window gave its reads.
	var (
		mu             sync.Mutex
		arrived        []time.Time
		opened, closed time.Time
	)
	for i, hv := range wd.hvs {
		seq := []string{"steady", "fast"}[i]
		dumps, cov := churnRecording(t, seq, wd.topo.Servers[1].DataMAC)
		answered := served.host()
		for k := range dumps {
			r := dumps[k]
			dumps[k].Before = answered
			dumps[k].Choose = func(at time.Time) fakeremote.Reply {
				mu.Lock()
				arrived = append(arrived, at)
				mu.Unlock()
				return r
			}
		}
		hv.On(offload.DpctlFlowsCommand, fakeremote.Reply{Stdout: []byte("flow-dump from the main thread:\n")})
		hv.On(offload.DpctlFlowsCommand+" -m", dumps...)
		hv.On(offload.CoverageCommand(appctlSecs(iv.Timeout)), cov...)
		hv.On(offload.FindInterfaceCommand(wd.topo.Servers[i].DataPortID), fakeremote.Reply{Stdout: []byte("rep0\n")})
		// A veth representor (recorded: no cpu_hit counters), so its link
		// counters (test input, not a recording) are the slow path.
		hv.On(offload.CPUHitStatsCommand("rep0"), fakeremote.Reply{Stdout: readFile(t, filepath.Join("..", "offload", "testdata", "sw", "ip-stats-cpuhit-rep-before.json"))})
		hv.On(offload.LinkStatsCommand("rep0"), fakeremote.Reply{Stdout: []byte(`[{"ifname":"rep0","stats64":{"rx":{"bytes":1,"packets":100},"tx":{"bytes":1,"packets":100}}}]`)})
	}
	// tc: the server's representor has no rule (a veth: the recorded empty
	// JSON listing); the client's carries the published mlx5 encap rule
	// (testdata/hw, its source MAC made the client's), the same handle and
	// growing counters, then under another handle from the fourth read on.
	wd.hvs[0].On(offload.TCCommand("rep0"), fakeremote.Reply{Stdout: []byte("[]\n")})
	tc := func(name, handle string) fakeremote.Reply {
		b := strings.ReplaceAll(string(readFile(t, filepath.Join("..", "offload", "testdata", "hw", name))), "ca:2e:a7:3f:f5:0f", wd.topo.Servers[1].DataMAC)
		if handle != "" {
			b = strings.Replace(b, "handle 0x1\n", "handle "+handle+"\n", 1)
		}
		return fakeremote.Reply{Stdout: []byte(b)}
	}
	tcReplies := []fakeremote.Reply{tc("tc-mlx5-vf-rep-encap.txt", ""), tc("tc-mlx5-vf-rep-encap-sample2.txt", ""), tc("tc-mlx5-vf-rep-encap-sample2.txt", "")}
	for i := 0; i < 40; i++ {
		tcReplies = append(tcReplies, tc("tc-mlx5-vf-rep-encap-sample2.txt", "0x2"))
	}
	wd.hvs[1].On(offload.TCCommand("rep0"), tcReplies...)
	// The servers take a second to exit after their client: a window that
	// read until iperf3.Run returned, not until its clients did, would
	// read then.
	wd.guests[0].Play.ExitDelay = time.Second
	s := wd.session()
	s.readsSpan = func(o, c time.Time) { opened, closed = o, c }
	cr, err := s.RunChurn(context.Background())
	if err != nil {
		wd.world.Dump(t)
		t.Fatalf("RunChurn: %v", err)
	}
	if len(cr.Hosts) != 2 || cr.DurationSeconds != 2 || cr.Stable {
		t.Fatalf("result %+v", cr)
	}
	steady, fast := cr.Hosts[0], cr.Hosts[1]
	if !steady.Stable || steady.Count != 0 || !steady.Software || steady.Reads < 5 || steady.Deleted != 0 || steady.SamplesFile == "" {
		t.Errorf("steady: %+v", steady)
	}
	// The purge comes at the recording's fifth read (after read 3).
	if fast.Stable || fast.Count != 1 || len(fast.Events) != 1 || fast.Events[0].Kind != string(offload.ChurnReadded) || !strings.Contains(fast.Events[0].Detail, "dpif_flow_del") {
		t.Errorf("fast: %+v", fast)
	}
	if steady.TCChurnCount != nil || !strings.HasPrefix(steady.TCReason, "not judged: no tc rule of the pair on the representor") {
		t.Errorf("steady tc: %v %q", steady.TCChurnCount, steady.TCReason)
	}
	if fast.TCChurnCount == nil || *fast.TCChurnCount != 1 || len(fast.TCEvents) != 1 || !strings.Contains(fast.TCEvents[0].Detail, "tc handle:1 then handle:2") || strings.Contains(fast.TCReason, "slow path") || fast.Count != 1 {
		t.Errorf("fast tc: %v %+v %q", fast.TCChurnCount, fast.TCEvents, fast.TCReason)
	}
	for _, h := range cr.Hosts {
		if !strings.Contains(h.Reason, "software datapath") || !strings.Contains(h.Reason, "the reads cost") || h.BlindSpot == "" {
			t.Errorf("%s: %s / %s", h.Hypervisor, h.Reason, h.BlindSpot)
		}
	}
	snap := s.Results.Snapshot()
	if len(snap.Churn) != 1 || snap.Churn[0].Hosts[1].Count != 1 {
		t.Errorf("results file: %+v", snap.Churn)
	}
	// The reads run during the client only: every read that was answered
	// began after the clients' start (iperf3.Run reports it just before it
	// sends their command) and before the window stopped its reads, which
	// it does once the clients have returned. A fixed margin after the
	// client's -t (1 s) failed when a starved go test -race took longer to
	// see the client's end.
	ends := func() []time.Time { _, e := wd.world.Clients(); return e }()
	if opened.IsZero() || closed.IsZero() || len(ends) != 1 || closed.Before(ends[0]) {
		t.Fatalf("the reads' span %v..%v, the client's end %v", opened, closed, ends)
	}
	if len(arrived) < 2*dumpsInFlow {
		t.Errorf("%d dumps answered, want at least %d", len(arrived), 2*dumpsInFlow)
	}
	for _, at := range arrived {
		if at.Before(opened) || at.After(closed) {
			t.Errorf("a read at %v from the clients' start, the window's reads %v..%v", at.Sub(opened), time.Duration(0), closed.Sub(opened))
		}
	}
	// churn_count gates the window.
	got := results.EvaluateThresholds([]results.ThresholdRule{{Profile: "churn", Path: "asap2", Metric: results.MetricChurnCount, Op: "<=", Value: 0}}, &snap)
	if got[0].Pass || got[0].Actual == nil || *got[0].Actual != 1 {
		t.Errorf("threshold %+v", got[0])
	}
}

// dumpsServed is a window's fake traffic held until every hypervisor has
// answered n datapath dumps (the reads its judgement needs), however long
// a starved test takes to ask for them.
type dumpsServed struct {
	n  int32
	wg sync.WaitGroup
}

func newDumpsServed(hosts int, n int32) *dumpsServed {
	d := &dumpsServed{n: n}
	d.wg.Add(hosts)
	return d
}

// host is one hypervisor's dump replies' Before: it counts its answers.
func (d *dumpsServed) host() func(context.Context) {
	var count atomic.Int32
	return func(context.Context) {
		if count.Add(1) == d.n {
			d.wg.Done()
		}
	}
}

// wait returns once every hypervisor has answered n dumps, or ctx ends.
func (d *dumpsServed) wait(ctx context.Context) {
	all := make(chan struct{})
	go func() { d.wg.Wait(); close(all) }()
	select {
	case <-all:
	case <-ctx.Done():
	}
}

// fakeBackground is a background command that runs until stopped.
type fakeBackground struct{ done chan struct{} }

func (p *fakeBackground) Wait() (remote.Result, error) {
	<-p.done
	return remote.Result{ExitCode: -1, Signal: "TERM"}, nil
}
func (p *fakeBackground) Stop() (remote.Result, error) {
	close(p.done)
	return remote.Result{ExitCode: -1, Signal: "TERM"}, nil
}

// dumpOf is a userspace datapath's dump of n UDP flows from mac, each
// line the recording's (churn/steady/00.txt) with its own source port.
func dumpOf(t *testing.T, n int, mac string) []byte {
	t.Helper()
	rec := string(readFile(t, filepath.Join("..", "offload", "testdata", "churn", "steady", "00.txt")))
	line := strings.Split(strings.TrimSpace(rec), "\n")[1]
	line = strings.ReplaceAll(line, "16:00:da:94:76:b3", mac)
	var b strings.Builder
	b.WriteString("flow-dump from the main thread:\n")
	for i := 0; i < n; i++ {
		l := strings.Replace(line, "udp(src=40000/0", fmt.Sprintf("udp(src=%d", 20000+i), 1)
		l = strings.Replace(l, "ufid:9402f525", fmt.Sprintf("ufid:%08x", i), 1)
		b.WriteString(l + "\n")
	}
	return []byte(b.String())
}

// The rule-scale profile over the fakes: the client guest's sender (its
// exact command) opens 1000 5-tuples, the hypervisors' dumps grow 0, 400,
// 800, 1000 and hold; upcall/show, coverage and the log are the
// recordings'. The insertion is judged, the software datapath named, the
// log read through the ovs-vswitchd command line and its old lines left
// out of the window.
func TestRuleScaleOverFakes(t *testing.T) {
	wd := newPair(t)
	wd.cfg.RuleScale = config.RuleScale{Counts: []int{1000}, Hold: time.Second, Refresh: time.Second, FirstSourcePort: 20000,
		PlateauSamples: 2, PlateauGrowth: 0.01, HardwareShare: 0.97, VswitchdLog: config.VswitchdLogAuto}
	// Each read's bound: room for a starved go test -race, whose reads
	// of 1000 flows took up to 2.5 s (a bound of 1 s left them incomplete).
	iv := wait.Interval{Timeout: 20 * time.Second, Poll: 150 * time.Millisecond}
	wd.cfg.Intervals[config.IntervalRuleScaleSample] = iv
	// The sender's bound is its schedule twice and this: room for the
	// reads below on a starved machine.
	wd.cfg.Intervals[config.IntervalCommand] = wait.Interval{Timeout: time.Minute, Poll: time.Second}
	srv, cli := wd.topo.Servers[0], wd.topo.Servers[1]
	gen := FlowSenderInput{Src: cli.DataIP, Dst: srv.DataIP, DstPort: wd.cfg.Traffic.Port, First: 20000, N: 1000, Refresh: time.Second, Hold: time.Second}
	// The sender's fill ends once each hypervisor has answered 8 dumps: by
	// then the read before the fill and 6 during it have been taken (a
	// host's next read starts once every host's read ended), 4 of them at
	// the plateau. A fill of a fixed 4 s of the wall's clock held 3 reads
	// when a starved go test -race made a read of 1000 flows cost 0.7 to
	// 2.9 s, and the window rightly saw the count still growing.
	served := newDumpsServed(len(wd.hvs), 8)
	wd.guests[1].On(gen.SenderCommand(), fakeremote.Reply{
		Before: served.wait,
		Stdout: []byte(`{"opened": 1000, "bind_failures": 0, "open_seconds": 0.35, "python": "3.11.2"}` + "\n")})
	wd.guests[0].Starts = func(ctx context.Context, cmd string) (remote.Process, bool) {
		if !strings.HasPrefix(cmd, "python3 -c ") {
			return nil, false
		}
		return &fakeBackground{done: make(chan struct{})}, true
	}
	// Test input, not a recording: ss's listing with the receiver bound.
	wd.guests[0].On(remote.ListenCommand("udp"), fakeremote.Reply{Stdout: []byte(fmt.Sprintf("State Recv-Q Send-Q Local Address:Port Peer Address:Port\nUNCONN 0 0 %s:%d 0.0.0.0:*\n", srv.DataIP, wd.cfg.Traffic.Port))})
	appctl := appctlSecs(iv.Timeout)
	scale := func(name string) []byte {
		return readFile(t, filepath.Join("..", "offload", "testdata", "scale", name))
	}
	for _, hv := range wd.hvs {
		answered := served.host()
		var dumps []fakeremote.Reply
		for _, n := range []int{0, 400, 800, 1000, 1000, 1000, 1000} {
			dumps = append(dumps, fakeremote.Reply{Stdout: dumpOf(t, n, cli.DataMAC), Before: answered})
		}
		for i := 0; i < 30; i++ {
			dumps = append(dumps, dumps[6])
		}
		hv.On(offload.DpctlFlowsCommand, fakeremote.Reply{Stdout: []byte("flow-dump from the main thread:\n")})
		hv.On(offload.DpctlFlowsCommand+" -m", dumps...)
		hv.On(offload.UpcallCommand(appctl), fakeremote.Reply{Stdout: scale("upcall-show-ramp.txt")})
		hv.On(offload.CoverageCommand(appctl),
			fakeremote.Reply{Stdout: readFile(t, filepath.Join("..", "offload", "testdata", "churn", "steady", "coverage-00.txt"))},
			fakeremote.Reply{Stdout: scale("coverage-limit.txt")})
		hv.On(offload.FindInterfaceCommand(srv.DataPortID), fakeremote.Reply{Stdout: []byte("rep0\n")})
		hv.On(offload.FindInterfaceCommand(cli.DataPortID), fakeremote.Reply{Stdout: []byte("rep1\n")})
		hv.On(VswitchdCmdlineCommand, fakeremote.Reply{Stdout: []byte("ovs-vswitchd\n--log-file=/lab/hv-ovs-vswitchd.log\n")})
		hv.On(fmt.Sprintf("tail -c %d %s", vswitchdLogBytes, remote.ShellQuote("/lab/hv-ovs-vswitchd.log")), fakeremote.Reply{Stdout: scale("ovs-vswitchd.log")})
	}
	s := wd.session()
	cr, err := s.RunRuleScale(context.Background(), 1000)
	if err != nil {
		wd.world.Dump(t)
		t.Fatalf("RunRuleScale: %v", err)
	}
	if cr.Opened != 1000 || cr.OpenSeconds != 0.35 || cr.Judged != results.TableDatapathFlows || len(cr.Hosts) != 2 || cr.EvidenceFile == "" {
		t.Fatalf("result %+v", cr)
	}
	for _, h := range cr.Hosts {
		in := h.Flows
		if in == nil || in.Final != 1000 || in.RulesPerSecond <= 0 || !in.Plateau || in.PlateauCount != 1000 || in.BelowTarget || in.HardwareSeconds != nil || !h.Software {
			t.Errorf("%s: %+v %+v", h.Hypervisor, h, in)
			continue
		}
		// upcall/show's recorded 2000 flows at a limit of 35000; coverage's
		// recorded flow-limit hits; the recorded log's lines are hours
		// before the window.
		if h.OVSFlows != 2000 || h.OVSFlowLimit != 35000 || h.Coverage["upcall_flow_limit_hit"] != 32086 || len(h.LogEvents) != 0 || h.LogNote != "" {
			t.Errorf("%s: ovs %d/%d coverage %v log %v %q", h.Hypervisor, h.OVSFlows, h.OVSFlowLimit, h.Coverage, h.LogEvents, h.LogNote)
		}
		for _, w := range []string{"software datapath: none in hardware by construction", "coverage: upcall_flow_limit_hit +32086", "log: no scale line in the window", "the reads cost"} {
			if !strings.Contains(h.Reason, w) {
				t.Errorf("%s: reason lacks %q: %s", h.Hypervisor, w, h.Reason)
			}
		}
		if !strings.HasPrefix(h.Steering, "not read: the NIC's PCI address is not known") {
			t.Errorf("%s: steering %q", h.Hypervisor, h.Steering)
		}
	}
	snap := s.Results.Snapshot()
	if len(snap.RuleScale) != 1 {
		t.Errorf("results file: %+v", snap.RuleScale)
	}
}

// The slow path of a representor: cpu_hit where the driver keeps it (an
// mlx5 representor's link counters count offloaded packets too), the link
// counters of a device without it, and no count where ip cannot list
// cpu_hit (iproute2 before 5.18).
func TestRepPackets(t *testing.T) {
	w := fakeremote.NewWorld()
	hv := fakeremote.New("hypervisor hv", w)
	h := &holdHost{ctHost: &ctHost{name: "hv", runner: hv}, rep: "enp8s0f0_1"}
	// Test input, not a recording: cpu_hit 30 + 20, link 9e6 + 9e6.
	hv.On(offload.CPUHitStatsCommand("enp8s0f0_1"), fakeremote.Reply{Stdout: []byte(`[{"ifindex":9,"ifname":"enp8s0f0_1","group":"offload","subgroup":"cpu_hit","stats64":{"rx":{"bytes":3000,"packets":30},"tx":{"bytes":2000,"packets":20}}}]`)})
	hv.On(offload.LinkStatsCommand("enp8s0f0_1"), fakeremote.Reply{Stdout: []byte(`[{"ifname":"enp8s0f0_1","stats64":{"rx":{"bytes":1,"packets":9000000},"tx":{"bytes":1,"packets":9000000}}}]`)})
	n, err := h.repPackets(context.Background())
	if err != nil || *n != 50 {
		t.Errorf("cpu_hit: %v %v", n, err)
	}
	hv.On(offload.CPUHitStatsCommand("enp8s0f0_1"), fakeremote.Reply{Exit: 255, Stderr: []byte("Option \"stats\" is unknown, try \"ip help\".\n")})
	if n, err := h.repPackets(context.Background()); err == nil || !strings.Contains(err.Error(), "no cpu_hit (slow-path) counters") {
		t.Errorf("old iproute2: %v %v", n, err)
	}
}

// With port security the rule-scale profile counts its 5-tuples in the
// conntrack table: one UDP flow of N from the client to traffic.port, any
// source port. Over OVS's recorded userspace table (e2e/conntrack's
// dump-conntrack-udp.txt: iperf3 -u -P 2, two UDP entries to 5201) every
// UDP entry to that port counts, none in hardware.
func TestRuleScaleConntrackCount(t *testing.T) {
	c, s := netip.MustParseAddr("198.18.212.1"), netip.MustParseAddr("198.18.212.2")
	flows := []conntrack.Flow{{Proto: "udp", Client: c, Server: s, ServerPort: 5201, Opened: 1000}}
	ovs := readFile(t, filepath.Join("..", "conntrack", "testdata", "ovs", "dump-conntrack-udp.txt"))
	smp := conntrack.SampleOf([]byte(""), ovs, flows)
	if smp.Error != "" || smp.Source != conntrack.SourceOVS || smp.Found != 2 || smp.Hardware != 0 {
		t.Errorf("%+v", smp)
	}
}
