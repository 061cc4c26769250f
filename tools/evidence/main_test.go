package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The inputs are the offload package's testdata (see
// e2e/offload/testdata/README.md: sw/ recorded on this machine by
// record-software-path.sh, hw/ from public material) and the iperf3
// package's recorded samples (e2e/iperf3/testdata/README.md).
var (
	offTD   = filepath.Join("..", "..", "e2e", "offload", "testdata")
	iperfTD = filepath.Join("..", "..", "e2e", "iperf3", "testdata")
)

func runCmd(t *testing.T, args ...string) (int, map[string]any, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(args, &out, &errb)
	var m map[string]any
	if out.Len() > 0 {
		if err := json.Unmarshal(out.Bytes(), &m); err != nil {
			t.Fatalf("%v: stdout is not JSON: %v\n%s", args, err, out.String())
		}
	}
	return code, m, errb.String()
}

func TestIperf3(t *testing.T) {
	code, m, stderr := runCmd(t, "iperf3", filepath.Join(offTD, "sw", "iperf3-udp.json"))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if m["protocol"] != "UDP" || m["streams"] != 1.0 || m["iperf3_version"] != "iperf 3.12" {
		t.Errorf("udp: %v", m)
	}
	off, _ := m["offered_bps"].(float64)
	del, _ := m["delivered_bps"].(float64)
	loss, hasLoss := m["loss_percent"].(float64)
	// recorded with iperf3 -u -b 100M: offered ~100 Mbit/s, delivered a bit less
	if off < 99e6 || off > 101e6 || del <= 0 || del > off || !hasLoss || loss < 0 {
		t.Errorf("udp numbers: offered %v delivered %v loss %v", off, del, m["loss_percent"])
	}
	if _, ok := m["retransmits"]; ok {
		t.Error("UDP output has retransmits")
	}

	code, m, stderr = runCmd(t, "iperf3", filepath.Join(offTD, "sw", "iperf3-tcp.json"))
	if code != 0 {
		t.Fatalf("tcp exit %d: %s", code, stderr)
	}
	if _, ok := m["retransmits"].(float64); !ok || m["protocol"] != "TCP" {
		t.Errorf("tcp: %v", m)
	}
	if _, ok := m["loss_percent"]; ok {
		t.Error("TCP output has loss_percent")
	}

	// iperf3's own error ("the server is busy"): non-zero, named file, message kept.
	busy := filepath.Join(iperfTD, "v3.12-server-busy.json")
	code, _, stderr = runCmd(t, "iperf3", busy)
	if code != 1 || !strings.Contains(stderr, busy) || !strings.Contains(stderr, "busy") {
		t.Errorf("server busy: exit %d, stderr %q", code, stderr)
	}
	// Not iperf3 at all.
	notIperf := filepath.Join(offTD, "sw", "tc-noqdisc.json")
	code, _, stderr = runCmd(t, "iperf3", notIperf)
	if code != 1 || !strings.Contains(stderr, notIperf) {
		t.Errorf("not iperf3: exit %d, stderr %q", code, stderr)
	}
}

func TestTC(t *testing.T) {
	d1 := filepath.Join(offTD, "hw", "tc-mlx5-vxlan-decap.txt")
	d2 := filepath.Join(offTD, "hw", "tc-mlx5-vxlan-decap-sample2.json")
	code, m, stderr := runCmd(t, "tc", "--mac", "ca:2e:a7:3f:f5:0f,0a:40:bd:30:89:99", d1, d2)
	if code != 0 || m["verdict"] != "offloaded" || !strings.Contains(m["reason"].(string), "+21665") {
		t.Errorf("text then JSON sample: exit %d %v %s", code, m["verdict"], stderr)
	}
	samples, _ := m["samples"].([]any)
	if len(samples) != 2 {
		t.Errorf("samples printed: %d", len(samples))
	}
	code, m, _ = runCmd(t, "tc", filepath.Join(offTD, "sw", "tc-noqdisc.json"))
	if code != 0 || m["verdict"] != "software" {
		t.Errorf("recorded empty listing: exit %d %v", code, m)
	}
	bad := filepath.Join(offTD, "sw", "tc-nodev.txt.stderr")
	code, _, stderr = runCmd(t, "tc", bad)
	if code != 1 || !strings.Contains(stderr, bad) || !strings.Contains(stderr, "not a tc filter line") {
		t.Errorf("tc error text: exit %d %q", code, stderr)
	}
}

