package offload

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/remote"
	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// Issue 33: tc verdicts that survive what real hypervisors print. The
// inputs are testdata/issue33 (written by its write.py in iproute2's
// layouts) and hw/tc-iproute2-e7638a02-* (iproute2's own listings);
// testdata/README.md says where each comes from. The comment on each test
// says what the judge said before.

func issue33(t *testing.T, name string) TCDump {
	t.Helper()
	return mustTC(t, "issue33/"+name)
}

// span33 is the time between the two samples of testdata/issue33, as the
// harness measures it (first dump's start to the last dump's end).
const span33 = 10300 * time.Millisecond

// judge33 judges one device's two samples as the harness does (measured
// span, the run's network type).
func judge33(dev, network string, first, last TCDump) (results.Verdict, string) {
	v, why, _ := JudgeTCNetwork([]TCObservation{{Device: dev, Samples: []TCDump{first, last}, Span: span33, Window: 2 * span33}}, pipePair, network)
	return v, why
}

// Class 1: iproute2 before 6.15 prints the hardware packet count as the
// kernel's 32-bit TCA_STATS_BASIC_HW value and the total as the 64-bit
// TCA_STATS_PKT64 (tc/tc_util.c; iproute2 commit e7638a02, first in
// v6.15.0, shows both listings). iproute2's own listing: the hardware
// packets are the total less the software ones, 5760767071, not the
// printed 1465799775 (= 5760767071 - 2^32). Old code: SWPackets()
// 4294967296, HWPackets() 1465799775.
func TestTCPacketCounterPrintedIn32Bits(t *testing.T) {
	for _, name := range []string{"hw/tc-iproute2-e7638a02-before.txt", "hw/tc-iproute2-e7638a02-after.txt"} {
		f := mustTC(t, name).Filters[0]
		if f.HWPackets() != 5760767071 || f.SWPackets() != 0 {
			t.Errorf("%s: hardware packets %d, software packets %d; want 5760767071 and 0", name, f.HWPackets(), f.SWPackets())
		}
	}
}

// Class 1, judged: a long-lived encap rule at 1.2 Mpps crosses 2^32
// packets between the samples. Printed hardware packets 4294000000 then
// 11032704; the total and every byte count grow, the software bytes stay 0.
// Old code: inconclusive ("in hardware, but software packets grew more than
// hardware packets: ... hardware packets +0, software packets +4294967296").
func TestTCPacketCounterWrapIsNotSoftware(t *testing.T) {
	for _, c := range []struct{ name, first, last string }{
		{"text", "tc-pkt32-wrap-1.txt", "tc-pkt32-wrap-2.txt"},
		{"JSON", "tc-pkt32-wrap-1.json", "tc-pkt32-wrap-2.json"},
		{"iproute2 6.15 after an older one", "tc-pkt32-wrap-1.txt", "tc-pkt64-2.txt"},
	} {
		v, why := judge33("enp8s0f0_1", results.NetworkVXLAN, issue33(t, c.first), issue33(t, c.last))
		expectVerdict(t, c.name, v, why, results.VerdictOffloaded, "hardware packets +12000000, software packets +0")
	}
	// The wrap is named for what it is.
	_, why := judge33("enp8s0f0_1", results.NetworkVXLAN, issue33(t, "tc-pkt32-wrap-1.txt"), issue33(t, "tc-pkt32-wrap-2.txt"))
	if !strings.Contains(why, "32 bits") {
		t.Errorf("the reason does not name the 32-bit printing: %s", why)
	}
}

