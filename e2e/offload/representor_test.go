package offload

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/remote"
	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// The representor capture with its positive control. Recorded outputs
// (testdata/README.md): tcpdump-rep-* by record-software-path.sh (guests
// recMAC1/recMAC2), tcpdump-pair-* and tcpdump-guest-missing by
// record-counters.sh (pairMAC1/pairMAC2: both captures of a pair ran at the
// same time, one on each end of a veth).

const (
	pairMAC1 = "02:00:c6:12:d3:01"
	pairMAC2 = "02:00:c6:12:d3:02"
)

// guestRunner is a fakeRunner that answers under the guest's name.
type guestRunner struct {
	*fakeRunner
	name string
}

func (g guestRunner) Name() string { return g.name }

func (g guestRunner) Run(ctx context.Context, cmd string) (remote.Result, error) {
	r, err := g.fakeRunner.Run(ctx, cmd)
	r.Target = g.name
	return r, err
}

// recordedResult replays a recorded tcpdump run: stdout, stderr, and the
// exit status from its .cmd file.
func recordedResult(t *testing.T, name string) remote.Result {
	t.Helper()
	r := remote.Result{Stdout: readTestdata(t, "sw/"+name), Stderr: readTestdata(t, "sw/"+name+".stderr")}
	cmd := string(readTestdata(t, "sw/"+name+".cmd"))
	switch {
	case strings.Contains(cmd, "\nexit 0\n"):
	case strings.Contains(cmd, "\nexit 124\n"):
		r.ExitCode = 124
	case strings.Contains(cmd, "\nexit 127\n"):
		r.ExitCode = 127
	case strings.Contains(cmd, "\nexit 1\n"):
		r.ExitCode = 1
	default:
		t.Fatalf("%s.cmd: no known exit status in %q", name, cmd)
	}
	return r
}

// repSetup is a representor check whose two captures answer with rep and ctl.
func repSetup(t *testing.T, macA, macB, proto string, rep, ctl remote.Result) (*fakeRunner, guestRunner, RepresentorInput) {
	t.Helper()
	in := RepresentorInput{Representor: "offrec-rep1", LocalMAC: macA, PeerMAC: macB, Protocol: proto,
		Window: 2 * time.Second, FirstPackets: 10, MaxPackets: 300, ControlIface: "eth1"}
	filter, err := CaptureFilter(macA, macB, proto)
	if err != nil {
		t.Fatal(err)
	}
	hv := &fakeRunner{results: map[string][]remote.Result{CaptureCommand("offrec-rep1", filter, in.Window, in.MaxPackets): {rep}}}
	guest := guestRunner{&fakeRunner{results: map[string][]remote.Result{CaptureCommand("eth1", filter, in.Window, in.MaxPackets): {ctl}}}, "guest-a"}
	in.Control = guest
	return hv, guest, in
}

// Issue point 6: an empty representor capture next to an empty control is
// no evidence of offload. The old check said "offloaded" here (its own test
// asserted it for tcpdump-rep-idle.txt).
func TestCheckRepresentorEmptyCaptureAndEmptyControlIsInconclusive(t *testing.T) {
	for _, tc := range []struct {
		name       string
		macA, macB string
		proto      string
		rep, ctl   string
	}{
		// The idle capture of the first recording with the idle control of the second.
		{"idle representor, idle control", recMAC1, recMAC2, "udp", "tcpdump-rep-idle.txt", "tcpdump-pair-guest-noflow.txt"},
		// A real pair taken after the flow had ended: both ends quiet.
		{"recorded pair without flow", pairMAC1, pairMAC2, "icmp", "tcpdump-pair-rep-noflow.txt", "tcpdump-pair-guest-noflow.txt"},
	} {
		hv, _, in := repSetup(t, tc.macA, tc.macB, tc.proto, recordedResult(t, tc.rep), recordedResult(t, tc.ctl))
		c, err := CheckRepresentor(context.Background(), hv, in)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if c.Verdict != results.VerdictInconclusive || !strings.Contains(c.Reason, "the control capture on eth1 of guest-a saw only 0 packets") ||
			!strings.Contains(c.Reason, "an empty representor capture proves nothing") {
			t.Errorf("%s: %s %q", tc.name, c.Verdict, c.Reason)
		}
	}
}

