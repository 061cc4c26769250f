package evidence

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/config"
	"github.com/mosk-qa/asap2-e2e/e2e/conntrack"
	"github.com/mosk-qa/asap2-e2e/e2e/internal/fakeremote"
	"github.com/mosk-qa/asap2-e2e/e2e/iperf3"
	"github.com/mosk-qa/asap2-e2e/e2e/offload"
	"github.com/mosk-qa/asap2-e2e/e2e/remote"
	"github.com/mosk-qa/asap2-e2e/e2e/results"
	"github.com/mosk-qa/asap2-e2e/e2e/wait"
	"github.com/mosk-qa/asap2-e2e/fixtures"
)

// Unit tests of the evidence window (Run and checkDuringFlow) with fake
// guests and hypervisors that replay recorded output sequences: the whole orchestration — flood ping, the sustained
// flows, settle, the four checks on both hypervisors, ConfirmFlow, the
// outlasted-flow downgrade, evidence files and the results file — runs
// without hardware, for the hardware path as well as the software path.
// testdata/window/README.md names the source of every replayed output.

// The pair (fakeremote.PairTopology): Servers[0] (the iperf3 server) on
// compute1, Servers[1] (the client, which also sends the flood ping) on
// compute2, with the MACs and addresses of the recorded software-path
// session (e2e/offload/testdata).
const (
	macServer  = fakeremote.MACServer
	macClient  = fakeremote.MACClient
	guestIface = "eth1"
	vxlanDev   = "vxlan_sys_4789"
	// hwRep is the VF representor of the hardware-path sources
	// ([mlx5-vf-tunnel]); each hypervisor's first VF has this name.
	hwRep = "enp8s0f0_1"
	// settleSlack absorbs the scheduling delay between the runner's
	// ClientsStarting time (from which the harness counts the settle) and
	// the fake receiving the client command (from which this test
	// measures): 160 ms measured with a lab run and a CPU burner beside
	// the test. A settle counted from before the servers listened (the
	// bug the early-capture case catches) puts checks 20 ms after the
	// client, far below settle - slack.
	settleSlack = 300 * time.Millisecond
	windowFlow  = 6 * time.Second
)

// The fakes (e2e/internal/fakeremote) under this file's short names.
type (
	event      = fakeremote.Event
	world      = fakeremote.World
	reply      = fakeremote.Reply
	fakeRunner = fakeremote.Runner
	iperfPlay  = fakeremote.IperfPlay
)

var (
	newWorld  = fakeremote.NewWorld
	newFake   = fakeremote.New
	sleepThen = fakeremote.SleepThen
)

var hvNames = fakeremote.HVNames

// swReps are the representors of the recorded session (veths): compute1
// holds the server guest (…:02), compute2 the client (…:01).
var swReps = [2]string{"offrec-rep2", "offrec-rep1"}

var readFile = fakeremote.ReadFile

// sw reads a recorded software-path output of the offload checks.
func sw(t testing.TB, name string) []byte {
	return readFile(t, filepath.Join("..", "offload", "testdata", "sw", name))
}

// win reads a file of testdata/window (derived, see its README.md).
func win(t testing.TB, name string) []byte {
	return readFile(t, filepath.Join("testdata", "window", name))
}

// window is one scenario's session parts: config, topology and fakes.
type window struct {
	t       *testing.T
	w       *world
	cfg     *config.Config
	topo    *fixtures.Topology
	guests  [2]*fakeRunner
	hvs     [2]*fakeRunner
	reps    [2]string
	console bytes.Buffer
	// after is what the look after a failed flow (the harness's
	// Explain) finds, "" for nothing; clientOut is the client output
	// that look must be given.
	after, clientOut string
	// explained names each flow Explain was asked about.
	explainMu sync.Mutex
	explained []string
	// missPath counts representor captures answered with the miss-path
	// burst.
	missPath atomic.Int32
	// ends ends the fake flows when the window's checks of them are done.
	ends *flowEnds
	// iperfOut is the recorded client output of a flow.
	iperfOut func(udp bool) remote.Result
}

// flowEnds ties the end of the fake flows to the window under test
// (fakeremote.FlowEnds, told by Window.ChecksDone) and keeps the window's
// timings. The cases about checks that outlast the flow give their flows
// an end of their own (endsAlone) and hold a check until after it.
type flowEnds struct {
	*fakeremote.FlowEnds
	mu      sync.Mutex
	timings []FlowTiming // the window's, in order
}

func newFlowEnds() *flowEnds {
	return &flowEnds{FlowEnds: fakeremote.NewFlowEnds()}
}

// checksDone is the Window's ChecksDone.
func (e *flowEnds) checksDone(ft FlowTiming) {
	e.mu.Lock()
	e.timings = append(e.timings, ft)
	e.mu.Unlock()
	e.ChecksDone(ft.Flow)
}

// client answers with out once the window's checks of this client's flow
// are done.
func (e *flowEnds) client(out func(udp bool) remote.Result) fakeremote.Client {
	return e.Client(fakeremote.Answer(out))
}

// windows is the timing of every window of a flow that reached its checks.
func (e *flowEnds) windows() []FlowTiming {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]FlowTiming(nil), e.timings...)
}

// endsAlone makes the client's flows last their -t of the wall's clock,
// whenever the checks end: for the cases whose checks outlast the flow.
func (wd *window) endsAlone() {
	wd.guests[1].Play.Client = sleepThen(wd.iperfOut)
}

func newWindow(t *testing.T) *window {
	wd := &window{t: t, w: newWorld(), ends: newFlowEnds()}
	wd.cfg = &config.Config{
		Run:         config.Run{ExpectedPath: results.PathASAP2},
		GuestAccess: config.GuestAccess{User: "ubuntu"}, // not root: ping and the control capture go through sudo -n
		Traffic:     config.Traffic{Port: config.DefaultTrafficPort, Repeats: 1},
		Offload: config.Offload{
			Checks:     append([]string(nil), results.AllChecks...),
			FloodPings: 1000, // as recorded in sw/ping-flood.txt
			// What the flows ask for (-t) and the reasons name; the fake
			// flows end when the checks are done (flowEnds), or, in the
			// cases about checks that outlast the flow, after this long.
			FlowDuration:           windowFlow,
			CaptureWindow:          500 * time.Millisecond,
			CaptureFirstPackets:    config.DefaultCaptureFirstPackets,
			CaptureMaxPackets:      300, // the bound of the recorded captures
			Settle:                 300 * time.Millisecond,
			VXLANDevice:            vxlanDev,
			RepresentorMaxPackets:  config.DefaultRepresentorMaxPackets,
			CountersMinFlowPackets: config.DefaultCountersMinFlowPackets,
		},
		// Interval() returns a known name's entry as is: both fields set.
		Intervals: map[string]wait.Interval{
			config.IntervalIperfServer: {Timeout: 5 * time.Second, Poll: 50 * time.Millisecond},
		},
	}
	wd.topo = fakeremote.PairTopology()
	wd.guests, wd.hvs = fakeremote.PairRunners(t, wd.w, wd.topo, filepath.Join("..", "offload", "testdata"), linkListing(t))
	tcpJSON, udpJSON := sw(t, "iperf3-tcp.json"), sw(t, "iperf3-udp.json")
	wd.iperfOut = func(udp bool) remote.Result {
		if udp {
			return remote.Result{Stdout: udpJSON}
		}
		return remote.Result{Stdout: tcpJSON}
	}
	wd.guests[1].Play.Client = wd.ends.client(wd.iperfOut)
	wd.guests[1].On("sudo -n ping -f -q -c 1000 -W 1 "+wd.topo.Servers[0].DataIP, reply{Stdout: sw(t, "ping-flood.txt")})
	return wd
}

