package offload

import (
	"bufio"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// agTuple is the recorded aging flow: iperf3 -u --cport 40003 from
// 198.18.39.1 to 198.18.39.2:5201 (testdata/record-aging-frag.sh).
var agTuple = Tuple{Proto: 17, Src: netip.MustParseAddr("198.18.39.1"), Dst: netip.MustParseAddr("198.18.39.2"), SrcPort: 40003, DstPort: 5201}

func TestTupleFlowsOfRecordedDumps(t *testing.T) {
	during := mustDpctl(t, "aging/dpctl-aging-during.txt")
	fw, exact := TupleFlows(during, agMAC1, agMAC2, agTuple)
	if len(fw) != 1 || exact != 1 || fw[0].Packets != 1790 {
		t.Errorf("forward flows %d (exact %d), want the one udp(src=40003,dst=5201)", len(fw), exact)
	}
	// Another client port is another flow: its exact udp() does not admit it.
	other := agTuple
	other.SrcPort = 40004
	if fw, _ := TupleFlows(during, agMAC1, agMAC2, other); len(fw) != 0 {
		t.Errorf("port 40004 admitted by %d flows", len(fw))
	}
	// TCP (the control connection) is another protocol.
	tcp := agTuple
	tcp.Proto = 6
	if _, exact := TupleFlows(during, agMAC1, agMAC2, tcp); exact != 0 {
		t.Errorf("tcp matched exactly")
	}
	// A megaflow that wildcards the ports (no L4 key) admits the tuple, not exactly.
	wild := []DpctlFlow{{EthSrc: agMAC1, EthDst: agMAC2, EthType: "0x0800", Match: []MatchField{{Key: "eth_type", Value: "0x0800"}, {Key: "ipv4", Value: "frag=no"}}, Packets: 5}}
	if fw, exact := TupleFlows(wild, agMAC1, agMAC2, agTuple); len(fw) != 1 || exact != 0 {
		t.Errorf("wildcarded flow: %d flows, %d exact", len(fw), exact)
	}
}

// The recorded idle: 2 s after the flow its flows are still installed (an
// idle too short is no aging); after 14 s none is.
func TestAgedOutOfRecordedDumps(t *testing.T) {
	short := JudgeAgedOut(mustDpctl(t, "aging/dpctl-aging-idle-short.txt"), agMAC1, agMAC2, agTuple, 2*time.Second)
	if short.Aged || short.Remaining != 2 || short.Leaked {
		t.Errorf("2 s idle: %+v", short)
	}
	if !strings.HasPrefix(short.Reason, "not an aging measurement") || !strings.Contains(short.Reason, "did not age out") {
		t.Errorf("2 s idle reason %q", short.Reason)
	}
	aged := JudgeAgedOut(mustDpctl(t, "aging/dpctl-aging-idle.txt"), agMAC1, agMAC2, agTuple, 14*time.Second)
	if !aged.Aged || aged.Remaining != 0 {
		t.Errorf("14 s idle: %+v", aged)
	}
	// The same dump judged against a 40 s idle: the flow was used 2.1 s
	// ago, inside it: traffic leaked into the idle.
	leak := JudgeAgedOut(mustDpctl(t, "aging/dpctl-aging-idle-short.txt"), agMAC1, agMAC2, agTuple, 40*time.Second)
	if leak.Aged || !leak.Leaked || !strings.Contains(leak.Reason, "traffic leaked") {
		t.Errorf("leak: %+v", leak)
	}
}

// agTimeline reads testdata/aging/timeline: each dump with its time from
// the restarted client's launch (times.tsv: the moment the dump was sent;
// each took well under the spacing, so End is the next one's Start).
func agTimeline(t *testing.T) []AgingSample {
	t.Helper()
	var out []AgingSample
	sc := bufio.NewScanner(strings.NewReader(string(readTestdata(t, "aging/timeline/times.tsv"))))
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") || line == "" {
			continue
		}
		f := strings.Fields(line)
		sec, err := strconv.ParseFloat(f[1], 64)
		if err != nil {
			t.Fatal(err)
		}
		at := time.Duration(sec * float64(time.Second))
		out = append(out, AgingSample{Start: at, End: at + 20*time.Millisecond, Flows: mustDpctl(t, "aging/timeline/dpctl-"+f[0]+".txt")})
	}
	return out
}