// One sample is never offloaded: the tool says why, as the harness would
// judge it (it always takes two).
func TestOneSampleIsNotProof(t *testing.T) {
	code, m, stderr := runCmd(t, "tc", "--mac", "ca:2e:a7:3f:f5:0f,0a:40:bd:30:89:99", filepath.Join(offTD, "hw", "tc-mlx5-vxlan-decap.txt"))
	if code != 0 || m["verdict"] != "inconclusive" || !strings.Contains(fmt.Sprint(m["notes"]), "one sample") {
		t.Errorf("tc, one sample: exit %d %v %v %s", code, m["verdict"], m["notes"], stderr)
	}
	code, m, stderr = runCmd(t, "dpctl", "--mac", "00:00:00:c5:6d:4e,00:00:00:e7:16:ce", filepath.Join(offTD, "hw", "dpctl-kubeovn-offloaded.txt"))
	if code != 0 || m["verdict"] != "inconclusive" || !strings.Contains(fmt.Sprint(m["notes"]), "one sample") {
		t.Errorf("dpctl, one sample: exit %d %v %v %s", code, m["verdict"], m["notes"], stderr)
	}
}

func TestCounters(t *testing.T) {
	sw := func(n string) string { return filepath.Join(offTD, "sw", n) }
	code, m, stderr := runCmd(t, "counters", "--cpuhit-before", sw("ip-stats-cpuhit-rep-before.json"), "--cpuhit-after", sw("ip-stats-cpuhit-rep-after.json"),
		sw("ip-link-rep-before.json"), sw("ip-link-rep-after.json"), sw("ip-link-guest-before.json"), sw("ip-link-guest-after.json"))
	if code != 0 || m["verdict"] != "software" {
		t.Errorf("recorded veth counters during a flood ping: exit %d %v %v %s", code, m["verdict"], m["reason"], stderr)
	}
	code, m, _ = runCmd(t, "counters", sw("ip-link-rep-idle-before.json"), sw("ip-link-rep-idle-after.json"), sw("ip-link-guest-idle-before.json"), sw("ip-link-guest-idle-after.json"))
	if code != 0 || m["verdict"] != "inconclusive" || !strings.Contains(fmt.Sprint(m["notes"]), "cpu_hit") {
		t.Errorf("idle counters: exit %d %v", code, m)
	}
	code, _, stderr = runCmd(t, "counters", sw("ip-link-rep-before.json"))
	if code != 2 || !strings.Contains(stderr, "REP_BEFORE") {
		t.Errorf("one file: exit %d %q", code, stderr)
	}
}

