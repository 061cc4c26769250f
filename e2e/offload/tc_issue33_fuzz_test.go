package offload

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// Issue 33 invariants, on listings written the way iproute2 prints them
// (the layout of testdata/issue33, whose write.py follows tc/tc_util.c).

// tcCounters are the true counts of one rule: what the kernel holds.
type tcCounters struct {
	hwBytes, hwPkts, swBytes, swPkts uint64
}

// sentLines prints c as iproute2 does: "Sent" with the total (64-bit
// packets, TCA_STATS_PKT64), then, when the hardware counters are not
// zero, "Sent software" and "Sent hardware". Before 6.15 (pre615) the
// hardware packets are the 32-bit TCA_STATS_BASIC_HW value and the
// software line is printed from the 32-bit values, only when the total's
// are not below the hardware's (print_tcstats_basic_hw).
func sentLines(c tcCounters, pre615 bool) string {
	tb, tp := c.hwBytes+c.swBytes, c.hwPkts+c.swPkts
	out := fmt.Sprintf("        Sent %d bytes %d pkt (dropped 0, overlimits 0 requeues 0)\n", tb, tp)
	hwp := c.hwPkts
	if pre615 {
		hwp = uint64(uint32(hwp))
	}
	if c.hwBytes == 0 && hwp == 0 {
		return out
	}
	switch {
	case !pre615:
		out += fmt.Sprintf("        Sent software %d bytes %d pkt\n", c.swBytes, c.swPkts)
	case uint64(uint32(tp)) >= hwp:
		out += fmt.Sprintf("        Sent software %d bytes %d pkt\n", c.swBytes, uint64(uint32(tp))-hwp)
	}
	return out + fmt.Sprintf("        Sent hardware %d bytes %d pkt\n", c.hwBytes, hwp)
}

// fuzzRule is a one-rule listing of guest A's traffic to guest B: on A's
// representor (block 0), or on a shared block; raw, when set, replaces the
// counter lines.
type fuzzRule struct {
	block     uint32
	inHWCount int
	installed uint64
	c         tcCounters
	pre615    bool
	raw       string
}

func (r fuzzRule) text() string {
	head := "filter protocol ip pref 2 flower chain 0"
	if r.block != 0 {
		head = fmt.Sprintf("filter block %d protocol ip pref 2 flower chain 0", r.block)
	}
	sent := r.raw
	if sent == "" {
		sent = sentLines(r.c, r.pre615)
	}
	return head + "\n" + head + " handle 0x1\n" +
		"  dst_mac " + pipeMACB + "\n  src_mac " + pipeMACA + "\n  eth_type ipv4\n" +
		fmt.Sprintf("  in_hw in_hw_count %d\n", r.inHWCount) +
		"        action order 1: mirred (Egress Redirect to device enp8s0f0_2) stolen\n" +
		fmt.Sprintf("        index 1 ref 1 bind 1 installed %d sec used 0 sec\n", r.installed) +
		"        Action statistics:\n" + sent +
		"        backlog 0b 0p requeues 0\n        used_hw_stats delayed\n"
}

// judgeFuzz judges two listings of the representor as the harness does.
func judgeFuzz(t *testing.T, first, last fuzzRule, span time.Duration, blocks map[uint32]TCBlock) (results.Verdict, string) {
	t.Helper()
	a, err := ParseTCText([]byte(first.text()))
	if err != nil {
		t.Fatalf("first sample: %v\n%s", err, first.text())
	}
	b, err := ParseTCText([]byte(last.text()))
	if err != nil {
		t.Fatalf("last sample: %v\n%s", err, last.text())
	}
	v, why, _ := JudgeTCNetwork([]TCObservation{{Device: "enp8s0f0_1", Samples: []TCDump{a, b}, Span: span, Blocks: blocks}}, pipePair, "")
	return v, why
}

// Invariant 1: hardware packets printed in 32 bits are never software.
//   - true counts whose hardware grew by fewer than 2^32 packets and whose
//     software did not grow, printed by either iproute2, read as exactly
//     that hardware growth: offloaded;
//   - whatever the printed packets, a pair whose 64-bit hardware bytes grew
//     and whose software bytes did not is never software.
func FuzzTCPacketCounterWrap(f *testing.F) {
	f.Add(uint64(4294000000), uint32(12000000), uint64(0), uint64(1450), true, uint64(1465799775), uint64(5760767071), uint64(11032704))
	f.Add(uint64(96000000), uint32(7200000), uint64(3), uint64(1500), false, uint64(0), uint64(0), uint64(0))
	f.Add(uint64(1<<32-1), uint32(1), uint64(1<<32+5), uint64(64), true, uint64(1<<32), uint64(7), uint64(1<<33))
	f.Fuzz(func(t *testing.T, hw1 uint64, grow uint32, sw uint64, size uint64, pre615 bool, p1, p2, h2 uint64) {
		size = size%9000 + 1
		hw1 %= 1 << 48
		sw %= 1 << 40
		if grow == 0 {
			grow = 1
		}
		hw2 := hw1 + uint64(grow)
		rule := func(hw uint64, installed uint64) fuzzRule {
			return fuzzRule{inHWCount: 1, installed: installed, pre615: pre615,
				c: tcCounters{hwBytes: hw * size, hwPkts: hw, swBytes: sw * size, swPkts: sw}}
		}
		v, why := judgeFuzz(t, rule(hw1, 600), rule(hw2, 610), 10*time.Second, nil)
		want := fmt.Sprintf("hardware packets +%d, software packets +0", grow)
		if v != results.VerdictOffloaded || !strings.Contains(why, want) {
			t.Fatalf("hardware +%d packets (from %d), software flat at %d, pre-6.15 %v: got %s %s", grow, hw1, sw, pre615, v, why)
		}
		// Any printed packets, 64-bit bytes grown in hardware only.
		hb := hw1 * size
		raw := func(total, hwPkts, hwBytes uint64) string {
			return fmt.Sprintf("        Sent %d bytes %d pkt (dropped 0, overlimits 0 requeues 0)\n        Sent software %d bytes %d pkt\n        Sent hardware %d bytes %d pkt\n",
				hwBytes+sw, total, sw, uint64(uint32(total-hwPkts)), hwBytes, hwPkts)
		}
		first := fuzzRule{inHWCount: 1, installed: 600, raw: raw(p1, p1%(1<<32), hb+1)}
		last := fuzzRule{inHWCount: 1, installed: 610, raw: raw(p2, h2, hb+1+uint64(grow)*size)}
		if v, why := judgeFuzz(t, first, last, 10*time.Second, nil); v == results.VerdictSoftware {
			t.Fatalf("hardware bytes grew, software bytes flat, judged software: %s\n%s%s", why, first.text(), last.text())
		}
	})
}