// loseUDPSetup allows one UDP stream-setup retry and makes the first n UDP
// clients (every one when n < 0) run their -t and then fail as iperf3 3.12
// does when the setup datagram is lost (recorded:
// ../iperf3/testdata/v3.12-udp-setup-request-lost.json).
func (wd *window) loseUDPSetup(n int32) {
	wd.cfg.Traffic.UDPSetupRetries, wd.cfg.Traffic.UDPSetupBackoff = 1, 10*time.Millisecond
	lost := readFile(wd.t, filepath.Join("..", "iperf3", "testdata", "v3.12-udp-setup-request-lost.json"))
	normal := wd.guests[1].Play.Client
	lostClient := wd.ends.client(func(bool) remote.Result { return remote.Result{Stdout: lost, ExitCode: 1} })
	var udpCalls atomic.Int32
	wd.guests[1].Play.Client = func(ctx context.Context, secs int, udp bool) (remote.Result, error) {
		if udp && (n < 0 || udpCalls.Add(1) <= n) {
			return lostClient(ctx, secs, udp)
		}
		return normal(ctx, secs, udp)
	}
}

// linkListing is the `ip -o link show` lines of ../harness/testdata/ip-o-link-addr.txt
// (its data NIC has MAC fa:16:3e:aa:bb:cc).
func linkListing(t testing.TB) string {
	var out []string
	for _, l := range strings.Split(string(readFile(t, filepath.Join("..", "harness", "testdata", "ip-o-link-addr.txt"))), "\n") {
		if strings.Contains(l, "link/") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n") + "\n"
}

func (wd *window) filter(i int, proto string) string {
	f, err := offload.CaptureFilter(wd.topo.Servers[i].DataMAC, wd.topo.Servers[1-i].DataMAC, proto)
	if err != nil {
		wd.t.Fatal(err)
	}
	return f
}

// lookup makes hypervisor i name rep as its guest's representor.
func (wd *window) lookup(i int, rep string) {
	wd.reps[i] = rep
	wd.hvs[i].On(offload.FindInterfaceCommand(wd.topo.Servers[i].DataPortID), reply{Stdout: []byte(rep + "\n")})
}

func qdiscCommand(dev string) string {
	return "tc qdisc show dev " + remote.ShellQuote(dev) + " ingress"
}

// tcText: dev has an ingress qdisc and tc only speaks text (iproute2
// without -j: tc/tc.c rejects the option and exits -1); the two text
// samples alternate.
func (wd *window) tcText(i int, dev string, sample1, sample2 []byte) {
	hv := wd.hvs[i]
	hv.On(qdiscCommand(dev), reply{Stdout: []byte("qdisc ingress ffff: parent ffff:fff1 ----------------\n")})
	hv.On(offload.TCCommand(dev), reply{Exit: 255, Stderr: []byte(`Option "-j" is unknown, try "tc -help".` + "\n")})
	hv.On(offload.TCTextCommand(dev), reply{Stdout: sample1}, reply{Stdout: sample2})
}

// tcNone: dev has no ingress qdisc and no filter (recorded).
func (wd *window) tcNone(i int, dev string) {
	hv := wd.hvs[i]
	hv.On(qdiscCommand(dev), reply{Stdout: sw(wd.t, "tc-qdisc-noingress.txt")})
	hv.On(offload.TCCommand(dev), reply{Stdout: sw(wd.t, "tc-noqdisc.json")})
}

const (
	dpctlOffloaded = "ovs-appctl dpctl/dump-flows -m type=offloaded"
	dpctlAll       = "ovs-appctl dpctl/dump-flows -m"
)

func (wd *window) dpctl(i int, off1, off2, all1, all2 []byte) {
	wd.hvs[i].On(dpctlOffloaded, reply{Stdout: off1}, reply{Stdout: off2})
	wd.hvs[i].On(dpctlAll, reply{Stdout: all1}, reply{Stdout: all2})
}

// conntrack turns port security on and scripts hypervisor i's conntrack
// reads: the kernel's table of the TCP flow, then of the UDP flow, OVS's
// own table of each, and the datapath flows.
func (wd *window) conntrack(i int, kernelTCP, kernelUDP, ovsTCP, ovsUDP, flows []byte) {
	wd.cfg.DataPort.PortSecurity = true
	wd.hvs[i].On(conntrack.ReadCommand, reply{Stdout: kernelTCP}, reply{Stdout: kernelUDP})
	wd.hvs[i].On(conntrack.DPCtlCommand, reply{Stdout: ovsTCP}, reply{Stdout: ovsUDP})
	wd.hvs[i].On(offload.DpctlFlowsCommand, reply{Stdout: flows})
}

// hwConntrack is the hardware path with port security on: the kernel's
// tables of the pair's connections [HW_OFFLOAD], flows the conntrack
// check's flow dump.
func hwConntrack(flows func(wd *window) []byte) func(wd *window) {
	return func(wd *window) {
		wd.hardwarePath()
		for i := range hvNames {
			wd.conntrack(i, win(wd.t, "conntrack-hw-tcp.txt"), win(wd.t, "conntrack-hw-udp.txt"), nil, nil, flows(wd))
		}
	}
}

// repCapture scripts the representor capture of each flow.
func (wd *window) repCapture(i int, tcp, udp reply) {
	oc := wd.cfg.Offload
	wd.hvs[i].On(offload.CaptureCommand(wd.reps[i], wd.filter(i, "tcp"), oc.CaptureWindow, oc.CaptureMaxPackets), tcp)
	wd.hvs[i].On(offload.CaptureCommand(wd.reps[i], wd.filter(i, "udp"), oc.CaptureWindow, oc.CaptureMaxPackets), udp)
}

// control scripts the control capture in guest i.
func (wd *window) control(i int, tcp, udp reply) {
	oc := wd.cfg.Offload
	sudo := wd.cfg.GuestAccess.User != "root"
	wd.guests[i].On(offload.ControlCaptureCommand(guestIface, wd.filter(i, "tcp"), oc.CaptureWindow, oc.CaptureMaxPackets, sudo), tcp)
	wd.guests[i].On(offload.ControlCaptureCommand(guestIface, wd.filter(i, "udp"), oc.CaptureWindow, oc.CaptureMaxPackets, sudo), udp)
}

func (wd *window) repCounters(i int, link0, link1, hit0, hit1 []byte) {
	wd.hvs[i].On(offload.LinkStatsCommand(wd.reps[i]), reply{Stdout: link0}, reply{Stdout: link1})
	wd.hvs[i].On(offload.CPUHitStatsCommand(wd.reps[i]), reply{Stdout: hit0}, reply{Stdout: hit1})
}

func (wd *window) guestCounters(i int, before, after []byte) {
	wd.guests[i].On(offload.LinkStatsCommand(guestIface), reply{Stdout: before}, reply{Stdout: after})
}

// Captures: each runs for the capture window.
func (wd *window) capture(stdout, stderr []byte, exit int) reply {
	return reply{Stdout: stdout, Stderr: stderr, Exit: exit, Sleep: wd.cfg.Offload.CaptureWindow}
}

// quietRep is an offloaded flow on the representor: its first packets, then
// silence until the window ends.
func (wd *window) quietRep(proto string) reply {
	return wd.capture(win(wd.t, "tcpdump-rep-first-"+proto+".txt"), win(wd.t, "tcpdump-rep-first-"+proto+".txt.stderr"), 124)
}

// fullCapture is the flow's packets, recorded on the software path (the
// -c bound reached, exit 0).
func (wd *window) fullCapture(proto string) reply {
	name := map[string]string{"tcp": "tcpdump-rep-tcp.txt", "udp": "tcpdump-rep-udp-count.txt"}[proto]
	return wd.capture(sw(wd.t, name), sw(wd.t, name+".stderr"), 0)
}

// hardwarePath replays the hardware-path evidence on both hypervisors: tc
// rules of the pair in hardware with growing hardware counters on the
// representor and the VXLAN device, offloaded:yes dp:tc flows growing, a
// representor capture with only the first packets while the guest's own
// interface is full of the flow, and flat cpu_hit counters while the link
// counters of the representor and of the guest grow.
func (wd *window) hardwarePath() {
	t := wd.t
	for i, hv := range hvNames {
		wd.lookup(i, hwRep)
		wd.tcText(i, hwRep, win(t, "tc-rep-"+hv+"-sample1.txt"), win(t, "tc-rep-"+hv+"-sample2.txt"))
		wd.tcText(i, vxlanDev, win(t, "tc-vxlan-"+hv+"-sample1.txt"), win(t, "tc-vxlan-"+hv+"-sample2.txt"))
		off1, off2 := win(t, "dpctl-offloaded-sample1.txt"), win(t, "dpctl-offloaded-sample2.txt")
		wd.dpctl(i, off1, off2, off1, off2)
		wd.repCapture(i, wd.quietRep("tcp"), wd.quietRep("udp"))
		flat := win(t, "ip-stats-cpuhit-rep-flat.json")
		wd.repCounters(i, sw(t, "ip-link-rep-before.json"), sw(t, "ip-link-rep-after.json"), flat, flat)
		wd.control(i, wd.fullCapture("tcp"), wd.fullCapture("udp"))
		wd.guestCounters(i, sw(t, "ip-link-guest-before.json"), sw(t, "ip-link-guest-after.json"))
	}
}

// softwarePath replays the recorded software path: no TC rule anywhere,
// empty type=offloaded dumps and growing dp:ovs flows, a representor
// capture full of the flow, growing veth counters without cpu_hit.
func (wd *window) softwarePath() {
	t := wd.t
	for i := range hvNames {
		wd.lookup(i, swReps[i])
		wd.tcNone(i, swReps[i])
		wd.tcNone(i, vxlanDev)
		wd.dpctl(i, sw(t, "dpctl-tcp-offloaded-1.txt"), sw(t, "dpctl-tcp-offloaded-2.txt"), sw(t, "dpctl-tcp-all-1.txt"), sw(t, "dpctl-tcp-all-2.txt"))
		wd.repCapture(i, wd.fullCapture("tcp"), wd.fullCapture("udp"))
		wd.repCounters(i, sw(t, "ip-link-rep-before.json"), sw(t, "ip-link-rep-after.json"), sw(t, "ip-stats-cpuhit-rep-before.json"), sw(t, "ip-stats-cpuhit-rep-after.json"))
		wd.control(i, wd.fullCapture("tcp"), wd.fullCapture("udp"))
		wd.guestCounters(i, sw(t, "ip-link-guest-before.json"), sw(t, "ip-link-guest-after.json"))
	}
}

// resultsFile is where the scenarios' Record keeps the verdicts.
const resultsFile = "results.json"

// run is one scenario's window under test: the Window around the fakes,
// and the run directory its evidence files and results file go to.
type run struct {
	w   Window
	Dir string
}

// session builds the Window under test around the fakes, with the
// harness's parts as a harness would wire them: evidence files and the
// results file under a temporary run directory, the representor lookup
// with its evidence, the log in wd.console, and the look after a failed
// flow answered by wd.after.
func (wd *window) session() *run {
	t := wd.t
	s := &run{Dir: t.TempDir()}
	res, err := results.NewWriter(filepath.Join(s.Dir, resultsFile), results.Results{
		RunID: wd.topo.RunID, StartedAt: time.Now().UTC(),
	})
	if err != nil {
		t.Fatal(err)
	}
	var logMu sync.Mutex
	logf := func(format string, args ...any) {
		logMu.Lock()
		defer logMu.Unlock()
		fmt.Fprintf(&wd.console, "[%s] %s\n", time.Now().UTC().Format("15:04:05"), fmt.Sprintf(format, args...))
	}
	save := func(rel string, data []byte) (string, error) {
		p := filepath.Join(s.Dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return "", err
		}
		return rel, results.WriteFileAtomic(p, data, 0o644)
	}
	hvs := map[string]remote.Runner{hvNames[0]: wd.hvs[0], hvNames[1]: wd.hvs[1]}
	s.w = Window{
		Config:      wd.cfg,
		Hypervisors: hvs,
		Representor: func(ctx context.Context, hv, portID string) (string, error) {
			name, ev, err := offload.FindRepresentor(ctx, hvs[hv], portID)
			if ev.Name != "" {
				if _, serr := save(path.Join("offload", "representor-lookup", hv+"-"+ev.Name), ev.Output); serr != nil {
					logf("saving evidence: %v", serr)
				}
			}
			if err != nil {
				return "", err
			}
			return name, nil
		},
		DataInterface: func(ctx context.Context, i int) (string, error) {
			res, err := wd.guests[i].Run(ctx, "ip -o link show")
			if err != nil {
				return "", err
			}
			if !strings.Contains(string(res.Stdout), wd.topo.Servers[i].DataMAC) {
				return "", fmt.Errorf("no interface has the data port's MAC %s", wd.topo.Servers[i].DataMAC)
			}
			return guestIface, nil
		},
		Iperf: func(p iperf3.Profile, duration time.Duration) iperf3.RunInput {
			iv := wd.cfg.Interval(config.IntervalIperfServer)
			return iperf3.RunInput{
				Server: wd.guests[0], Client: wd.guests[1], ServerAddr: wd.topo.Servers[0].DataIP,
				Profile: p, Duration: duration, Omit: wd.cfg.Traffic.Omit, BasePort: wd.cfg.Traffic.Port,
				MaxStreamsPerProcess: wd.cfg.Traffic.MaxStreamsPerProcess, GuestVCPUs: wd.topo.Flavor.VCPUs,
				ListenTimeout: iv.Timeout, ListenPoll: iv.Poll, StallTimeout: wd.cfg.Traffic.StallTimeout,
			}
		},
		Explain: wd.explain,
		Record: func(fcs []FlowCheck) error {
			return res.Update(func(r *results.Results) { r.Offload = append(r.Offload, CheckResults(fcs)...) })
		},
		Save:       save,
		Logf:       logf,
		ChecksDone: wd.ends.checksDone,
	}
	for i, srv := range wd.topo.Servers {
		s.w.Guests[i] = Guest{Name: srv.Name, Hypervisor: srv.Hypervisor, PortID: srv.DataPortID, MAC: srv.DataMAC, DataIP: srv.DataIP, Runner: wd.guests[i]}
	}
	return s
}

// explain stands for the harness's look after a failed flow (its own
// tests are in e2e/harness): it must be given the failed flow's client
// output (wd.clientOut, when set), and adds wd.after as the look does.
func (wd *window) explain(_ context.Context, what string, m iperf3.Measurement, err error) error {
	wd.explainMu.Lock()
	wd.explained = append(wd.explained, what)
	wd.explainMu.Unlock()
	if wd.clientOut != "" && (len(m.Processes) == 0 || string(m.Processes[0].ClientJSON) != wd.clientOut) {
		return fmt.Errorf("%w; the look was not given the client's output", err)
	}
	if wd.after == "" {
		return err
	}
	return fmt.Errorf("%w; after the window: %s", err, wd.after)
}

// windowCase is one scenario and what it must conclude.
type windowCase struct {
	name  string
	setup func(wd *window)
	// flows whose checks ran (Run stops at a failed flow).
	flows []string
	// want is every check's verdict, on both hypervisors and every flow;
	// reasons are substrings every reason of that check must contain.
	want    map[string]results.Verdict
	reasons map[string][]string
	// wantAt and reasonsAt override want and add to reasons for one
	// "flow/hypervisor/check".
	wantAt    map[string]results.Verdict
	reasonsAt map[string][]string
	// wantErr is a substring of Run's error; "" wants none.
	wantErr string
	// asap2OK and baselineOK: whether offload.ExpectPath accepts the
	// checks for that path.
	asap2OK, baselineOK bool
	// noIperfJSON: the client printed nothing, so no iperf3 evidence.
	noIperfJSON bool
	extra       func(t *testing.T, wd *window, s *run, fcs []FlowCheck)
}

func all(v results.Verdict) map[string]results.Verdict {
	return map[string]results.Verdict{
		results.CheckTC: v, results.CheckRepresentor: v, results.CheckDpctl: v, results.CheckCounters: v,
	}
}

func with(m map[string]results.Verdict, kv ...any) map[string]results.Verdict {
	out := map[string]results.Verdict{}
	for k, v := range m {
		out[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i].(string)] = kv[i+1].(results.Verdict)
	}
	return out
}