// Class 2: OVS modified the flow between the samples (delete, add; the new
// rule got the old one's handle) and its counters restarted: installed 6 s
// ago, 7200000 packets, all in hardware, where the old rule had 96000000.
// Old code: inconclusive ("the hardware packet counters did not grow ...
// hardware packets +0").
func TestTCReplacedRuleIsJudgedOnItsOwnCounters(t *testing.T) {
	old := issue33(t, "tc-replaced-1.txt")
	for _, name := range []string{"tc-replaced-2.txt", "tc-replaced-2.json"} {
		v, why := judge33("enp8s0f0_1", results.NetworkVXLAN, old, issue33(t, name))
		expectVerdict(t, name, v, why, results.VerdictOffloaded, "hardware packets +7200000", "replaced")
	}
	// Without a measured span (tools/evidence without --span) the rule is
	// still younger than its own earlier self: a new rule.
	v, why := JudgeTC([]TCObservation{{Device: "enp8s0f0_1", Samples: []TCDump{old, issue33(t, "tc-replaced-2.txt")}}}, pipePair)
	expectVerdict(t, "no span", v, why, results.VerdictOffloaded, "hardware packets +7200000")
}

// Class 5: half a bond in hardware. The VLAN rule of B -> A on bond0's
// shared block is in_hw with in_hw_count 1 while the bond has two ports;
// a quarter of its packets (3000000 of 12000000) grew on the exact software
// counters. Old code: offloaded ("every stage in hardware ... hardware
// packets +9000000, software packets +3000000").
func TestTCHalfABondIsNotOffloaded(t *testing.T) {
	v, why := judge33("bond0", results.NetworkVLAN, issue33(t, "tc-bond-half-1.txt"), issue33(t, "tc-bond-half-2.txt"))
	if v == results.VerdictOffloaded {
		t.Fatalf("a quarter of the packets in software judged offloaded: %s", why)
	}
	if !strings.Contains(why, "0.1 %") || !strings.Contains(why, "25.0 %") {
		t.Errorf("the reason does not state the share and the tolerance: %s", why)
	}
	// A healthy bond: in_hw_count 2, 3 software packets in 12000000.
	v, why = judge33("bond0", results.NetworkVLAN, issue33(t, "tc-bond-whole-1.txt"), issue33(t, "tc-bond-whole-2.txt"))
	expectVerdict(t, "within the tolerance", v, why, results.VerdictOffloaded, "hardware packets +11999997, software packets +3")
}

// Class 7: the second sample is another hypervisor's: the same
// chain/pref/handle holds that host's encap rule (its own VTEP as
// tunnel_key src_ip, 776 s older than the span allows). Old code:
// offloaded ("hardware packets +7000000").
func TestTCSamplesOfAnotherHypervisorAreRefused(t *testing.T) {
	first, last := issue33(t, "tc-otherhost-1.txt"), issue33(t, "tc-otherhost-2.txt")
	v, why := judge33("enp8s0f0_1", results.NetworkVXLAN, first, last)
	expectVerdict(t, "harness", v, why, results.VerdictInconclusive, "not samples of the same rules", "198.18.1.11", "198.18.1.12")
	// Without a span (tools/evidence) the tunnel endpoints alone refuse it.
	v, why = JudgeTC([]TCObservation{{Device: "(file)", Samples: []TCDump{first, last}}}, pipePair)
	expectVerdict(t, "no span", v, why, results.VerdictInconclusive, "not samples of the same rules", "local tunnel endpoint")
}