// Invariant 2: a rule replaced under its place between the samples
// (younger in the last than in the first) is judged on its own counters,
// whatever the old rule's were: in hardware and counting, offloaded with
// exactly its own packets; never "did not grow", never software.
func FuzzTCReplacedRule(f *testing.F) {
	f.Add(uint64(96000000), uint64(7200000), uint64(434), uint64(6), uint64(1450), true)
	f.Add(uint64(1), uint64(1<<33), uint64(5), uint64(4), uint64(64), false)
	f.Fuzz(func(t *testing.T, oldPkts, newPkts, n1, n2, size uint64, withSpan bool) {
		size = size%9000 + 1
		oldPkts, newPkts = oldPkts%(1<<48), newPkts%(1<<48)
		n1 %= 1 << 30
		if newPkts == 0 || n1 == 0 {
			return
		}
		n2 %= n1 // younger than its own earlier self
		span := time.Duration(0)
		if withSpan {
			span = time.Duration(n2+1) * time.Second // the new rule fits it
		}
		rule := func(p, installed uint64) fuzzRule {
			return fuzzRule{inHWCount: 1, installed: installed, c: tcCounters{hwBytes: p * size, hwPkts: p}}
		}
		v, why := judgeFuzz(t, rule(oldPkts, n1), rule(newPkts, n2), span, nil)
		if want := fmt.Sprintf("hardware packets +%d, software packets +0", newPkts); v != results.VerdictOffloaded || !strings.Contains(why, want) || !strings.Contains(why, "replaced") {
			t.Fatalf("old %d packets installed %d s ago, new %d installed %d s ago (span %s): got %s %s", oldPkts, n1, newPkts, n2, span, v, why)
		}
	})
}

// Invariant 5: software packets above SoftwareTolerance on an in-hardware
// rule, or in_hw_count below its block's known ports, are never offloaded,
// whatever the hardware growth beside them; within the tolerance and in
// every port's hardware, a rule that grew in hardware is offloaded.
func FuzzTCSoftwareTolerance(f *testing.F) {
	f.Add(uint64(9000000), uint64(3000000), uint8(1), uint8(2))
	f.Add(uint64(11999997), uint64(3), uint8(2), uint8(2))
	f.Add(uint64(1000), uint64(1), uint8(1), uint8(0))
	f.Add(uint64(0), uint64(5), uint8(1), uint8(0))
	f.Fuzz(func(t *testing.T, hw, sw uint64, count, ports uint8) {
		hw, sw = hw%(1<<40), sw%(1<<40)
		count, ports = count%5, ports%5
		if count == 0 {
			count = 1
		}
		var blocks map[uint32]TCBlock
		block := uint32(0)
		if ports > 0 {
			block = 9
			blocks = map[uint32]TCBlock{9: {Ports: strings.Fields("p0 p1 p2 p3")[:ports], From: "fuzz"}}
		}
		rule := func(h, s, installed uint64) fuzzRule {
			return fuzzRule{block: block, inHWCount: int(count), installed: installed,
				c: tcCounters{hwBytes: h * 1450, hwPkts: h, swBytes: s * 1450, swPkts: s}}
		}
		v, why := judgeFuzz(t, rule(1000, 0, 600), rule(1000+hw, sw, 610), 10*time.Second, blocks)
		over := float64(sw) > SoftwareTolerance*(float64(hw)+float64(sw))
		short := ports > 0 && int(count) < int(ports)
		switch {
		case (over || short) && v == results.VerdictOffloaded:
			t.Fatalf("hardware +%d, software +%d, in_hw_count %d of %d ports: offloaded: %s", hw, sw, count, ports, why)
		case over && !strings.Contains(why, "tolerance of 0.1 %"):
			t.Fatalf("the reason does not state the tolerance: %s", why)
		case !over && !short && hw > 0 && v != results.VerdictOffloaded:
			t.Fatalf("hardware +%d, software +%d within the tolerance, in_hw_count %d of %d ports: %s %s", hw, sw, count, ports, v, why)
		}
	})
}