// The recorded restart on the software datapath: in the datapath at the
// second dump (0.231 s after the launch, resolution the spacing), in
// hardware never, said as the software datapath's.
func TestReinstallOfRecordedTimeline(t *testing.T) {
	r := JudgeReinstall(ReinstallInput{Samples: agTimeline(t), ClientMAC: agMAC1, ServerMAC: agMAC2, Tuple: agTuple, Software: true})
	if r.InDatapath == nil || *r.InDatapath != 231*time.Millisecond || *r.InDatapathResolution != 209*time.Millisecond {
		t.Fatalf("in the datapath: %v (resolution %v)", r.InDatapath, r.InDatapathResolution)
	}
	if r.InHardware != nil || !r.ExactPorts {
		t.Errorf("in hardware %v, exact ports %v", r.InHardware, r.ExactPorts)
	}
	if !strings.Contains(r.Reason, "in hardware: never — software datapath") || r.Verdict != results.VerdictSoftware {
		t.Errorf("%s: %s", r.Verdict, r.Reason)
	}
}

// The same timeline as a hardware datapath would print it (dp:tc,
// offloaded:yes from the fourth dump on): in hardware at the fourth dump,
// the first whose growth over the one before (in software) proves it.
func TestReinstallInHardware(t *testing.T) {
	tl := agTimeline(t)
	for i := range tl {
		var flows []DpctlFlow
		for _, f := range tl[i].Flows {
			g := f
			if i >= 3 {
				g.DP, g.Offloaded = "tc", "yes"
			}
			flows = append(flows, g)
		}
		tl[i].Flows = flows
	}
	r := JudgeReinstall(ReinstallInput{Samples: tl, ClientMAC: agMAC1, ServerMAC: agMAC2, Tuple: agTuple})
	if r.InHardware == nil {
		t.Fatalf("never in hardware: %s", r.Reason)
	}
	if *r.InHardware != tl[3].End {
		t.Errorf("in hardware at %v, want %v (the fourth dump: its flows grew since the third)", *r.InHardware, tl[3].End)
	}
	if *r.InHardwareResolution != tl[3].End-tl[2].Start {
		t.Errorf("resolution %v, want %v", *r.InHardwareResolution, tl[3].End-tl[2].Start)
	}
	if !strings.Contains(r.Reason, fmt.Sprintf("in hardware: %d ms", r.InHardware.Milliseconds())) {
		t.Errorf("reason %q", r.Reason)
	}
}

// A flow there from the first dump on is named: its time is no re-install.
func TestReinstallFlowAlreadyThere(t *testing.T) {
	tl := agTimeline(t)[1:]
	r := JudgeReinstall(ReinstallInput{Samples: tl, ClientMAC: agMAC1, ServerMAC: agMAC2, Tuple: agTuple, Software: true})
	if !strings.Contains(r.Reason, "installed at the first dump") {
		t.Errorf("reason %q", r.Reason)
	}
}

// A restart from another port never brings the pinned tuple's flow back.
func TestReinstallOtherTupleNever(t *testing.T) {
	other := agTuple
	other.SrcPort = 40009
	r := JudgeReinstall(ReinstallInput{Samples: agTimeline(t), ClientMAC: agMAC1, ServerMAC: agMAC2, Tuple: other, Software: true})
	if r.InDatapath != nil || !strings.Contains(r.Reason, "in the datapath: never") {
		t.Errorf("%v: %s", r.InDatapath, r.Reason)
	}
	if SameTuple(agTuple, other) == "" || SameTuple(agTuple, agTuple) != "" {
		t.Errorf("SameTuple")
	}
}