func TestDpctl(t *testing.T) {
	code, m, stderr := runCmd(t, "dpctl", "--mac", "02:00:c6:12:d2:01,02:00:c6:12:d2:02", "--type", "offloaded",
		filepath.Join(offTD, "sw", "dpctl-tcp-offloaded-1.txt"), filepath.Join(offTD, "sw", "dpctl-tcp-offloaded-2.txt"))
	if code != 0 || m["verdict"] != "software" {
		t.Errorf("recorded empty offloaded dumps: exit %d %v %s", code, m, stderr)
	}
	code, m, _ = runCmd(t, "dpctl", "--mac", "00:00:00:c5:6d:4e,00:00:00:e7:16:ce",
		filepath.Join(offTD, "hw", "dpctl-kubeovn-offloaded.txt"), filepath.Join(offTD, "hw", "dpctl-kubeovn-offloaded-sample2.txt"))
	if code != 0 || m["verdict"] != "offloaded" {
		t.Errorf("public offloaded dumps: exit %d %v", code, m["verdict"])
	}
	// Without MACs every flow counts: the recorded full dump is software.
	code, m, _ = runCmd(t, "dpctl", filepath.Join(offTD, "sw", "dpctl-tcp-all-1.txt"))
	if code != 0 || m["verdict"] != "software" || m["flows_per_sample"].([]any)[0].(float64) == 0 {
		t.Errorf("recorded full dump: exit %d %v", code, m)
	}
	// With the full dumps taken beside the offloaded ones (as the harness
	// saves them), the software flows between the guests are judged too, as
	// in the run's own verdict.
	code, m, stderr = runCmd(t, "dpctl", "--mac", "02:00:c6:12:d2:01,02:00:c6:12:d2:02", "--type", "offloaded",
		"--all", filepath.Join(offTD, "sw", "dpctl-tcp-all-1.txt")+","+filepath.Join(offTD, "sw", "dpctl-tcp-all-2.txt"),
		filepath.Join(offTD, "sw", "dpctl-tcp-offloaded-1.txt"), filepath.Join(offTD, "sw", "dpctl-tcp-offloaded-2.txt"))
	if code != 0 || m["verdict"] != "software" || !strings.Contains(m["reason"].(string), "software flows") || len(m["all_samples"].([]any)) != 2 {
		t.Errorf("offloaded + full dumps: exit %d %v %v %s", code, m["verdict"], m["reason"], stderr)
	}
	bad := filepath.Join(offTD, "sw", "ping-flood.txt")
	code, _, stderr = runCmd(t, "dpctl", bad)
	if code != 1 || !strings.Contains(stderr, bad) {
		t.Errorf("not a dump: exit %d %q", code, stderr)
	}
}