// Class 5, the count: OVS binds a LAG and its members to one block named
// after the LAG's ifindex, and ip -d link says bond0 (ifindex 9) has two
// members; a rule of block 9 in_hw_count 1 is missing from one of them,
// even when no software packet grew in the span (the flow hashed to the
// port that holds it). Without the ports, only another rule of the block
// in more devices' hardware tells.
func TestTCInHWCountBelowTheBlocksPorts(t *testing.T) {
	blocks, err := ParseBlocks(readTestdata(t, "issue33/ip-link-vflag.json"))
	if err != nil {
		t.Fatal(err)
	}
	if b := blocks[9]; len(blocks) != 1 || strings.Join(b.Ports, ",") != "enp8s0f0np0,enp8s0f1np1" || !strings.Contains(b.From, "bond bond0") {
		t.Fatalf("blocks: %+v", blocks)
	}
	first, last := issue33(t, "tc-bond-count-1.txt"), issue33(t, "tc-bond-count-2.txt")
	judge := func(blocks map[uint32]TCBlock, samples ...TCDump) (results.Verdict, string) {
		v, why, _ := JudgeTCNetwork([]TCObservation{{Device: "bond0", Samples: samples, Span: span33, Blocks: blocks}}, pipePair, results.NetworkVLAN)
		return v, why
	}
	v, why := judge(blocks, first, last)
	expectVerdict(t, "ports known", v, why, results.VerdictInconclusive, "in_hw_count 1, but block 9 has 2 ports", "enp8s0f0np0, enp8s0f1np1")
	v, why = judge(nil, first, last)
	expectVerdict(t, "ports unknown", v, why, results.VerdictOffloaded, "the ports of block 9 are not known")
	v, why = judge(blocks, issue33(t, "tc-bond-whole-1.txt"), issue33(t, "tc-bond-whole-2.txt"))
	expectVerdict(t, "every port", v, why, results.VerdictOffloaded)
	// Another rule of the block (pref 3) is in two devices' hardware.
	other := strings.NewReplacer("pref 2", "pref 3", "in_hw_count 1", "in_hw_count 2").Replace(string(readTestdata(t, "issue33/tc-bond-count-2.txt")))
	both := func(name string) TCDump { return tcText(t, string(readTestdata(t, "issue33/"+name))+other) }
	v, why = judge(nil, both("tc-bond-count-1.txt"), both("tc-bond-count-2.txt"))
	expectVerdict(t, "bound by another rule", v, why, results.VerdictInconclusive, "in_hw_count 1, but block 9 has 2 ports (another rule of the block")

	if _, err := ParseBlocks([]byte("Device \"x\" does not exist.")); err == nil {
		t.Error("not JSON: no error")
	}
}

// The harness learns the ports only when a rule is on a shared block, once
// per hypervisor, and keeps the listing as evidence.
func TestCheckTCLearnsTheBlocksPorts(t *testing.T) {
	qdisc := ok([]byte("qdisc ingress ffff: parent ffff:fff1 ingress_block 9 ----------------\n"))
	hv := &fakeRunner{results: map[string][]remote.Result{
		QdiscCommand("bond0"):  {qdisc},
		TCCommand("bond0"):     {ok([]byte("not JSON"))},
		TCTextCommand("bond0"): {ok(readTestdata(t, "issue33/tc-bond-count-1.txt")), ok(readTestdata(t, "issue33/tc-bond-count-2.txt"))},
		LinkDetailsCommand:     {ok(readTestdata(t, "issue33/ip-link-vflag.json"))},
	}}
	c, err := CheckTC(context.Background(), hv, TCInput{Devices: []string{"bond0"}, MACs: pipePair, Samples: 2, Network: results.NetworkVLAN})
	if err != nil {
		t.Fatal(err)
	}
	expectVerdict(t, "harness", c.Verdict, c.Reason, results.VerdictInconclusive, "in_hw_count 1, but block 9 has 2 ports")
	if n := slices.Index(hv.calls, LinkDetailsCommand); n < 0 || slices.Index(hv.calls[n+1:], LinkDetailsCommand) >= 0 {
		t.Errorf("%s run %v", LinkDetailsCommand, hv.calls)
	}
	if !slices.ContainsFunc(c.Evidence, func(e EvidenceFile) bool { return e.Name == "ip-link-details.json" }) {
		t.Error("no ip-link-details.json evidence")
	}
	// No rule on a block: the command is never run.
	hv = &fakeRunner{results: map[string][]remote.Result{
		QdiscCommand("enp8s0f0_1"): {qdisc},
		TCCommand("enp8s0f0_1"):    {ok(readTestdata(t, "issue33/tc-replaced-1.txt"))},
	}}
	if _, err := CheckTC(context.Background(), hv, TCInput{Devices: []string{"enp8s0f0_1"}, MACs: pipePair, Samples: 2}); err != nil || slices.Contains(hv.calls, LinkDetailsCommand) {
		t.Errorf("no block: err %v, calls %v", err, hv.calls)
	}
}