func TestCheckRepresentorQuietWithBusyControlIsOffloaded(t *testing.T) {
	// The recorded TCP capture (300 packets of the flow printed, 553
	// received by its filter) stands for the
	// guest's interface; the representor saw nothing of it.
	hv, guest, in := repSetup(t, recMAC1, recMAC2, "tcp", recordedResult(t, "tcpdump-rep-idle.txt"), recordedResult(t, "tcpdump-rep-tcp.txt"))
	c, err := CheckRepresentor(context.Background(), hv, in)
	if err != nil {
		t.Fatal(err)
	}
	if c.Verdict != results.VerdictOffloaded || !strings.Contains(c.Reason, "representor offrec-rep1: 0 packets") || !strings.Contains(c.Reason, "the control capture on eth1 of guest-a saw 553") {
		t.Errorf("got %s %q", c.Verdict, c.Reason)
	}
	if len(c.Evidence) != 2 || c.Evidence[0].Name != "tcpdump-offrec-rep1.txt" || c.Evidence[1].Name != "tcpdump-control-eth1.txt" {
		t.Fatalf("evidence: %+v", c.Evidence)
	}
	ctl := c.Evidence[1]
	if ctl.Target != "guest-a" || ctl.ExitCode != 0 || len(ctl.Output) == 0 || !strings.Contains(string(ctl.Stderr), "300 packets captured") || !strings.HasPrefix(ctl.Cmd, "timeout -s INT 2s tcpdump") {
		t.Errorf("control evidence: %+v", ctl)
	}
	if len(hv.calls) != 1 || len(guest.calls) != 1 {
		t.Errorf("calls: hypervisor %v, guest %v", hv.calls, guest.calls)
	}
	// The same verdict stands once ConfirmFlow hears the flow ran, and falls
	// when it did not.
	if got := ConfirmFlow(c, true, "iperf3 delivered 1.2 Gbit/s"); got.Verdict != results.VerdictOffloaded {
		t.Errorf("confirmed flow: %s", got.Verdict)
	}
	if got := ConfirmFlow(c, false, "iperf3 delivered 0 bytes"); got.Verdict != results.VerdictInconclusive || !strings.Contains(got.Reason, "iperf3 delivered 0 bytes") {
		t.Errorf("flow did not run: %s %q", got.Verdict, got.Reason)
	}
}

func TestCheckRepresentorFullCaptureIsSoftwareWhateverTheControl(t *testing.T) {
	for name, ctl := range map[string]remote.Result{
		"busy control (recorded pair)": recordedResult(t, "tcpdump-pair-guest-icmp.txt"),
		"empty control":                recordedResult(t, "tcpdump-pair-guest-noflow.txt"),
		"tcpdump missing in the guest": recordedResult(t, "tcpdump-guest-missing.txt"),
	} {
		hv, _, in := repSetup(t, pairMAC1, pairMAC2, "icmp", recordedResult(t, "tcpdump-pair-rep-icmp.txt"), ctl)
		c, err := CheckRepresentor(context.Background(), hv, in)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if c.Verdict != results.VerdictSoftware || !strings.Contains(c.Reason, "representor offrec-rep1: 1672 packets of the guests' flow (02:00:c6:12:d3:01, 02:00:c6:12:d3:02) reached the representor (300 printed") {
			t.Errorf("%s: %s %q", name, c.Verdict, c.Reason)
		}
	}
}

func TestCheckRepresentorControlToolMissing(t *testing.T) {
	// Recorded: timeout exits 127 when tcpdump is not on the PATH.
	hv, _, in := repSetup(t, recMAC1, recMAC2, "udp", recordedResult(t, "tcpdump-rep-idle.txt"), recordedResult(t, "tcpdump-guest-missing.txt"))
	c, err := CheckRepresentor(context.Background(), hv, in)
	if err != nil {
		t.Fatal(err)
	}
	if c.Verdict != results.VerdictInconclusive || !strings.Contains(c.Reason, "tcpdump is not installed in the guest guest-a") ||
		!strings.Contains(c.Reason, "failed to run command 'tcpdump'") || !strings.Contains(c.Reason, "proves nothing") {
		t.Errorf("got %s %q", c.Verdict, c.Reason)
	}

	// Under sudo: the command is prefixed, and a sudo that wants a password
	// is named as such.
	filter, _ := CaptureFilter(recMAC1, recMAC2, "udp")
	sudoCmd := ControlCaptureCommand("eth1", filter, in.Window, in.MaxPackets, true)
	if sudoCmd != "sudo -n "+CaptureCommand("eth1", filter, in.Window, in.MaxPackets) {
		t.Errorf("sudo command: %s", sudoCmd)
	}
	hv, _, in = repSetup(t, recMAC1, recMAC2, "udp", recordedResult(t, "tcpdump-rep-idle.txt"), remote.Result{})
	in.ControlSudo = true
	in.Control = guestRunner{&fakeRunner{results: map[string][]remote.Result{
		sudoCmd: {{ExitCode: 1, Stderr: []byte("sudo: a password is required\n")}},
	}}, "guest-a"}
	c, err = CheckRepresentor(context.Background(), hv, in)
	if err != nil || c.Verdict != results.VerdictInconclusive || !strings.Contains(c.Reason, "`sudo -n` in the guest guest-a refused (exit 1: sudo: a password is required)") {
		t.Errorf("sudo refused: %s %q %v", c.Verdict, c.Reason, err)
	}
}