func TestTcpdump(t *testing.T) {
	capture := filepath.Join(offTD, "sw", "tcpdump-rep-tcp.txt")
	code, m, stderr := runCmd(t, "tcpdump", "--mac", "02:00:c6:12:d2:01,02:00:c6:12:d2:02", capture)
	if code != 0 || m["verdict"] != "software" || m["packet_lines"] != 300.0 || m["captured"] != 300.0 || m["received_by_filter"] != 553.0 {
		t.Errorf("recorded capture: exit %d %v %s", code, m, stderr)
	}
	if m["stderr_file"] != capture+".stderr" {
		t.Errorf("stderr file not read: %v", m["stderr_file"])
	}
	// A quiet representor capture alone proves nothing (issue 9 point 6), and
	// the output says what was missing; with the guest's control capture of
	// the same flow it is the offloaded shape, judged as the harness judges it.
	idle := filepath.Join(offTD, "sw", "tcpdump-rep-idle.txt")
	code, m, _ = runCmd(t, "tcpdump", "--window", "1s", idle)
	if code != 0 || m["verdict"] != "inconclusive" || m["captured"] != 0.0 || !strings.Contains(fmt.Sprint(m["notes"]), "no control capture") {
		t.Errorf("idle capture without control: exit %d %v", code, m)
	}
	code, m, stderr = runCmd(t, "tcpdump", "--mac", "02:00:c6:12:d2:01,02:00:c6:12:d2:02", "--window", "1s", "--control", capture, idle)
	if code != 0 || m["verdict"] != "offloaded" || m["control_file"] != capture || m["notes"] != nil {
		t.Errorf("idle capture with a busy control: exit %d %v %s", code, m, stderr)
	}
	code, _, stderr = runCmd(t, "tcpdump", "--control", filepath.Join(t.TempDir(), "none.txt"), idle)
	if code != 1 || !strings.Contains(stderr, "--control") {
		t.Errorf("missing control file: exit %d %q", code, stderr)
	}
	// A file with nothing tcpdump-like in it (and no .stderr beside it).
	dir := t.TempDir()
	junk := filepath.Join(dir, "junk.txt")
	if err := os.WriteFile(junk, []byte("hello\nworld\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr = runCmd(t, "tcpdump", junk)
	if code != 1 || !strings.Contains(stderr, junk) || !strings.Contains(stderr, "none of 2 lines") {
		t.Errorf("junk: exit %d %q", code, stderr)
	}
}

func TestUsage(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nope.json")
	for _, c := range []struct {
		args []string
		code int
		has  string
	}{
		{nil, 2, "no kind"},
		{[]string{"pcap", "x"}, 2, `unknown kind "pcap"`},
		{[]string{"tc"}, 2, "no file"},
		{[]string{"iperf3", "a", "b"}, 2, "one file"},
		{[]string{"dpctl", "--type", "weird", "x"}, 2, "--type"},
		{[]string{"tcpdump", "--first-packets", "-1", "x"}, 2, "--first-packets"},
		{[]string{"tc", "--bogus", "x"}, 2, "bogus"},
		{[]string{"tc", "--mac", "02:00:c6:12:d2:01,zz", "x"}, 2, `"zz" is not a MAC`},
		{[]string{"iperf3", missing}, 1, missing},
	} {
		code, _, stderr := runCmd(t, c.args...)
		if code != c.code || !strings.Contains(stderr, c.has) {
			t.Errorf("%v: exit %d (want %d), stderr %q lacks %q", c.args, code, c.code, stderr, c.has)
		}
	}
}

// A UDP sample's datagrams: the recorded -l 64 run (769480 sent, 732350
// arrived, e2e/iperf3/testdata/README.md); TCP has none.
func TestIperf3Packets(t *testing.T) {
	code, m, stderr := runCmd(t, "iperf3", filepath.Join(iperfTD, "v3.12-udp-b0-p1-l64.json"))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	p, _ := m["packets"].(map[string]any)
	if p == nil || p["sent"] != 769480.0 || p["arrived"] != 732350.0 || p["length_bytes"] != 64.0 {
		t.Errorf("packets %v", m["packets"])
	}
	_, m, _ = runCmd(t, "iperf3", filepath.Join(offTD, "sw", "iperf3-tcp.json"))
	if _, ok := m["packets"]; ok {
		t.Error("TCP output has packets")
	}
}

// Issue 19: offline re-analysis follows the pipeline as the run did and
// says what it looked at: the conntrack pipeline whose chain-1 stage
// misses in hardware reads software, naming both chains; the dpctl
// pipeline whose recirculated flows run in dp:ovs too.
func TestPipelineBasis(t *testing.T) {
	pipe := filepath.Join(offTD, "pipeline")
	macs := "fa:16:3e:4a:11:01,fa:16:3e:4a:11:02"
	code, m, stderr := runCmd(t, "tc", "--mac", macs, filepath.Join(pipe, "tc-ct-chain1-miss-1.txt"), filepath.Join(pipe, "tc-ct-chain1-miss-2.txt"))
	basis, _ := m["basis"].([]any)
	if code != 0 || m["verdict"] != "software" || len(basis) != 1 ||
		!strings.Contains(basis[0].(string), "direction fa:16:3e:4a:11:01 -> fa:16:3e:4a:11:02: software, over 2 samples: chain 0 pref 2 handle 0x1 -> chain 1 pref 3 handle 0x1") {
		t.Errorf("tc: exit %d %v %q", code, m, stderr)
	}
	code, m, stderr = runCmd(t, "dpctl", "--mac", macs, filepath.Join(pipe, "dpctl-ct-postct-sw-1.txt"), filepath.Join(pipe, "dpctl-ct-postct-sw-2.txt"))
	basis, _ = m["basis"].([]any)
	if code != 0 || m["verdict"] != "software" || len(basis) != 2 || !strings.Contains(basis[0].(string), "recirc_id(0) in_port(enp8s0f0_1) ufid:") || !strings.Contains(basis[0].(string), "-> recirc_id(0x442)") {
		t.Errorf("dpctl: exit %d %v %q", code, m, stderr)
	}
}