var bothFlows = []string{"tcp", "udp"}

func TestEvidenceWindow(t *testing.T) {
	cases := []windowCase{
		{
			// 1. The recorded real-hardware sequences prove the hardware
			// path through the whole window.
			name:  "hardware path",
			setup: func(wd *window) { wd.hardwarePath() },
			flows: bothFlows,
			want:  all(results.VerdictOffloaded),
			reasons: map[string][]string{
				results.CheckTC:          {hwRep + ": direction ", "hardware packets +3135", vxlanDev + ": direction ", "hardware packets +21665", "every stage in hardware from the first to the one that outputs"},
				results.CheckRepresentor: {"3 packets of the guests' flow", "while the control capture on eth1"},
				results.CheckDpctl:       {"2 IP flows between " + macClient + ", " + macServer + " offloaded by OVS's own claim"},
				results.CheckCounters:    {"moved 0 packets on its slow path (cpu_hit)", "moved 40000"},
			},
			asap2OK: true,
		},
		{
			// The same hardware evidence on a run whose network is
			// Geneve (issue 23): the pair's decap rules on vxlan_sys_4789
			// (enc_dst_port 4789) prove VXLAN offload, not Geneve's, so
			// tc is inconclusive and names why; the dpctl flows name no
			// tunnel and stand.
			name: "hardware path over VXLAN on a Geneve run",
			setup: func(wd *window) {
				wd.cfg.Network.Type = results.NetworkGeneve
				wd.hardwarePath()
			},
			flows: bothFlows,
			want:  with(all(results.VerdictOffloaded), results.CheckTC, results.VerdictInconclusive),
			reasons: map[string][]string{
				results.CheckTC: {vxlanDev + ": direction ", "crossed VXLAN (", "decap on " + vxlanDev, "the run's network type is geneve"},
			},
		},
		{
			// offload.flow_bitrate: both sustained flows run at most at the
			// cap (TCP's unlimited profile gets -b, UDP's -b 0 becomes the
			// cap), and the software path reads software as uncapped.
			name: "software path, flows capped by offload.flow_bitrate",
			setup: func(wd *window) {
				wd.cfg.Offload.FlowBitrate = 100_000_000
				wd.softwarePath()
			},
			flows:      bothFlows,
			want:       all(results.VerdictSoftware),
			baselineOK: true,
			extra: func(t *testing.T, wd *window, s *run, fcs []FlowCheck) {
				clients := 0
				for _, e := range wd.w.Log() {
					if !strings.HasPrefix(e.Cmd, "iperf3 -c") {
						continue
					}
					clients++
					f := strings.Fields(e.Cmd)
					if i := slices.Index(f, "-b"); i < 0 || i+1 == len(f) || f[i+1] != "100000000" {
						t.Errorf("a sustained flow's client is not held to offload.flow_bitrate: %s", e.Cmd)
					}
				}
				if clients != 2 {
					t.Errorf("%d iperf3 clients, want the TCP and the UDP flow's", clients)
				}
				if !strings.Contains(wd.console.String(), "at most 100 Mbit/s a stream: offload.flow_bitrate") {
					t.Errorf("the session log does not say the flows are capped:\n%s", wd.console.String())
				}
			},
		},
		{
			// 2. The recorded software path.
			name:  "software path",
			setup: func(wd *window) { wd.softwarePath() },
			flows: bothFlows,
			want:  all(results.VerdictSoftware),
			reasons: map[string][]string{
				results.CheckTC:          {"no ingress qdisc"},
				results.CheckRepresentor: {"packets of the guests' flow", "reached the representor", "at most 10 allowed"},
				results.CheckDpctl:       {"dp:ovs"},
				results.CheckCounters:    {"moved 40000 packets on its link counters"},
			},
			baselineOK: true,
		},
		{
			// Port security on, hardware path: the kernel holds the
			// flows' connections [HW_OFFLOAD] (TCP: a stream and the
			// control connection; UDP: a stream and the control), read
			// once per flow and hypervisor, and the pair crosses ct(.
			name:  "port security: hardware path with conntrack offloaded",
			setup: hwConntrack(func(wd *window) []byte { return win(wd.t, "dpctl-ct-sample1.txt") }),
			flows: bothFlows,
			want:  with(all(results.VerdictOffloaded), results.CheckConntrack, results.VerdictOffloaded),
			reasons: map[string][]string{
				results.CheckConntrack: {"kernel conntrack: 2 of 2 connections the run opened are [HW_OFFLOAD]"},
			},
			asap2OK: true,
			extra: func(t *testing.T, wd *window, s *run, fcs []FlowCheck) {
				reads := map[string]int{}
				for _, e := range wd.w.Log() {
					if e.Cmd == conntrack.ReadCommand {
						reads[e.Runner]++
					}
				}
				for _, hv := range wd.hvs {
					if reads[hv.Name()] != 2 {
						t.Errorf("%s: the kernel's table read %d times, want once per flow", hv.Name(), reads[hv.Name()])
					}
				}
			},
		},
		{
			// Issue 33, class 3: the same hardware path once iperf3's
			// control connection, idle while the test runs, has left the
			// flowtable (ESTABLISHED [ASSURED], no [HW_OFFLOAD]): every
			// data connection (the ports iperf3's client output lists)
			// is [HW_OFFLOAD], so the check is offloaded and names the
			// control connection as expected software. Old code: software.
			name: "port security: iperf3's idle control connection left the flowtable",
			setup: func(wd *window) {
				wd.hardwarePath()
				for i := range hvNames {
					wd.conntrack(i, win(wd.t, "conntrack-hw-idle-tcp.txt"), win(wd.t, "conntrack-hw-idle-udp.txt"), nil, nil, win(wd.t, "dpctl-ct-sample1.txt"))
				}
			},
			flows: bothFlows,
			want:  with(all(results.VerdictOffloaded), results.CheckConntrack, results.VerdictOffloaded),
			reasons: map[string][]string{
				results.CheckConntrack: {"iperf3's control connection", "expected"},
			},
			asap2OK: true,
		},
		{
			// Port security on, but the pair's datapath flows never cross
			// ct( (a noop firewall driver): the kernel's [HW_OFFLOAD]
			// entries prove nothing, the conntrack check says why and the
			// window fails naming the mode.
			name:    "port security: noop firewall driver",
			setup:   hwConntrack(func(wd *window) []byte { return sw(wd.t, "dpctl-tcp-all-1.txt") }),
			flows:   bothFlows,
			want:    with(all(results.VerdictOffloaded), results.CheckConntrack, results.VerdictInconclusive),
			reasons: map[string][]string{results.CheckConntrack: {"data_port.port_security is true but none of the pair's", "no proof of conntrack offload"}},
			wantErr: "the run's mode did not take effect: tcp flow: data_port.port_security is true but none of the pair's",
		},
		{
			// Port security on the lab's software path: the kernel holds
			// nothing, OVS's userspace conntrack holds the connections.
			name: "port security: userspace conntrack is software",
			setup: func(wd *window) {
				wd.softwarePath()
				for i := range hvNames {
					wd.conntrack(i, nil, nil, win(wd.t, "conntrack-ovs-tcp.txt"), win(wd.t, "conntrack-ovs-udp.txt"), win(wd.t, "dpctl-ct-userspace.txt"))
				}
			},
			flows: bothFlows,
			want:  with(all(results.VerdictSoftware), results.CheckConntrack, results.VerdictSoftware),
			reasons: map[string][]string{
				results.CheckConntrack: {"OVS's userspace conntrack", "the kernel's table none"},
			},
			baselineOK: true,
		},
		{
			// Port security off, but the pair's flows cross ct(: the run
			// did not measure the mode it records; dpctl says it and the
			// window fails, though every verdict reads offloaded.
			name: "no port security, yet ct( in the pair's flows",
			setup: func(wd *window) {
				wd.hardwarePath()
				for i := range hvNames {
					s1, s2 := win(wd.t, "dpctl-ct-sample1.txt"), win(wd.t, "dpctl-ct-sample2.txt")
					wd.dpctl(i, s1, s2, s1, s2)
				}
			},
			flows:   bothFlows,
			want:    all(results.VerdictOffloaded),
			reasons: map[string][]string{results.CheckDpctl: {"data_port.port_security is false but the pair's datapath flows go through conntrack"}},
			wantErr: "the run's mode did not take effect: tcp flow: data_port.port_security is false",
			asap2OK: true,
		},
		{
			// 3. One direction offloaded:yes dp:tc, the other a TC rule in
			// software (dp:tc without offloaded:yes).
			name: "mixed dpctl",
			setup: func(wd *window) {
				wd.hardwarePath()
				for i := range hvNames {
					wd.dpctl(i, win(wd.t, "dpctl-mixed-offloaded-sample1.txt"), win(wd.t, "dpctl-mixed-offloaded-sample2.txt"),
						win(wd.t, "dpctl-mixed-all-sample1.txt"), win(wd.t, "dpctl-mixed-all-sample2.txt"))
				}
			},
			flows:   bothFlows,
			want:    with(all(results.VerdictOffloaded), results.CheckDpctl, results.VerdictInconclusive),
			reasons: map[string][]string{results.CheckDpctl: {"mixed:", "dp:tc without offloaded:yes"}},
		},
		{
			// 4. Both samples identical: hardware counters that did not grow.
			name: "stale counters",
			setup: func(wd *window) {
				wd.hardwarePath()
				t := wd.t
				for i, hv := range hvNames {
					rep, vx := win(t, "tc-rep-"+hv+"-sample1.txt"), win(t, "tc-vxlan-"+hv+"-sample1.txt")
					wd.tcText(i, hwRep, rep, rep)
					wd.tcText(i, vxlanDev, vx, vx)
					off := win(t, "dpctl-offloaded-sample1.txt")
					wd.dpctl(i, off, off, off, off)
				}
			},
			flows: bothFlows,
			want:  with(all(results.VerdictOffloaded), results.CheckTC, results.VerdictInconclusive, results.CheckDpctl, results.VerdictInconclusive),
			reasons: map[string][]string{
				results.CheckTC:    {"hardware packet counters did not grow"},
				results.CheckDpctl: {"did not grow"},
			},
		},
		{
			// 5. The hardware rules are the local guest's with a third MAC.
			name: "wrong MAC",
			setup: func(wd *window) {
				wd.hardwarePath()
				t := wd.t
				for i, hv := range hvNames {
					wd.tcText(i, hwRep, win(t, "tc-rep-wrongmac-"+hv+"-sample1.txt"), win(t, "tc-rep-wrongmac-"+hv+"-sample2.txt"))
					wd.tcText(i, vxlanDev, win(t, "tc-vxlan-wrongmac-"+hv+"-sample1.txt"), win(t, "tc-vxlan-wrongmac-"+hv+"-sample2.txt"))
				}
			},
			flows:   bothFlows,
			want:    with(all(results.VerdictOffloaded), results.CheckTC, results.VerdictSoftware),
			reasons: map[string][]string{results.CheckTC: {"no rule of the guest pair"}},
		},
		{
			// 6. Hardware path plus a guest's mDNS traffic in software.
			name: "multicast exception",
			setup: func(wd *window) {
				wd.hardwarePath()
				t := wd.t
				for i, hv := range hvNames {
					wd.tcText(i, hwRep, win(t, "tc-rep-mdns-"+hv+"-sample1.txt"), win(t, "tc-rep-mdns-"+hv+"-sample2.txt"))
					wd.dpctl(i, win(t, "dpctl-offloaded-sample1.txt"), win(t, "dpctl-offloaded-sample2.txt"),
						win(t, "dpctl-mdns-all-sample1.txt"), win(t, "dpctl-mdns-all-sample2.txt"))
				}
			},
			flows: bothFlows,
			want:  all(results.VerdictOffloaded),
			reasons: map[string][]string{
				results.CheckTC:    {"exception traffic", "01:00:5e:00:00:fb"},
				results.CheckDpctl: {"exception traffic", "01:00:5e:00:00:fb"},
			},
			asap2OK: true,
		},
		{
			// 7. The servers take a second to listen; a representor capture
			// started within settle of the client's start catches the
			// miss-path burst. Settle counted from the clients' start keeps
			// every check out of it.
			name: "early capture settle from client start",
			setup: func(wd *window) {
				wd.cfg.Offload.Settle = 600 * time.Millisecond
				wd.hardwarePath()
				wd.guests[0].Play.ListenDelay = time.Second
				// The clients start once every server listens, no sooner
				// than ListenDelay after the fake got the last server's
				// start: the span is counted from there, not from when the
				// client's command reached the fake (seconds late on a
				// starved machine).
				missPath := wd.guests[0].Play.ListenDelay + wd.cfg.Offload.Settle - settleSlack
				for i := range hvNames {
					pick := func(quiet, burst reply) reply {
						return reply{Choose: func(at time.Time) reply {
							var start time.Time
							ok := false
							for _, e := range wd.w.Log() {
								if strings.HasPrefix(e.Cmd, "start: iperf3 -s") && !e.At.After(at) {
									start, ok = e.At, true
								}
							}
							if !ok || at.Before(start.Add(missPath)) {
								wd.missPath.Add(1)
								return burst
							}
							return quiet
						}}
					}
					wd.repCapture(i, pick(wd.quietRep("tcp"), wd.fullCapture("tcp")), pick(wd.quietRep("udp"), wd.fullCapture("udp")))
				}
			},
			flows:   bothFlows,
			want:    all(results.VerdictOffloaded),
			asap2OK: true,
			extra: func(t *testing.T, wd *window, s *run, fcs []FlowCheck) {
				if n := wd.missPath.Load(); n != 0 {
					t.Errorf("%d representor captures started inside the miss-path span after a client start", n)
				}
				// The window began (version queries, server start) well
				// before the clients: settle counted from there would have
				// started the checks before the servers even listened.
				var firstServer, firstClient time.Time
				for _, e := range wd.w.Log() {
					if firstServer.IsZero() && strings.HasPrefix(e.Cmd, "start: iperf3 -s") {
						firstServer = e.At
					}
					if firstClient.IsZero() && strings.HasPrefix(e.Cmd, "iperf3 -c") {
						firstClient = e.At
					}
				}
				if gap := firstClient.Sub(firstServer); gap < time.Second-settleSlack {
					t.Errorf("the first client came %s after its server started, want about the 1s listen delay", gap)
				}
			},
		},
		{
			// 8a. The flow's traffic ran but iperf3 failed (interrupted):
			// the empty representor capture proves nothing, the checks
			// that counted packets stand.
			name: "flow did not run iperf3 interrupted",
			setup: func(wd *window) {
				wd.hardwarePath()
				out := readFile(wd.t, filepath.Join("..", "iperf3", "testdata", "v3.12-interrupted.json"))
				wd.guests[1].Play.Client = wd.ends.client(func(bool) remote.Result {
					return remote.Result{Stdout: out, ExitCode: 1}
				})
				wd.clientOut = string(out)
				wd.after = "servers ACTIVE on their hosts, ports ACTIVE and bound, guests' management path not tried (no address); " +
					"iperf3 client on asap2e2e-client stopped receiving at 09:17:09"
			},
			flows:   []string{"tcp"},
			want:    with(all(results.VerdictOffloaded), results.CheckRepresentor, results.VerdictInconclusive),
			reasons: map[string][]string{results.CheckRepresentor: {"the sustained flow did not run", "an empty capture proves nothing"}},
			// The look after the flow (the harness's stall.go, here
			// wd.after) finds the topology as built and reads from the
			// client's JSON when its data stopped: given that JSON, once.
			wantErr: "the sustained tcp flow of the offload checks: iperf3 run tcp-p1: guest asap2e2e-client: port 5201: iperf3 reported: interrupt - the client has terminated (exit 1); " +
				"after the window: servers ACTIVE on their hosts, ports ACTIVE and bound, guests' management path not tried (no address); " +
				"iperf3 client on asap2e2e-client stopped receiving at 09:17:09",
		},
		{
			// 8c. The server guest's data port is deleted while the flow runs
			// (the lab scenario): the failure says so, and when the
			// client's data stopped.
			name: "data port deleted during the flow",
			setup: func(wd *window) {
				wd.hardwarePath()
				out := readFile(wd.t, filepath.Join("..", "iperf3", "testdata", "stall", "v3.12-tcp-p1-path-cut.json"))
				wd.guests[1].Play.Client = wd.ends.client(func(bool) remote.Result { return remote.Result{Stdout: out} })
				wd.clientOut = string(out)
				wd.after = "data port asap2e2e-20261202t091530-3fa2-vm0-data (6c1f2f9e-8a4b-4c1d-9f3e-2b7a5d0e1a01) no longer exists; " +
					"iperf3 client on asap2e2e-client stopped receiving at 15:57:11"
			},
			flows:   []string{"tcp"},
			want:    with(all(results.VerdictOffloaded), results.CheckRepresentor, results.VerdictInconclusive),
			reasons: map[string][]string{results.CheckRepresentor: {"the sustained flow did not run"}},
			wantErr: "iperf3 reported: control socket has closed unexpectedly; after the window: data port asap2e2e-20261202t091530-3fa2-vm0-data (6c1f2f9e-8a4b-4c1d-9f3e-2b7a5d0e1a01) no longer exists; " +
				"iperf3 client on asap2e2e-client stopped receiving at 15:57:11",
		},
		{
			// 8d. The UDP flow is lost at stream setup (esnet/iperf#862: one
			// datagram each way, no retransmission) while the checks sample
			// its empty window: those samples are dropped, the window runs
			// again, and the verdicts of the second window say so.
			name: "udp flow lost at stream setup, window run again",
			setup: func(wd *window) {
				wd.hardwarePath()
				wd.loseUDPSetup(1)
			},
			flows:   bothFlows,
			want:    all(results.VerdictOffloaded),
			asap2OK: true,
			extra: func(t *testing.T, wd *window, s *run, fcs []FlowCheck) {
				for _, fc := range fcs {
					retried := strings.Contains(fc.Check.Reason, "window 1 of the udp flow given up at ") &&
						strings.Contains(fc.Check.Reason, "UDP stream setup failed (unable to read from stream socket")
					if retried != (fc.Flow == "udp") {
						t.Errorf("%s/%s/%s: reason %q: want the given-up window named exactly on the udp flow's checks", fc.Flow, fc.Hypervisor, fc.Check.Name, fc.Check.Reason)
					}
				}
				if !strings.Contains(wd.console.String(), "the evidence window runs again in 10ms (1 of 1, traffic.udp_setup_retries)") {
					t.Errorf("the log does not announce the second window:\n%s", wd.console.String())
				}
			},
		},
		{
			// 8e. Lost at setup every time: the retries end, with the reason.
			name: "udp flow lost at stream setup, retries exhausted",
			setup: func(wd *window) {
				wd.hardwarePath()
				wd.loseUDPSetup(-1)
			},
			flows:   []string{"tcp"},
			want:    all(results.VerdictOffloaded),
			wantErr: "the sustained udp flow failed at UDP stream setup: ",
			asap2OK: true,
		},
		{
			// 8b. No traffic and no iperf3 output: tc and dpctl found no
			// hardware rule or flow, which proves nothing without traffic.
			name: "flow did not run empty result",
			setup: func(wd *window) {
				t := wd.t
				for i := range hvNames {
					wd.lookup(i, swReps[i])
					wd.tcNone(i, swReps[i])
					wd.tcNone(i, vxlanDev)
					after := sw(t, "dpctl-after-ping-m.txt")
					wd.dpctl(i, sw(t, "dpctl-tcp-offloaded-1.txt"), sw(t, "dpctl-tcp-offloaded-2.txt"), after, after)
					idle := wd.capture(sw(t, "tcpdump-rep-idle.txt"), sw(t, "tcpdump-rep-idle.txt.stderr"), 124)
					wd.repCapture(i, idle, idle)
					noflow := wd.capture(sw(t, "tcpdump-pair-guest-noflow.txt"), sw(t, "tcpdump-pair-guest-noflow.txt.stderr"), 124)
					wd.control(i, noflow, noflow)
					wd.repCounters(i, sw(t, "ip-link-rep-idle-before.json"), sw(t, "ip-link-rep-idle-after.json"), sw(t, "ip-stats-cpuhit-rep-before.json"), sw(t, "ip-stats-cpuhit-rep-after.json"))
					wd.guestCounters(i, sw(t, "ip-link-guest-idle-before.json"), sw(t, "ip-link-guest-idle-after.json"))
				}
				wd.guests[1].Play.Client = wd.ends.client(func(bool) remote.Result { return remote.Result{} })
			},
			flows: []string{"tcp"},
			want:  all(results.VerdictInconclusive),
			reasons: map[string][]string{
				results.CheckTC:          {"the sustained flow did not run", "missing hardware rules prove nothing", "no ingress qdisc"},
				results.CheckDpctl:       {"the sustained flow did not run", "missing hardware rules prove nothing", "dp:ovs"},
				results.CheckRepresentor: {"the control capture on eth1", "saw only 0 packets"},
				results.CheckCounters:    {"moved only 0 packets"},
			},
			wantErr:     "the sustained tcp flow of the offload checks",
			noIperfJSON: true,
		},
		{
			// 9. The checks return after the flow ended: every verdict of
			// the window is inconclusive.
			name: "checks outlast the flow",
			setup: func(wd *window) {
				wd.hardwarePath()
				wd.endsAlone()
				t := wd.t
				// compute2's second full dpctl dump answers only once the
				// client has returned (and the runner has reported it).
				late := reply{Stdout: win(t, "dpctl-offloaded-sample2.txt"), Before: func(ctx context.Context) {
					wd.w.WaitClientReturn(ctx)
					select {
					case <-ctx.Done():
					case <-time.After(300 * time.Millisecond):
					}
				}}
				wd.hvs[1].On(dpctlAll, reply{Stdout: win(t, "dpctl-offloaded-sample1.txt")}, late)
			},
			flows:   bothFlows,
			want:    all(results.VerdictInconclusive),
			reasons: map[string][]string{"*": {"outlasted the", "raise offload.flow_duration"}},
		},
		{
			// 10. The SSH connection to compute2 fails in the middle of its
			// dpctl check: that check is inconclusive (with the transport
			// error as its reason), the window reports the error, and the
			// results file stays valid.
			name: "hypervisor connection lost",
			setup: func(wd *window) {
				wd.hardwarePath()
				wd.hvs[1].On(dpctlAll, reply{Stdout: win(wd.t, "dpctl-offloaded-sample1.txt")}, reply{Err: errors.New("ssh: connection lost")})
			},
			flows:     []string{"tcp"},
			want:      all(results.VerdictOffloaded),
			wantAt:    map[string]results.Verdict{"tcp/compute2/dpctl": results.VerdictInconclusive},
			reasonsAt: map[string][]string{"tcp/compute2/dpctl": {"connection lost"}},
			wantErr:   "connection lost",
		},
		{
			// 10b. A hypervisor stops answering: its command runs to its
			// bound, past the flow (it answers only once the client has
			// returned). Its own reason (the bound) stands; the other
			// checks, outlasted, become inconclusive with the advice.
			name: "hypervisor stops answering past the flow",
			setup: func(wd *window) {
				wd.hardwarePath()
				wd.endsAlone()
				wd.hvs[1].On(dpctlAll, reply{Stdout: win(wd.t, "dpctl-offloaded-sample1.txt")},
					reply{Before: wd.w.WaitClientReturn, Err: errors.New(`"ovs-appctl dpctl/dump-flows -m" did not finish within 15s (intervals.command)`)})
			},
			flows:     []string{"tcp"},
			want:      all(results.VerdictInconclusive),
			wantAt:    map[string]results.Verdict{"tcp/compute2/dpctl": results.VerdictInconclusive}, // stopped early: part of its files
			reasonsAt: map[string][]string{"tcp/compute2/dpctl": {"the check did not finish: ", "did not finish within 15s (intervals.command)"}},
			wantErr:   "did not finish within 15s",
			extra: func(t *testing.T, wd *window, s *run, fcs []FlowCheck) {
				for _, fc := range fcs {
					advice := strings.Contains(fc.Check.Reason, "raise offload.flow_duration")
					if unfinished := fc.Hypervisor == "compute2" && fc.Check.Name == results.CheckDpctl; advice == unfinished {
						t.Errorf("%s/%s: reason %q: the unfinished check keeps its cause, the outlasted ones get the advice", fc.Hypervisor, fc.Check.Name, fc.Check.Reason)
					}
				}
			},
		},
		{
			// 11. The iperf3 server takes 2 s to exit after its client: the
			// traffic has ended while iperf3.Run still waits, and a check
			// that returns 300 ms after the client did outlasted the flow.
			name: "checks outlast the traffic while the server exits",
			setup: func(wd *window) {
				wd.hardwarePath()
				wd.endsAlone()
				wd.guests[0].Play.ExitDelay = 2 * time.Second
				late := reply{Stdout: win(wd.t, "dpctl-offloaded-sample2.txt"), Before: func(ctx context.Context) {
					wd.w.WaitClientReturn(ctx)
					select {
					case <-ctx.Done():
					case <-time.After(300 * time.Millisecond):
					}
				}}
				wd.hvs[1].On(dpctlAll, reply{Stdout: win(wd.t, "dpctl-offloaded-sample1.txt")}, late)
			},
			flows:   bothFlows,
			want:    all(results.VerdictInconclusive),
			reasons: map[string][]string{"*": {"outlasted the"}},
		},
	}
	// The scenarios mostly wait (flows, captures, settle), so they run all
	// at once, whatever -parallel says; the subtests then judge each one.
	// Everything that can fail the test (reading test data) happens here,
	// before the goroutines.
	type outcome struct {
		wd  *window
		s   *run
		fcs []FlowCheck
		err error
	}
	outs := make([]*outcome, len(cases))
	for i, tc := range cases {
		wd := newWindow(t)
		tc.setup(wd)
		outs[i] = &outcome{wd: wd, s: wd.session()}
	}
	// No deadline of its own: under go test -race on a starved machine the
	// cases together took over 2 minutes, and a deadline then ended healthy
	// flows mid-window. A hang is go test's -timeout's, with every
	// goroutine's stack.
	ctx := t.Context()
	var wg sync.WaitGroup
	for _, o := range outs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			o.fcs, o.err = Run(ctx, o.s.w)
		}()
	}
	wg.Wait()
	for i, tc := range cases {
		o := outs[i]
		t.Run(tc.name, func(t *testing.T) {
			judgeWindowCase(t, tc, o.wd, o.s, o.fcs, o.err)
		})
	}
}

