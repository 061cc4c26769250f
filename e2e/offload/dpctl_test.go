package offload

import (
	"strings"
	"testing"

	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// Samples: testdata/hw/dpctl-kubeovn-offloaded.txt is [kubeovn-dpctl] (see
// testdata/README.md), -sample2 derives from it with the counters advanced;
// testdata/sw/dpctl-* were recorded here (userspace OVS 3.1, netdev
// datapath) by testdata/record-software-path.sh.

const (
	kubeMAC1 = "00:00:00:c5:6d:4e"
	kubeMAC2 = "00:00:00:e7:16:ce"
)

func mustDpctl(t *testing.T, name string) []DpctlFlow {
	t.Helper()
	f, err := ParseDpctl(readTestdata(t, name))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return f
}

func TestParseDpctlOffloaded(t *testing.T) {
	flows := mustDpctl(t, "hw/dpctl-kubeovn-offloaded.txt")
	if len(flows) != 2 {
		t.Fatalf("got %d flows, want 2", len(flows))
	}
	f := flows[0]
	if f.UFID != "91cc45de-e7e9-4935-8f82-1890430b0f66" || f.InPort != "5b45c61b307e_h" || f.RecircID != "0" {
		t.Errorf("ids: %+v", f)
	}
	if f.EthSrc != kubeMAC1 || f.EthDst != kubeMAC2 || f.EthType != "0x0800" || !f.isIP() {
		t.Errorf("eth: %+v", f)
	}
	if f.Packets != 941539 || f.Bytes != 62142230 || f.Used != "0.260s" || f.Offloaded != "yes" || f.DP != "tc" || f.Actions != "54235e5753b8_h" {
		t.Errorf("stats: %+v", f)
	}
	if v, ok := f.Field("ct_state"); !ok || v != "0/0x23" {
		t.Errorf("ct_state: %q %v", v, ok)
	}
	if v, _ := f.Field("packet_type"); v != "ns=0/0,id=0/0" {
		t.Errorf("packet_type with inner commas: %q", v)
	}
	if flows[1].Bytes != 115944854173 {
		t.Errorf("64-bit bytes: %d", flows[1].Bytes)
	}
}

func TestParseDpctlRecorded(t *testing.T) {
	flows := mustDpctl(t, "sw/dpctl-tcp-all-1.txt")
	if len(flows) == 0 {
		t.Fatal("no flows in the recorded -m dump")
	}
	var guest []DpctlFlow
	for _, f := range flows {
		if f.DP != "ovs" || f.Offloaded != "" || f.UFID == "" {
			t.Errorf("software flow fields: %+v", f)
		}
		if f.DPExtraInfo == "" || strings.Contains(f.Actions, "dp-extra-info") {
			t.Errorf("dp-extra-info not split from actions: actions %q extra %q", f.Actions, f.DPExtraInfo)
		}
		if f.EthSrc == recMAC1 && f.EthDst == recMAC2 && f.isIP() {
			guest = append(guest, f)
		}
	}
	if len(guest) != 1 || guest[0].Packets == 0 || guest[0].InPort != "offrec-rep1" || guest[0].Actions != "offrec-rep2" {
		t.Errorf("guest flow rep1->rep2: %+v", guest)
	}

	plain := mustDpctl(t, "sw/dpctl-tcp-plain.txt")
	if len(plain) == 0 || plain[0].UFID != "" || plain[0].DP != "" || plain[0].InPort == "" {
		t.Errorf("plain dump: %+v", plain)
	}
	for _, name := range []string{"sw/dpctl-tcp-offloaded-1.txt", "sw/dpctl-tcp-offloaded-2.txt"} {
		if f := mustDpctl(t, name); len(f) != 0 {
			t.Errorf("%s: recorded empty dump gave %d flows", name, len(f))
		}
	}
	// ARP flow that never matched: used:never, no IP
	for _, f := range mustDpctl(t, "sw/dpctl-after-ping-m.txt") {
		if f.EthType == "0x0806" && f.Used != "never" && f.Packets == 0 {
			t.Errorf("arp flow used: %+v", f)
		}
	}
}

func TestParseDpctlErrors(t *testing.T) {
	for name, in := range map[string]string{
		"no actions":      "recirc_id(0),in_port(2), packets:1, bytes:2, used:never\n",
		"no packets":      "recirc_id(0),in_port(2), bytes:2, used:never, actions:drop\n",
		"bad packets":     "recirc_id(0),in_port(2), packets:x, bytes:2, used:never, actions:drop\n",
		"unbalanced":      "recirc_id(0,in_port(2), packets:1, bytes:2, used:never, actions:drop\n",
		"extra paren":     "recirc_id(0)),in_port(2), packets:1, bytes:2, used:never, actions:drop\n",
		"not a key(val)":  "recirc_id, packets:1, bytes:2, used:never, actions:drop\n",
		"ovs-appctl text": "ovs-appctl: cannot connect to \"/var/run/openvswitch/ovs-vswitchd.1.ctl\" (No such file or directory)\n",
	} {
		if _, err := ParseDpctl([]byte(in)); err == nil {
			t.Errorf("%s: no error for %q", name, in)
		}
	}
}

func TestJudgeDpctl(t *testing.T) {
	k1, k2 := mustDpctl(t, "hw/dpctl-kubeovn-offloaded.txt"), mustDpctl(t, "hw/dpctl-kubeovn-offloaded-sample2.txt")
	off1, off2 := mustDpctl(t, "sw/dpctl-tcp-offloaded-1.txt"), mustDpctl(t, "sw/dpctl-tcp-offloaded-2.txt")
	all1, all2 := mustDpctl(t, "sw/dpctl-tcp-all-1.txt"), mustDpctl(t, "sw/dpctl-tcp-all-2.txt")
	// Derived: the kube-ovn dump as plain `dump-flows type=offloaded` prints it (no -m fields).
	plainK := mustDpctlString(t, strings.ReplaceAll(string(readTestdata(t, "hw/dpctl-kubeovn-offloaded.txt")), " offloaded:yes, dp:tc,", ""))
	plainK2 := mustDpctlString(t, strings.ReplaceAll(string(readTestdata(t, "hw/dpctl-kubeovn-offloaded-sample2.txt")), " offloaded:yes, dp:tc,", ""))
	partial := mustDpctlString(t, strings.ReplaceAll(string(readTestdata(t, "hw/dpctl-kubeovn-offloaded.txt")), "offloaded:yes", "offloaded:partial"))
	kube := []string{kubeMAC1, kubeMAC2}
	rec := []string{recMAC1, recMAC2}
	cases := []struct {
		name   string
		s      DpctlSamples
		macs   []string
		want   results.Verdict
		reason string
	}{
		{"offloaded, counters grow", DpctlSamples{Offloaded: [][]DpctlFlow{k1, k2}}, kube, results.VerdictOffloaded, "packets +6096875"},
		// One sample proves nothing without a window for used: (see verdict_dpctl_test.go).
		{"offloaded, one sample", DpctlSamples{Offloaded: [][]DpctlFlow{k1}}, kube, results.VerdictInconclusive, "one sample proves nothing"},
		{"all flows when no MAC given", DpctlSamples{Offloaded: [][]DpctlFlow{k1, k2}}, nil, results.VerdictOffloaded, "between any MAC"},
		{"offloaded but static", DpctlSamples{Offloaded: [][]DpctlFlow{k1, k1}}, kube, results.VerdictInconclusive, "did not grow"},
		{"typed plain dump counts as hardware", DpctlSamples{Offloaded: [][]DpctlFlow{plainK, plainK2}, OffloadedIsTyped: true}, kube, results.VerdictOffloaded, "+6096875"},
		{"untyped plain dump is not hardware", DpctlSamples{Offloaded: [][]DpctlFlow{plainK, plainK2}}, kube, results.VerdictSoftware, "no offloaded"},
		{"partial offload", DpctlSamples{Offloaded: [][]DpctlFlow{partial}}, kube, results.VerdictInconclusive, "partially offloaded"},
		{"other guests' flows", DpctlSamples{Offloaded: [][]DpctlFlow{k1, k2}}, rec, results.VerdictSoftware, "no offloaded IP flows between 02:00:c6:12:d2:01, 02:00:c6:12:d2:02"},
		{"recorded software path", DpctlSamples{Offloaded: [][]DpctlFlow{off1, off2}, All: [][]DpctlFlow{all1, all2}, OffloadedIsTyped: true}, rec, results.VerdictSoftware, "2 software flows"},
		{"recorded, empty offloaded dump only", DpctlSamples{Offloaded: [][]DpctlFlow{off1, off2}, OffloadedIsTyped: true}, rec, results.VerdictSoftware, "(0 flows in the offloaded dump)"},
		{"hardware plus growing software flows", DpctlSamples{Offloaded: [][]DpctlFlow{k1, k2}, All: [][]DpctlFlow{all1, all2}}, append(kube, rec...), results.VerdictInconclusive, "mixed: one direction in hardware, the other not"},
		{"no sample", DpctlSamples{}, kube, results.VerdictInconclusive, "no dpctl sample"},
		// The recorded full dumps hold no flow of the kube-ovn MACs: with the
		// full dumps sampled, an empty offloaded dump is no proof of software.
		{"no guest flow in any dump", DpctlSamples{Offloaded: [][]DpctlFlow{off1, off2}, All: [][]DpctlFlow{all1, all2}, OffloadedIsTyped: true}, kube, results.VerdictInconclusive, "was not flowing"},
	}
	for _, c := range cases {
		v, why := JudgeDpctl(c.s, c.macs)
		if v != c.want || !strings.Contains(why, c.reason) {
			t.Errorf("%s: got %s %q, want %s containing %q", c.name, v, why, c.want, c.reason)
		}
	}
}

func mustDpctlString(t *testing.T, s string) []DpctlFlow {
	t.Helper()
	f, err := ParseDpctl([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return f
}
