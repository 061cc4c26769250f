package offload

import (
	"testing"
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// Issue 19, points 4 and 5: the capture's and the counters' own accounting
// is evidence. The comment on each test says what the judge said before.

// A representor capture without tcpdump's summary was killed or cut off:
// five packet lines and silence prove nothing, however busy the control.
// The input is the recorded TCP capture (testdata/sw/tcpdump-rep-tcp.txt)
// cut to its first five lines, its stderr (the summary) lost. Old code:
// offloaded ("5 packets of the guests' flow ... reached the representor").
func TestCaptureWithoutSummaryProvesNothing(t *testing.T) {
	tcp := recordedCapture(t, "tcpdump-rep-tcp.txt")
	cut := Capture{Packets: tcp.Packets[:5], Captured: -1, ReceivedFilter: -1, DroppedKernel: -1}
	busy := ControlCapture{Guest: "g", Iface: "eth1", Capture: &tcp}
	v, why, _ := JudgeCaptureWithControl(cut, busy, []string{recMAC1, recMAC2}, 10, 2*time.Second)
	expectVerdict(t, "no summary", v, why, results.VerdictInconclusive, "no summary", "proves nothing")
}

// Packets received by the capture's filter but not printed crossed the
// representor all the same: the recorded capture's first five lines with a
// summary that says 4000 passed the filter (tcpdump stopped with the rest
// still in its ring). Old code: offloaded (5 lines counted).
func TestCaptureReceivedByFilterCounts(t *testing.T) {
	tcp := recordedCapture(t, "tcpdump-rep-tcp.txt")
	ring := Capture{Packets: tcp.Packets[:5], Captured: 5, ReceivedFilter: 4000, DroppedKernel: 0}
	busy := ControlCapture{Guest: "g", Iface: "eth1", Capture: &tcp}
	v, why, j := JudgeCaptureWithControl(ring, busy, []string{recMAC1, recMAC2}, 10, 2*time.Second)
	expectVerdict(t, "received by filter", v, why, results.VerdictSoftware, "4000 packets of the guests' flow", "5 printed", "4000 received by filter")
	if j.ReceivedByFilter != 4000 || j.Captured != 5 || j.DroppedByKernel != 0 {
		t.Errorf("judgement: %+v", j)
	}
}

// The counters witness checks its own invariant: the representor's link
// counters (the VF vport's, flipped) move like the guest's interface. A
// representor whose port moved three times the guest's, or whose rx
// followed the guest's rx instead of its tx, is not the guest's (or the
// reading is wrong). Old code: offloaded for both.
func TestCountersRepresentorMustTrackTheGuest(t *testing.T) {
	at := func(rx, tx uint64) LinkStats { return LinkStats{Name: "enp8s0f0_1", RxPackets: rx, TxPackets: tx} }
	flat0, flat1 := at(3, 2), at(5, 4)
	rep := func(rx, tx uint64) (RepCounters, RepCounters) {
		return RepCounters{Link: at(100, 100), CPUHit: &flat0}, RepCounters{Link: at(100+rx, 100+tx), CPUHit: &flat1}
	}
	guest0, guest1 := LinkStats{Name: "eth1", RxPackets: 7, TxPackets: 9}, LinkStats{Name: "eth1", RxPackets: 20007, TxPackets: 20009}
	in := CountersInput{Representor: "enp8s0f0_1", GuestIface: "eth1", GuestName: "guest-a"}
	r0, r1 := rep(60000, 60000)
	v, why := JudgeCounters(r0, r1, guest0, guest1, in)
	expectVerdict(t, "three times the guest", v, why, results.VerdictInconclusive,
		"do not track eth1 of guest-a", "representor rx vs guest tx: +60000 vs +20000", "representor tx vs guest rx: +60000 vs +20000")
	r0, r1 = rep(40000, 0)
	guestIn := LinkStats{Name: "eth1", RxPackets: 40007, TxPackets: 9}
	v, why = JudgeCounters(r0, r1, guest0, guestIn, in)
	expectVerdict(t, "rx follows rx", v, why, results.VerdictInconclusive, "representor rx vs guest tx: +40000 vs +0")
	// Within the tolerance: offloaded, with the numbers.
	r0, r1 = rep(20400, 19800)
	v, why = JudgeCounters(r0, r1, guest0, guest1, in)
	expectVerdict(t, "tracking", v, why, results.VerdictOffloaded, "representor rx/tx +20400/+19800, guest tx/rx +20000/+20000")
}