func judgeWindowCase(t *testing.T, tc windowCase, wd *window, s *run, fcs []FlowCheck, err error) {
	defer func() {
		if t.Failed() {
			wd.w.Dump(t)
			t.Logf("session log:\n%s", wd.console.String())
		}
	}()
	switch {
	case tc.wantErr == "" && err != nil:
		t.Errorf("Run: %v", err)
	case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
		t.Errorf("Run error = %v, want one containing %q", err, tc.wantErr)
	}

	assertVerdicts(t, tc, fcs)
	assertExpectPath(t, tc, fcs)
	assertEvidence(t, tc, wd, s, fcs)
	assertTiming(t, wd)
	if u := wd.w.Unexpected(); len(u) > 0 {
		t.Errorf("the fakes received unscripted commands:\n  %s", strings.Join(u, "\n  "))
	}
	if wd.after != "" && !slices.Equal(wd.explained, []string{"the sustained tcp flow"}) {
		t.Errorf("the look after a failed flow was asked about %q, want once about the sustained tcp flow", wd.explained)
	}
	if tc.extra != nil {
		tc.extra(t, wd, s, fcs)
	}
}

// assertVerdicts: every check ran once per flow and hypervisor, with the
// wanted verdict and reason.
func assertVerdicts(t *testing.T, tc windowCase, fcs []FlowCheck) {
	t.Helper()
	seen := map[string]int{}
	for _, fc := range fcs {
		c := fc.Check
		key := fc.Flow + "/" + fc.Hypervisor + "/" + c.Name
		seen[key]++
		if c.Flow != fc.Flow || c.Host != fc.Hypervisor {
			t.Errorf("%s: Check.Flow/Host = %q/%q", key, c.Flow, c.Host)
		}
		want, ok := tc.want[c.Name]
		if !ok {
			t.Errorf("%s: unexpected check", key)
			continue
		}
		if v, ok := tc.wantAt[key]; ok {
			want = v
		}
		if c.Verdict != want {
			t.Errorf("%s: verdict %s, want %s: %s", key, c.Verdict, want, c.Reason)
		}
		for _, sub := range slices.Concat(tc.reasons[c.Name], tc.reasons["*"], tc.reasonsAt[key]) {
			if !strings.Contains(c.Reason, sub) {
				t.Errorf("%s: reason %q does not contain %q", key, c.Reason, sub)
			}
		}
	}
	names := results.AllChecks
	if _, ok := tc.want[results.CheckConntrack]; ok {
		// port security: the conntrack check besides the four
		names = append(slices.Clone(names), results.CheckConntrack)
	}
	for _, flow := range tc.flows {
		for _, hv := range hvNames {
			for _, name := range names {
				if key := flow + "/" + hv + "/" + name; seen[key] != 1 {
					t.Errorf("%s: ran %d times, want once", key, seen[key])
				}
			}
		}
	}
	if want := len(tc.flows) * len(hvNames) * len(names); len(fcs) != want {
		t.Errorf("%d checks, want %d", len(fcs), want)
	}
}