// max-idle as the recorded private OVS answered it (unset), set, and
// what cannot be read.
func TestParseMaxIdle(t *testing.T) {
	d, src := ParseMaxIdle(nil, readTestdata(t, "aging/max-idle.txt.stderr"), 1)
	if d != 10*time.Second || !strings.HasPrefix(src, "unset") {
		t.Errorf("recorded unset: %v %q", d, src)
	}
	if d, src := ParseMaxIdle([]byte("\"15000\"\n"), nil, 0); d != 15*time.Second || src != "other_config:max-idle" {
		t.Errorf("set: %v %q", d, src)
	}
	for _, c := range []struct {
		out, errOut string
		exit        int
	}{{"\"soon\"", "", 0}, {"", "ovs-vsctl: unix:/run/openvswitch/db.sock: database connection failed (No such file or directory)", 1}, {"", "sh: ovs-vsctl: not found", 127}} {
		if d, src := ParseMaxIdle([]byte(c.out), []byte(c.errOut), c.exit); d != DefaultMaxIdle || !strings.HasPrefix(src, "unread") {
			t.Errorf("%+v: %v %q", c, d, src)
		}
	}
}

// Before the idle the flow's flows must be there and have counted: the
// recorded dump 2 s after the flow is; the empty one after the idle is
// nothing to age.
func TestJudgeBeforeIdle(t *testing.T) {
	if ok, why := JudgeBeforeIdle(mustDpctl(t, "aging/dpctl-aging-idle-short.txt"), agMAC1, agMAC2, agTuple); !ok || !strings.Contains(why, "matching its ports exactly, 3568 packets") {
		t.Errorf("%v %s", ok, why)
	}
	if ok, why := JudgeBeforeIdle(mustDpctl(t, "aging/dpctl-aging-idle.txt"), agMAC1, agMAC2, agTuple); ok || !strings.Contains(why, "nothing to age") {
		t.Errorf("%v %s", ok, why)
	}
}

// Claimed in hardware from the fourth dump, its counters frozen there
// until the sixth (a hardware rule's counters reach tc late: mlx5 reads
// them every second): in hardware at the fourth dump, proven at the sixth.
func TestReinstallClaimBeforeCountersGrow(t *testing.T) {
	tl := agTimeline(t)
	frozen := map[string]uint64{}
	for _, f := range tl[3].Flows {
		frozen[f.UFID] = f.Packets
	}
	for i := range tl {
		var flows []DpctlFlow
		for _, f := range tl[i].Flows {
			g := f
			if i >= 3 {
				g.DP, g.Offloaded = "tc", "yes"
			}
			if i == 4 {
				g.Packets = frozen[f.UFID]
			}
			flows = append(flows, g)
		}
		tl[i].Flows = flows
	}
	r := JudgeReinstall(ReinstallInput{Samples: tl, ClientMAC: agMAC1, ServerMAC: agMAC2, Tuple: agTuple})
	if r.InHardware == nil || *r.InHardware != tl[3].End || *r.Proven != tl[3].End {
		// the fourth dump grew over the third (software counters): proven there
		t.Fatalf("in hardware %v proven %v, want %v", r.InHardware, r.Proven, tl[3].End)
	}
	// Claimed from the fourth, but the fourth and fifth carry the third's
	// counts (nothing grew while claimed) and the sixth grows: proven at the
	// sixth, dated from the fourth.
	for i := 3; i <= 4; i++ {
		var flows []DpctlFlow
		for _, f := range tl[i].Flows {
			g := f
			if p, ok := packetsOf(tl[2].Flows, f.UFID); ok {
				g.Packets = p
			}
			flows = append(flows, g)
		}
		tl[i].Flows = flows
	}
	r = JudgeReinstall(ReinstallInput{Samples: tl, ClientMAC: agMAC1, ServerMAC: agMAC2, Tuple: agTuple})
	if r.InHardware == nil || *r.InHardware != tl[3].End || *r.Proven != tl[5].End || *r.InHardwareResolution != tl[3].End-tl[2].Start {
		t.Fatalf("in hardware %v (± %v) proven %v, want %v proven %v", r.InHardware, r.InHardwareResolution, r.Proven, tl[3].End, tl[5].End)
	}
}

func packetsOf(flows []DpctlFlow, ufid string) (uint64, bool) {
	for _, f := range flows {
		if f.UFID == ufid {
			return f.Packets, true
		}
	}
	return 0, false
}