// syncRunner answers only once the other capture has started too, so a
// check that ran them one after the other fails instead of hanging.
type syncRunner struct {
	name         string
	self, other  chan struct{}
	res          remote.Result
	ranCommand   string
	otherStarted bool
}

func (s *syncRunner) Name() string { return s.name }

func (s *syncRunner) Run(ctx context.Context, cmd string) (remote.Result, error) {
	s.ranCommand = cmd
	close(s.self)
	select {
	case <-s.other:
		s.otherStarted = true
	case <-time.After(5 * time.Second):
	}
	r := s.res
	r.Cmd, r.Target = cmd, s.name
	return r, nil
}

func (s *syncRunner) Start(ctx context.Context, cmd string) (remote.Process, error) {
	return nil, errors.New("syncRunner: Start not supported")
}

func TestCheckRepresentorCapturesRunConcurrently(t *testing.T) {
	a, b := make(chan struct{}), make(chan struct{})
	hv := &syncRunner{name: "hv", self: a, other: b, res: recordedResult(t, "tcpdump-pair-rep-icmp.txt")}
	guest := &syncRunner{name: "guest-a", self: b, other: a, res: recordedResult(t, "tcpdump-pair-guest-icmp.txt")}
	in := RepresentorInput{Representor: "offrec2-rep", LocalMAC: pairMAC2, PeerMAC: pairMAC1, Protocol: "icmp",
		Window: 2 * time.Second, FirstPackets: 10, MaxPackets: 300, Control: guest, ControlIface: "eth1"}
	c, err := CheckRepresentor(context.Background(), hv, in)
	if err != nil {
		t.Fatal(err)
	}
	if !hv.otherStarted || !guest.otherStarted {
		t.Errorf("the captures did not overlap: hypervisor saw the guest start %v, guest saw the hypervisor start %v", hv.otherStarted, guest.otherStarted)
	}
	// Same window and bound on both sides; only the interface differs.
	if strings.Replace(hv.ranCommand, "-i offrec2-rep", "-i eth1", 1) != guest.ranCommand {
		t.Errorf("captures differ:\n%s\n%s", hv.ranCommand, guest.ranCommand)
	}
	if c.Verdict != results.VerdictSoftware {
		t.Errorf("recorded pair: %s %q", c.Verdict, c.Reason)
	}
}

