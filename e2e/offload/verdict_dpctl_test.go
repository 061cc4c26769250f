package offload

import (
	"strings"
	"testing"
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// Verdict rules of the dpctl check; inputs from testdata/hw (derivations in
// testdata/README.md).

// typedDump keeps what `dpctl/dump-flows -m type=offloaded` prints of a full
// -m dump: the flows OVS marks offloaded:yes (lib/dpctl.c,
// flow_passes_type_filter: offloaded and dp layer not "ovs").
func typedDump(flows []DpctlFlow) []DpctlFlow {
	var out []DpctlFlow
	for _, f := range flows {
		if f.Offloaded == "yes" {
			out = append(out, f)
		}
	}
	return out
}

type dpctlCase struct {
	name   string
	s      DpctlSamples
	macs   []string
	want   results.Verdict
	reason []string
}

func runDpctlCases(t *testing.T, cases []dpctlCase) {
	t.Helper()
	for _, c := range cases {
		v, why := JudgeDpctl(c.s, c.macs)
		expectVerdict(t, c.name, v, why, c.want, c.reason...)
	}
}

var kubePair = []string{kubeMAC1, kubeMAC2}

// dp:tc without offloaded:yes is a TC software rule; one direction in
// hardware and the other in TC software is mixed, not offloaded.
func TestJudgeDpctlTCSoftwareDirectionIsMixed(t *testing.T) {
	m1, m2 := mustDpctl(t, "hw/dpctl-kubeovn-mixed-tc-sw.txt"), mustDpctl(t, "hw/dpctl-kubeovn-mixed-tc-sw-sample2.txt")
	for _, c := range []struct {
		name string
		s    DpctlSamples
	}{
		{"typed offloaded dump plus full dump", DpctlSamples{Offloaded: [][]DpctlFlow{typedDump(m1), typedDump(m2)}, All: [][]DpctlFlow{m1, m2}, OffloadedIsTyped: true}},
		{"full dumps judged as the offloaded samples", DpctlSamples{Offloaded: [][]DpctlFlow{m1, m2}}},
	} {
		v, why := JudgeDpctl(c.s, kubePair)
		if v != results.VerdictInconclusive || !strings.HasPrefix(why, "mixed:") ||
			!strings.Contains(why, "eth(src=00:00:00:e7:16:ce,dst=00:00:00:c5:6d:4e)") || !strings.Contains(why, "TC software") {
			t.Errorf("%s: got %s %q, want inconclusive starting \"mixed:\" naming 00:00:00:e7:16:ce -> 00:00:00:c5:6d:4e in TC software", c.name, v, why)
		}
	}
	if got := flowHardware(m1[1], true); got != "tc-software" {
		t.Errorf("flowHardware(dp:tc without offloaded) = %q, want tc-software", got)
	}
}

// An offloaded verdict is OVS's own claim, and says so.
func TestJudgeDpctlOffloadedReasonIsOVSClaim(t *testing.T) {
	k1, k2 := mustDpctl(t, "hw/dpctl-kubeovn-offloaded.txt"), mustDpctl(t, "hw/dpctl-kubeovn-offloaded-sample2.txt")
	runDpctlCases(t, []dpctlCase{
		{"offloaded:yes flows grow", DpctlSamples{Offloaded: [][]DpctlFlow{k1, k2}}, kubePair, results.VerdictOffloaded,
			[]string{"OVS's own claim (offloaded:yes)", "tc's in_hw is the ground truth", "packets +6096875"}},
	})
}

// One sample proves nothing unless the flow's used: is inside the window;
// identical samples never prove anything.
func TestJudgeDpctlOneSampleNeedsRecentUse(t *testing.T) {
	k1 := mustDpctl(t, "hw/dpctl-kubeovn-offloaded.txt")
	stale := mustDpctl(t, "hw/dpctl-kubeovn-offloaded-stale.txt")
	never := mustDpctlString(t, strings.ReplaceAll(string(readTestdata(t, "hw/dpctl-kubeovn-offloaded.txt")), "used:0.260s", "used:never"))
	w := func(d time.Duration, s ...[]DpctlFlow) DpctlSamples { return DpctlSamples{Offloaded: s, Window: d} }
	runDpctlCases(t, []dpctlCase{
		{"one sample, no window", w(0, k1), kubePair, results.VerdictInconclusive, []string{"one sample"}},
		{"one sample, used 0.260s, window 4s", w(4*time.Second, k1), kubePair, results.VerdictOffloaded, []string{"used 0.260s ago", "window 4s"}},
		{"one sample, used 0.260s, window 200ms", w(200*time.Millisecond, k1), kubePair, results.VerdictInconclusive, []string{"one sample"}},
		{"one sample, used 41.380s, window 4s", w(4*time.Second, stale), kubePair, results.VerdictInconclusive, []string{"one sample"}},
		{"one sample, used never, window 4s", w(4*time.Second, never), kubePair, results.VerdictInconclusive, []string{"one sample"}},
		{"two stale identical samples", w(time.Hour, stale, stale), kubePair, results.VerdictInconclusive, []string{"did not grow"}},
		{"two fresh identical samples", w(time.Hour, k1, k1), kubePair, results.VerdictInconclusive, []string{"did not grow"}},
	})
}

// A guest's multicast flow is exception traffic: listed, not judged.
func TestJudgeDpctlMulticastIsExceptionTraffic(t *testing.T) {
	k1, k2 := mustDpctl(t, "hw/dpctl-kubeovn-offloaded.txt"), mustDpctl(t, "hw/dpctl-kubeovn-offloaded-sample2.txt")
	m1, m2 := mustDpctl(t, "hw/dpctl-kubeovn-mdns.txt"), mustDpctl(t, "hw/dpctl-kubeovn-mdns-sample2.txt")
	s := DpctlSamples{Offloaded: [][]DpctlFlow{k1, k2}, All: [][]DpctlFlow{m1, m2}, OffloadedIsTyped: true}
	runDpctlCases(t, []dpctlCase{
		{"mDNS in software next to the offloaded pair", s, kubePair, results.VerdictOffloaded,
			[]string{"packets +6096875", "exception traffic (multicast/broadcast), not judged: ", "dst=01:00:5e:00:00:fb"}},
		{"mDNS in software, any MAC", s, nil, results.VerdictOffloaded,
			[]string{"exception traffic (multicast/broadcast), not judged: "}},
	})
}

// A baseline run whose guest flows sit in TC software (dp:tc, no
// offloaded:yes) is the software path, not "traffic not flowing".
func TestJudgeDpctlBaselineTCSoftwareFlows(t *testing.T) {
	off1, off2 := mustDpctl(t, "sw/dpctl-tcp-offloaded-1.txt"), mustDpctl(t, "sw/dpctl-tcp-offloaded-2.txt")
	t1, t2 := mustDpctl(t, "hw/dpctl-kubeovn-tc-sw.txt"), mustDpctl(t, "hw/dpctl-kubeovn-tc-sw-sample2.txt")
	runDpctlCases(t, []dpctlCase{
		{"empty offloaded dump, dp:tc flows in the full dump", DpctlSamples{Offloaded: [][]DpctlFlow{off1, off2}, All: [][]DpctlFlow{t1, t2}, OffloadedIsTyped: true}, kubePair, results.VerdictSoftware,
			[]string{"2 software flows", "packets:1009871 dp:tc", "packets:88415202 dp:tc"}},
	})
}

// Growth is judged on packets, never bytes.
func TestJudgeDpctlBytesAreNotGrowth(t *testing.T) {
	// Derived from sample 2: bytes advanced, packets left at sample 1's.
	s := strings.NewReplacer("packets:1009871,", "packets:941539,", "packets:88415202,", "packets:82386659,").Replace(string(readTestdata(t, "hw/dpctl-kubeovn-offloaded-sample2.txt")))
	runDpctlCases(t, []dpctlCase{
		{"bytes grow, packets flat", DpctlSamples{Offloaded: [][]DpctlFlow{mustDpctl(t, "hw/dpctl-kubeovn-offloaded.txt"), mustDpctlString(t, s)}}, kubePair, results.VerdictInconclusive, []string{"did not grow"}},
	})
}

// The same dump twice is never growth, even with duplicate ufids.
func TestJudgeDpctlIdenticalSamplesWithDuplicateFlows(t *testing.T) {
	d := mustDpctlString(t, string(readTestdata(t, "hw/dpctl-kubeovn-offloaded-sample2.txt"))+string(readTestdata(t, "hw/dpctl-kubeovn-offloaded.txt")))
	runDpctlCases(t, []dpctlCase{
		{"duplicate ufids, same dump twice", DpctlSamples{Offloaded: [][]DpctlFlow{d, d}}, kubePair, results.VerdictInconclusive, []string{"did not grow"}},
	})
}
