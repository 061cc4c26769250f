package offload

import (
	"strings"
	"testing"
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// Samples: testdata/sw/tcpdump-rep-*, tcpdump-nodev and ovs-vsctl-* were
// recorded here by testdata/record-software-path.sh (tcpdump 4.99.3 on the
// userspace-OVS "representor" veth during iperf3), tcpdump-pair-* and
// tcpdump-guest-missing by testdata/record-counters.sh; each NAME has
// NAME.stderr and NAME.cmd.

// recordedCapture joins a recorded capture's stdout and stderr as the runner does.
func recordedCapture(t *testing.T, name string) Capture {
	t.Helper()
	out := append(readTestdata(t, "sw/"+name), readTestdata(t, "sw/"+name+".stderr")...)
	c, err := ParseTcpdump(out)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return c
}

func TestCaptureFilter(t *testing.T) {
	got, err := CaptureFilter("02:00:C6:12:D2:01", recMAC2, "tcp")
	if err != nil {
		t.Fatal(err)
	}
	want := "((ether src 02:00:c6:12:d2:01 and ether dst 02:00:c6:12:d2:02) or (ether src 02:00:c6:12:d2:02 and ether dst 02:00:c6:12:d2:01)) and ip and tcp and not (udp port 67 or udp port 68)"
	if got != want {
		t.Errorf("filter:\n got %s\nwant %s", got, want)
	}
	// The recorded capture ran with exactly this filter and tcpdump accepted it (exit 0).
	cmd := string(readTestdata(t, "sw/tcpdump-rep-tcp.txt.cmd"))
	if !strings.Contains(cmd, want) || !strings.Contains(cmd, "exit 0") {
		t.Errorf("recorded command does not use the filter or failed:\n%s", cmd)
	}
	if f, _ := CaptureFilter(recMAC1, recMAC2, ""); strings.Contains(f, "and tcp") || !strings.Contains(f, "and ip and not") {
		t.Errorf("no protocol: %s", f)
	}
	for name, args := range map[string][3]string{
		"bad MAC":      {"02:00:c6:12:d2", recMAC2, "tcp"},
		"8-byte MAC":   {"02:00:c6:12:d2:01:00:00", recMAC2, "tcp"},
		"same MACs":    {recMAC1, strings.ToUpper(recMAC1), "udp"},
		"bad protocol": {recMAC1, recMAC2, "tcp or 1=1"},
	} {
		if f, err := CaptureFilter(args[0], args[1], args[2]); err == nil {
			t.Errorf("%s: no error, got %q", name, f)
		}
	}
}

func TestParseTcpdumpRecorded(t *testing.T) {
	c := recordedCapture(t, "tcpdump-rep-tcp.txt")
	if len(c.Packets) != 300 || c.Captured != 300 || c.ReceivedFilter != 553 || c.DroppedKernel != 0 || c.Interface != "offrec-rep1" || len(c.Errors) != 0 || c.Skipped != 0 {
		t.Errorf("summary: packets %d captured %d received %d dropped %d if %q errors %v skipped %d",
			len(c.Packets), c.Captured, c.ReceivedFilter, c.DroppedKernel, c.Interface, c.Errors, c.Skipped)
	}
	p := c.Packets[0] // the recorded first line: an ACK from guest 2
	if p.Src != recMAC2 || p.Dst != recMAC1 || p.EtherType != "IPv4" || p.Length != 94 || p.Time != 1796203236.871605 || !strings.HasPrefix(p.Summary, "198.18.210.2.5201 > 198.18.210.1.45104: Flags [.]") {
		t.Errorf("first packet: %+v", p)
	}
	dirs := map[string]int{}
	for _, p := range c.Packets {
		dirs[p.Src+">"+p.Dst]++
	}
	if len(dirs) != 2 || dirs[recMAC1+">"+recMAC2] == 0 || dirs[recMAC2+">"+recMAC1] == 0 {
		t.Errorf("directions: %v", dirs)
	}
	u := recordedCapture(t, "tcpdump-rep-udp-count.txt")
	if len(u.Packets) != 200 || u.Captured != 200 || u.Interface != "offrec-rep2" {
		t.Errorf("udp capture: %d packets, captured %d, if %q", len(u.Packets), u.Captured, u.Interface)
	}
	idle := recordedCapture(t, "tcpdump-rep-idle.txt")
	if len(idle.Packets) != 0 || idle.Captured != 0 || idle.ReceivedFilter != 0 {
		t.Errorf("idle capture: %+v", idle)
	}
	nodev := recordedCapture(t, "tcpdump-nodev.txt")
	if len(nodev.Errors) != 1 || !strings.Contains(nodev.Errors[0], "No such device") || nodev.Captured != -1 {
		t.Errorf("missing device: %+v", nodev)
	}
}

func TestParseTcpdumpErrors(t *testing.T) {
	for name, in := range map[string]string{
		"empty":       "",
		"blank":       "\n \n",
		"not tcpdump": "Cannot find device \"offrec-nosuch\"\n",
		"dpctl dump":  string(readTestdata(t, "hw/dpctl-kubeovn-offloaded.txt")),
	} {
		if _, err := ParseTcpdump([]byte(in)); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestJudgeCapture(t *testing.T) {
	rec := []string{recMAC1, recMAC2}
	tcp := recordedCapture(t, "tcpdump-rep-tcp.txt")
	v, why, j := JudgeCapture(tcp, rec, 10, 0)
	if v != results.VerdictSoftware || j.FlowPackets != 300 || j.Rate <= 0 || !strings.Contains(why, "553 packets") || !strings.Contains(why, "300 printed; tcpdump's summary: 300 captured, 553 received by filter, 0 dropped by kernel") {
		t.Errorf("recorded TCP flow: %s %q %+v", v, why, j)
	}
	// Over the window instead of timestamps: 553 packets (received by
	// filter; 300 printed, the -c limit) in 2 s.
	if _, _, j := JudgeCapture(tcp, rec, 10, 2*time.Second); j.Rate != 276.5 {
		t.Errorf("rate over a 2s window: %v", j.Rate)
	}
	// Allowing more first packets than were seen flips the verdict, given a
	// control that saw more than the allowance (4000 by its summary).
	busy := ControlCapture{Guest: "guest-a", Iface: "eth1", Capture: &Capture{Packets: []CapturedPacket{}, Captured: 4000, ReceivedFilter: 4000}}
	if v, why, j := JudgeCaptureWithControl(tcp, busy, rec, 600, 0); v != results.VerdictOffloaded || j.ControlPackets != 4000 || !strings.Contains(why, "the control capture on eth1 of guest-a saw 4000") {
		t.Errorf("600 allowed: %s %q %+v", v, why, j)
	}
	// Packets of other guests count on neither side.
	if v, why, j := JudgeCaptureWithControl(tcp, ControlCapture{Iface: "eth1", Capture: &tcp}, []string{mlxMACLocal, mlxMACRemote}, 10, 0); v != results.VerdictInconclusive || j.FlowPackets != 0 || j.ControlPackets != 0 || !strings.Contains(why, "saw only 0 packets") {
		t.Errorf("other MACs: %s %q %+v", v, why, j)
	}
	if v, _, _ := JudgeCapture(recordedCapture(t, "tcpdump-nodev.txt"), rec, 10, time.Second); v != results.VerdictInconclusive {
		t.Errorf("missing device: %s", v)
	}
	// Summary says packets were captured but the packet lines are missing
	// (tcpdump killed before it flushed stdout): trust the summary, whose
	// "received by filter" counts what passed the filter.
	lost := Capture{Packets: []CapturedPacket{}, Captured: 4000, ReceivedFilter: 4100, DroppedKernel: 0}
	if v, why, _ := JudgeCapture(lost, rec, 10, time.Second); v != results.VerdictSoftware || !strings.Contains(why, "4100 packets") {
		t.Errorf("summary only: %s %q", v, why)
	}
	dropped := Capture{Packets: []CapturedPacket{}, Captured: 0, ReceivedFilter: 0, DroppedKernel: 5}
	if v, _, _ := JudgeCaptureWithControl(dropped, busy, rec, 10, time.Second); v != results.VerdictInconclusive {
		t.Errorf("dropped by kernel: %s", v)
	}
	if v, _, _ := JudgeCaptureWithControl(Capture{Captured: -1}, busy, rec, 10, time.Second); v != results.VerdictInconclusive {
		t.Errorf("no summary, no packets: %s", v)
	}
}

// Issue point 6, on the judge alone: the recorded idle capture (0 packets,
// window ended) used to be judged "offloaded". Nothing beside it shows the
// flow crossed the port, so it proves nothing.
func TestJudgeCaptureEmptyCaptureProvesNothing(t *testing.T) {
	idle := recordedCapture(t, "tcpdump-rep-idle.txt")
	v, why, _ := JudgeCapture(idle, []string{recMAC1, recMAC2}, 10, time.Second)
	if v != results.VerdictInconclusive || !strings.Contains(why, "proves nothing") {
		t.Errorf("idle capture with no control: %s %q", v, why)
	}
}

func TestJudgeCaptureWithControl(t *testing.T) {
	rec := []string{recMAC1, recMAC2}
	idle := recordedCapture(t, "tcpdump-rep-idle.txt")
	tcp := recordedCapture(t, "tcpdump-rep-tcp.txt")
	noflow := recordedCapture(t, "tcpdump-pair-guest-noflow.txt")
	nodev := recordedCapture(t, "tcpdump-nodev.txt")
	few := tcp
	few.Packets, few.Captured, few.ReceivedFilter = tcp.Packets[:5], 5, 5
	for _, tc := range []struct {
		name     string
		rep      Capture
		ctl      ControlCapture
		want     results.Verdict
		ctlCount int
		has      []string
	}{
		{"quiet representor, busy control", idle, ControlCapture{Guest: "g", Iface: "eth1", Capture: &tcp}, results.VerdictOffloaded, 553,
			[]string{"0 packets of the guests' flow", "the control capture on eth1 of g saw 553"}},
		{"quiet representor, empty control", idle, ControlCapture{Guest: "g", Iface: "eth1", Capture: &noflow}, results.VerdictInconclusive, 0,
			[]string{"the control capture on eth1 of g saw only 0 packets: the flow did not cross this port in the window (wrong interface, filter or no traffic), so an empty representor capture proves nothing"}},
		{"quiet representor, control within the allowance", idle, ControlCapture{Guest: "g", Iface: "eth1", Capture: &few}, results.VerdictInconclusive, 5,
			[]string{"saw only 5 packets"}},
		{"quiet representor, control failed", idle, ControlCapture{Guest: "g", Iface: "eth1", Problem: "tcpdump is not installed in the guest g (exit 127: ...)"}, results.VerdictInconclusive, -1,
			[]string{"the control capture on eth1 of g failed: tcpdump is not installed in the guest g", "proves nothing"}},
		{"quiet representor, control reported an error", idle, ControlCapture{Guest: "g", Iface: "eth9", Capture: &nodev}, results.VerdictInconclusive, -1,
			[]string{"the control capture on eth9 of g failed: tcpdump: offrec-nosuch: No such device exists"}},
		{"quiet representor, no control", idle, ControlCapture{}, results.VerdictInconclusive, -1,
			[]string{"no control capture was taken"}},
		{"full representor, failed control", tcp, ControlCapture{Guest: "g", Iface: "eth1", Problem: "exit 1: sudo: a password is required"}, results.VerdictSoftware, -1,
			[]string{"553 packets of the guests' flow"}},
		{"full representor, empty control", tcp, ControlCapture{Guest: "g", Iface: "eth1", Capture: &noflow}, results.VerdictSoftware, 0,
			[]string{"553 packets", "the control capture on eth1 of g saw 0"}},
	} {
		v, why, j := JudgeCaptureWithControl(tc.rep, tc.ctl, rec, 10, time.Second)
		if v != tc.want || j.ControlPackets != tc.ctlCount {
			t.Errorf("%s: got %s (control %d) %q, want %s (control %d)", tc.name, v, j.ControlPackets, why, tc.want, tc.ctlCount)
		}
		for _, h := range tc.has {
			if !strings.Contains(why, h) {
				t.Errorf("%s: reason %q lacks %q", tc.name, why, h)
			}
		}
	}
}

// Issue point 7: the first packets of a flow reach the representor in a
// burst before offload takes over; the verdict stays count-based, and says
// how many arrived over what span.
func TestJudgeCaptureReportsArrivalSpan(t *testing.T) {
	rec := []string{recMAC1, recMAC2}
	tcp := recordedCapture(t, "tcpdump-rep-tcp.txt")
	first, last := tcp.Packets[0].Time, tcp.Packets[len(tcp.Packets)-1].Time
	span := time.Duration((last - first) * float64(time.Second))
	v, why, j := JudgeCapture(tcp, rec, 10, 2*time.Second)
	if v != results.VerdictSoftware || j.ArrivalSpan != span.String() || !strings.Contains(why, "553 packets of the guests' flow") || !strings.Contains(why, "arriving within "+span.String()) || !strings.Contains(why, "over 2s") {
		t.Errorf("recorded flow: %s %q %+v (span %s)", v, why, j, span)
	}
	// The first three packets of the same recording, then silence: within the allowance.
	burst := Capture{Packets: tcp.Packets[:3], Captured: 3, ReceivedFilter: 3, DroppedKernel: 0}
	burstSpan := time.Duration((tcp.Packets[2].Time - first) * float64(time.Second))
	busy := ControlCapture{Guest: "g", Iface: "eth1", Capture: &tcp}
	v, why, j = JudgeCaptureWithControl(burst, busy, rec, 10, 2*time.Second)
	if v != results.VerdictOffloaded || j.FlowPackets != 3 || j.ArrivalSpan != burstSpan.String() || !strings.Contains(why, "3 packets of the guests' flow") || !strings.Contains(why, "arriving within "+burstSpan.String()) {
		t.Errorf("first-packet burst: %s %q %+v", v, why, j)
	}
	if _, _, j := JudgeCapture(recordedCapture(t, "tcpdump-rep-idle.txt"), rec, 10, time.Second); j.ArrivalSpan != "0s" || j.ControlPackets != -1 {
		t.Errorf("idle: %+v", j)
	}
}

func TestParseInterfaceNames(t *testing.T) {
	names, err := ParseInterfaceNames(readTestdata(t, "sw/ovs-vsctl-find-iface.txt"))
	if err != nil || len(names) != 1 || names[0] != "offrec-rep1" {
		t.Errorf("recorded: %v %v", names, err)
	}
	names, err = ParseInterfaceNames(readTestdata(t, "sw/ovs-vsctl-find-iface-missing.txt"))
	if err != nil || len(names) != 0 {
		t.Errorf("recorded missing: %v %v", names, err)
	}
	if _, err := ParseInterfaceNames([]byte("ovs-vsctl: unix:/run/openvswitch/db.sock: database connection failed (No such file or directory)\n")); err == nil {
		t.Error("error text accepted as an interface name")
	}
}