// assertExpectPath: the asap2 and baseline judgements, and that a failing
// one names every offending check with its flow and hypervisor.
func assertExpectPath(t *testing.T, tc windowCase, fcs []FlowCheck) {
	t.Helper()
	checks := Checks(fcs)
	for _, p := range []struct {
		path results.Path
		ok   bool
		bad  func(results.Verdict) bool
	}{
		{results.PathASAP2, tc.asap2OK, func(v results.Verdict) bool { return v != results.VerdictOffloaded }},
		{results.PathBaseline, tc.baselineOK, func(v results.Verdict) bool { return v == results.VerdictOffloaded }},
	} {
		err := offload.ExpectPath(p.path, checks)
		if p.ok {
			if err != nil {
				t.Errorf("ExpectPath(%s): %v", p.path, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("ExpectPath(%s) = nil, want an error", p.path)
			continue
		}
		named := 0
		for _, fc := range fcs {
			if !p.bad(fc.Check.Verdict) {
				continue
			}
			named++
			if line := fmt.Sprintf("%s: %s: %s flow, %s: ", fc.Check.Name, fc.Check.Verdict, fc.Flow, fc.Hypervisor); !strings.Contains(err.Error(), line) {
				t.Errorf("ExpectPath(%s) error does not name %q:\n%v", p.path, line, err)
			}
		}
		if named == 0 && !strings.Contains(err.Error(), "no check shows the software path") {
			t.Errorf("ExpectPath(%s): %v", p.path, err)
		}
	}
}

// wantFiles are evidence files (under offload/<flow>/<hypervisor>/) each
// check must have written.
func wantFiles(name, rep string) []string {
	if rep == "" {
		return nil
	}
	switch name {
	case results.CheckTC:
		return []string{"tc-qdisc-" + rep + ".txt", "tc-" + rep + "-sample2.json", "tc-qdisc-" + vxlanDev + ".txt", "tc-" + vxlanDev + "-sample2.json"}
	case results.CheckRepresentor:
		return []string{"tcpdump-" + rep + ".txt", "tcpdump-control-" + guestIface + ".txt"}
	case results.CheckConntrack:
		return []string{offload.ConntrackTableFile, offload.ConntrackOVSFile, offload.ConntrackFlowsFile}
	case results.CheckDpctl:
		return []string{"dpctl-offloaded-sample1.txt", "dpctl-all-sample2.txt"}
	case results.CheckCounters:
		return []string{"counters-rep-" + rep + "-after.json", "counters-rep-" + rep + "-cpuhit-after.json", "counters-guest-" + guestIface + "-after.json"}
	}
	return nil
}

// assertEvidence: every check's raw outputs are saved byte for byte under
// the run directory, with the flood ping, iperf3 and representor-lookup
// evidence, and the results file holds every verdict.
func assertEvidence(t *testing.T, tc windowCase, wd *window, s *run, fcs []FlowCheck) {
	t.Helper()
	exists := func(rel string) []byte {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(s.Dir, rel))
		if err != nil {
			t.Errorf("evidence: %v", err)
		}
		return b
	}
	if got := exists("offload/flood_ping.txt"); !bytes.Contains(got, []byte("1000 packets transmitted, 1000 received")) {
		t.Errorf("offload/flood_ping.txt = %q", got)
	}
	for i, hv := range hvNames {
		exists(path.Join("offload", "representor-lookup", hv+"-ovs-vsctl-find-iface-"+wd.topo.Servers[i].DataPortID+".txt"))
	}
	if !tc.noIperfJSON {
		for _, flow := range tc.flows {
			exists(path.Join("offload", flow, "iperf3-p1-client.json"))
		}
	}
	received := map[string]bool{}
	for _, e := range wd.w.Log() {
		received[e.Runner+"\x00"+e.Cmd] = true
	}
	for _, fc := range fcs {
		key := fc.Flow + "/" + fc.Hypervisor + "/" + fc.Check.Name
		if len(fc.Files) == 0 {
			t.Errorf("%s: no evidence file", key)
		}
		for _, f := range fc.Files {
			exists(f)
		}
		rep := wd.reps[slices.Index(hvNames[:], fc.Hypervisor)]
		if _, special := tc.wantAt[key]; special {
			rep = "" // a check that stopped early has only part of its files
		}
		for _, name := range wantFiles(fc.Check.Name, rep) {
			if rel := path.Join("offload", fc.Flow, fc.Hypervisor, name); !slices.Contains(fc.Files, rel) {
				t.Errorf("%s: evidence %s missing from %q", key, rel, fc.Files)
			}
		}
		for _, ev := range fc.Check.Evidence {
			rel := path.Join("offload", fc.Flow, fc.Hypervisor, ev.Name)
			if got := exists(rel); !bytes.Equal(got, ev.Output) {
				t.Errorf("%s: %s differs from the command's output", key, rel)
			}
			if len(ev.Stderr) > 0 {
				if got := exists(rel + ".stderr"); !bytes.Equal(got, ev.Stderr) {
					t.Errorf("%s: %s.stderr differs from the command's stderr", key, rel)
				}
			}
			if !received[ev.Target+"\x00"+ev.Cmd] {
				t.Errorf("%s: evidence %s names a command %q on %q the fakes never received", key, ev.Name, ev.Cmd, ev.Target)
			}
		}
	}
	res, err := results.Load(filepath.Join(s.Dir, resultsFile))
	if err != nil {
		t.Fatalf("results file: %v", err)
	}
	if len(res.Offload) != len(fcs) {
		t.Fatalf("results file has %d offload checks, want %d", len(res.Offload), len(fcs))
	}
	for i, fc := range fcs {
		r := res.Offload[i]
		if r.Name != fc.Check.Name || r.Flow != fc.Flow || r.Verdict != fc.Check.Verdict ||
			!strings.HasPrefix(r.Reason, fc.Hypervisor+": ") || !slices.Equal(r.EvidenceFiles, fc.Files) {
			t.Errorf("results file entry %d = %+v, want %s %s %s on %s", i, r, fc.Check.Name, fc.Flow, fc.Check.Verdict, fc.Hypervisor)
		}
	}
}

// isCheckCommand: a command of the checks (not the representor lookup,
// the interface lookup or the flows).
func isCheckCommand(e event) bool {
	if strings.HasPrefix(e.Runner, "hypervisor ") {
		return !strings.HasPrefix(e.Cmd, "ovs-vsctl ")
	}
	return strings.Contains(e.Cmd, " tcpdump ") || strings.HasPrefix(e.Cmd, "ip -s -j link show")
}

// assertTiming: the flood ping came before the flows; each window of a
// flow started its checks at least offload.settle after its clients (the
// window's own timing, Window.ChecksDone), and every check command reached
// the fakes between the start and the end of one window's checks. When the
// fake received the client's command is not compared with the checks: the
// window counts the settle from launching the clients, and under go test
// -race on a starved machine the command reached the fake seconds later.
func assertTiming(t *testing.T, wd *window) {
	t.Helper()
	settle := wd.cfg.Offload.Settle
	starts, _ := wd.w.Clients()
	if len(starts) == 0 {
		t.Error("no iperf3 client ran")
		return
	}
	windows := wd.ends.windows()
	for _, ft := range windows {
		if after := ft.ChecksStart.Sub(ft.ClientsAt); after < settle {
			t.Errorf("%s flow: checks started %s after its clients, want >= settle %s", ft.Flow, after, settle)
		}
	}
	pinged := false
	for _, e := range wd.w.Log() {
		if strings.Contains(e.Cmd, "ping -f") {
			pinged = true
			if !e.At.Before(starts[0]) {
				t.Errorf("the flood ping came %s after the first client", e.At.Sub(starts[0]))
			}
		}
		if !isCheckCommand(e) {
			continue
		}
		in := false
		for _, ft := range windows {
			in = in || !e.At.Before(ft.ChecksStart) && !e.At.After(ft.ChecksDone)
		}
		if !in {
			t.Errorf("check command outside every window's checks: %s: %.80s", e.Runner, e.Cmd)
		}
	}
	if !pinged {
		t.Error("no flood ping")
	}
}

// What a tc or dpctl verdict looked at reaches the results file, each line
// named by its hypervisor like the reason.
func TestCheckResultsKeepTheBasis(t *testing.T) {
	fcs := []FlowCheck{
		{Flow: "tcp", Hypervisor: "hv-1", Files: []string{"f"}, Check: offload.Check{Name: results.CheckTC, Verdict: results.VerdictOffloaded, Reason: "r",
			Basis: []string{"enp8s0f0_1: direction a -> b: offloaded, over 2 samples: chain 0 pref 2 handle 0x1 -> chain 1 pref 3 handle 0x1"}}},
		{Flow: "tcp", Hypervisor: "hv-1", Check: offload.Check{Name: results.CheckRepresentor, Verdict: results.VerdictOffloaded, Reason: "r"}},
	}
	got := CheckResults(fcs)
	if len(got) != 2 || len(got[0].Basis) != 1 || got[0].Basis[0] != "hv-1: "+fcs[0].Check.Basis[0] || got[0].Reason != "hv-1: r" || got[1].Basis != nil {
		t.Errorf("check results: %+v", got)
	}
}