func TestCheckRepresentorInputAndTransport(t *testing.T) {
	hv, _, good := repSetup(t, recMAC1, recMAC2, "tcp", recordedResult(t, "tcpdump-rep-idle.txt"), recordedResult(t, "tcpdump-rep-tcp.txt"))
	bad := func(f func(*RepresentorInput)) RepresentorInput { in := good; f(&in); return in }
	for name, in := range map[string]RepresentorInput{
		"no window":          bad(func(in *RepresentorInput) { in.Window = 0 }),
		"max <= first":       bad(func(in *RepresentorInput) { in.MaxPackets = in.FirstPackets }),
		"no port, no rep":    bad(func(in *RepresentorInput) { in.Representor = "" }),
		"bad MAC":            bad(func(in *RepresentorInput) { in.LocalMAC = "x" }),
		"negative first pkt": bad(func(in *RepresentorInput) { in.FirstPackets = -1 }),
		"no control runner":  bad(func(in *RepresentorInput) { in.Control = nil }),
		"no control iface":   bad(func(in *RepresentorInput) { in.ControlIface = " " }),
	} {
		if _, err := CheckRepresentor(context.Background(), hv, in); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := CheckRepresentor(context.Background(), hv, bad(func(in *RepresentorInput) { in.Control = nil })); err == nil || !strings.Contains(err.Error(), "no control runner") {
		t.Errorf("missing control: %v", err)
	}
	if _, err := CheckRepresentor(context.Background(), hv, bad(func(in *RepresentorInput) { in.ControlIface = "" })); err == nil || !strings.Contains(err.Error(), "data interface of the guest guest-a") {
		t.Errorf("missing control interface: %v", err)
	}
	// A lost connection to the guest is an error, not a verdict.
	lost := bad(func(in *RepresentorInput) {
		in.Control = guestRunner{&fakeRunner{err: errors.New("ssh: connection lost")}, "guest-a"}
	})
	if _, err := CheckRepresentor(context.Background(), hv, lost); err == nil || !strings.Contains(err.Error(), "on guest-a: ssh: connection lost") {
		t.Errorf("guest transport failure: %v", err)
	}
}

// The representor lookup, and captures that fail on the hypervisor (moved
// here from runner_test.go, now with the control).
func TestCheckRepresentorLookupAndHypervisorFailures(t *testing.T) {
	filter, _ := CaptureFilter(recMAC1, recMAC2, "tcp")
	capture := CaptureCommand("offrec-rep1", filter, 2*time.Second, 300)
	if capture != "timeout -s INT 2s tcpdump -nn -e -tt -l -i offrec-rep1 -c 300 '"+filter+"'" {
		t.Errorf("capture command: %s", capture)
	}
	control := guestRunner{&fakeRunner{results: map[string][]remote.Result{
		CaptureCommand("eth1", filter, 2*time.Second, 300): {recordedResult(t, "tcpdump-rep-tcp.txt")},
	}}, "guest-a"}
	hv := &fakeRunner{results: map[string][]remote.Result{
		FindInterfaceCommand("offrec-port-1"): {ok(readTestdata(t, "sw/ovs-vsctl-find-iface.txt"))},
		capture:                               {recordedResult(t, "tcpdump-rep-tcp.txt")},
	}}
	in := RepresentorInput{PortID: "offrec-port-1", LocalMAC: recMAC1, PeerMAC: recMAC2, Protocol: "tcp", Window: 2 * time.Second,
		FirstPackets: 10, MaxPackets: 300, Control: control, ControlIface: "eth1"}
	c, err := CheckRepresentor(context.Background(), hv, in)
	if err != nil {
		t.Fatal(err)
	}
	if c.Verdict != results.VerdictSoftware || !strings.Contains(c.Reason, "representor offrec-rep1: 553 packets") {
		t.Errorf("recorded capture: %s %q", c.Verdict, c.Reason)
	}
	if len(c.Evidence) != 3 || c.Evidence[0].Name != "ovs-vsctl-find-iface-offrec-port-1.txt" || c.Evidence[1].Name != "tcpdump-offrec-rep1.txt" || len(c.Evidence[1].Stderr) == 0 {
		t.Errorf("evidence: %+v", c.Evidence)
	}

	// Port without representor: no capture at all.
	hv = &fakeRunner{results: map[string][]remote.Result{
		FindInterfaceCommand("no-such-port"): {ok(readTestdata(t, "sw/ovs-vsctl-find-iface-missing.txt"))},
	}}
	in.PortID = "no-such-port"
	c, err = CheckRepresentor(context.Background(), hv, in)
	if err != nil || c.Verdict != results.VerdictInconclusive || !strings.Contains(c.Reason, "no OVS interface on fake-hv has external_ids:iface-id=no-such-port") {
		t.Errorf("missing port: %s %q %v", c.Verdict, c.Reason, err)
	}
	// Missing device on the hypervisor: inconclusive, the control is kept as evidence.
	nodevCmd := CaptureCommand("offrec-nosuch", filter, 2*time.Second, 300)
	hv = &fakeRunner{results: map[string][]remote.Result{nodevCmd: {recordedResult(t, "tcpdump-nodev.txt")}}}
	in.Representor = "offrec-nosuch"
	c, err = CheckRepresentor(context.Background(), hv, in)
	if err != nil || c.Verdict != results.VerdictInconclusive || !strings.Contains(c.Reason, "No such device") || len(c.Evidence) != 2 {
		t.Errorf("missing device: %s %q %v (%d evidence files)", c.Verdict, c.Reason, err, len(c.Evidence))
	}
	// Without traffic, "no hardware rule / flow" is no proof of the software
	// path either; verdicts resting on counted packets stand.
	for _, tc := range []struct {
		c    Check
		want results.Verdict
	}{
		{Check{Name: results.CheckTC, Verdict: results.VerdictSoftware, Reason: "no flower rule"}, results.VerdictInconclusive},
		{Check{Name: results.CheckDpctl, Verdict: results.VerdictSoftware, Reason: "no offloaded IP flows"}, results.VerdictInconclusive},
		{Check{Name: results.CheckTC, Verdict: results.VerdictOffloaded, Reason: "hardware packets +100"}, results.VerdictOffloaded},
		{Check{Name: results.CheckRepresentor, Verdict: results.VerdictSoftware, Reason: "300 packets"}, results.VerdictSoftware},
	} {
		if got := ConfirmFlow(tc.c, false, "iperf3 failed"); got.Verdict != tc.want {
			t.Errorf("flow did not run, %s %s: got %s %q, want %s", tc.c.Name, tc.c.Verdict, got.Verdict, got.Reason, tc.want)
		}
		if got := ConfirmFlow(tc.c, true, "ran"); got.Verdict != tc.c.Verdict || got.Reason != tc.c.Reason {
			t.Errorf("flow ran, %s %s: changed to %+v", tc.c.Name, tc.c.Verdict, got)
		}
	}
}
