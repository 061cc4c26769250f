package offload

import (
	"strings"
	"testing"
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// Guests of testdata/record-aging-frag.sh (aging/).
const (
	agMAC1 = "02:00:c6:12:27:01" // the iperf3 client
	agMAC2 = "02:00:c6:12:27:02" // the server
)

// The recorded flows of `iperf3 -u -l 4000` over MTU 1500 carry frag=first
// (with the UDP ports) and frag=later (without); dpif/dump-flows prints
// the same matches without masks; the unfragmented run only frag=no.
func TestFragMatchesOfRecordedFlows(t *testing.T) {
	count := func(flows []DpctlFlow) map[string]int {
		m := map[string]int{}
		for _, f := range flows {
			m[f.Frag()]++
		}
		return m
	}
	for _, name := range []string{"aging/dpctl-frag-m.txt", "aging/dpif-frag.txt"} {
		got := count(mustDpctl(t, name))
		if got[FragFirst] != 1 || got[FragLater] != 1 || got[FragNo] != 4 {
			t.Errorf("%s: frag matches %v, want first 1, later 1, no 4", name, got)
		}
	}
	if got := count(mustDpctl(t, "aging/dpctl-nofrag-m.txt")); got[FragFirst]+got[FragLater] != 0 || got[FragNo] != 4 {
		t.Errorf("unfragmented run: frag matches %v, want only no", got)
	}
	for _, f := range mustDpctl(t, "aging/dpctl-frag-m.txt") {
		if f.Frag() == FragLater {
			if _, ok := f.Field("udp"); ok {
				t.Errorf("a later fragment carries no UDP header, the flow matches one: %s", f.Actions)
			}
		}
	}
	vlan := DpctlFlow{EthType: "0x8100", Match: []MatchField{{Key: "eth_type", Value: "0x8100"}, {Key: "vlan", Value: "vid=5"},
		{Key: "encap", Value: "eth_type(0x0800),ipv4(proto=17,frag=later)"}}}
	if vlan.Frag() != FragLater {
		t.Errorf("under a VLAN tag: frag %q, want later", vlan.Frag())
	}
}

func TestTCIPFlags(t *testing.T) {
	for flags, want := range map[string]string{"nofrag": FragNo, "frag/firstfrag": FragFirst, "frag/nofirstfrag": FragLater,
		"frag": FragAny, "firstfrag": "firstfrag", "": ""} {
		f := TCFilter{Keys: map[string]string{"ip_flags": flags}}
		if flags == "" {
			f.Keys = nil
		}
		if got := f.Frag(); got != want {
			t.Errorf("ip_flags %q: %q, want %q", flags, got, want)
		}
	}
	// iproute2's JSON form carries the same words (issue33's recordings,
	// written in its layout: "ip_flags":"nofrag").
	if f := mustTC(t, "issue33/tc-pkt32-wrap-1.json").Filters[0]; f.Frag() != FragNo {
		t.Errorf("JSON ip_flags %q: %q", f.Keys["ip_flags"], f.Frag())
	}
	d := mustTC(t, "aging/tc/tc-frag-1.txt")
	var got []string
	for _, f := range d.Filters {
		got = append(got, f.Frag())
	}
	if strings.Join(got, ",") != "no,first,later" {
		t.Errorf("tc-frag-1.txt: %v", got)
	}
}

// One recorded dump of the fragmented run, judged as the profile's checks
// would with one sample: the fragment flows are labelled, not judged.
func TestDpctlFragmentsLabelled(t *testing.T) {
	flows := mustDpctl(t, "aging/dpctl-frag-m.txt")
	f := JudgeDpctlFragments(DpctlSamples{Offloaded: [][]DpctlFlow{nil}, All: [][]DpctlFlow{flows}, OffloadedIsTyped: true, Window: 4 * time.Second,
		OneWay: &OneWay{From: agMAC1, To: agMAC2}}, []string{agMAC1, agMAC2})
	if !f.Fragmented || !f.Labelled || f.FragFlows != 2 || f.FragPackets != 1883+3767 || f.FragInHardware != 0 {
		t.Fatalf("finding %+v", f)
	}
	if !strings.HasPrefix(f.Summary(), FragmentLabel) {
		t.Errorf("summary %q", f.Summary())
	}
	// The unfragmented flows are judged as usual: the TCP control flows
	// in software counted packets, so software, and said.
	if f.Verdict != results.VerdictSoftware || strings.Contains(f.Reason, "frag=first") {
		t.Errorf("unfragmented flows: %s: %s", f.Verdict, f.Reason)
	}
}

// The unfragmented run: no fragment flow counted, so nothing is labelled
// and the summary says the datagrams did not fragment.
func TestDpctlFragmentsDidNotFragment(t *testing.T) {
	flows := mustDpctl(t, "aging/dpctl-nofrag-m.txt")
	f := JudgeDpctlFragments(DpctlSamples{Offloaded: [][]DpctlFlow{nil}, All: [][]DpctlFlow{flows}, OffloadedIsTyped: true, Window: 4 * time.Second},
		[]string{agMAC1, agMAC2})
	if f.Fragmented || f.Labelled || f.FragFlows != 0 {
		t.Fatalf("finding %+v", f)
	}
	if !strings.Contains(f.Summary(), "did not fragment") || strings.Contains(f.Summary(), FragmentLabel) {
		t.Errorf("summary %q", f.Summary())
	}
}

// A fragment flow of another pair of MACs is not the pair's: not counted,
// and judged with the rest (it is unrelated there).
func TestDpctlFragmentsOfAnotherPair(t *testing.T) {
	flows := mustDpctl(t, "aging/dpctl-frag-m.txt")
	f := JudgeDpctlFragments(DpctlSamples{Offloaded: [][]DpctlFlow{nil}, All: [][]DpctlFlow{flows}, Window: 4 * time.Second},
		[]string{"02:00:c6:12:27:09", agMAC2})
	if f.Fragmented || f.FragFlows != 0 {
		t.Errorf("another pair's fragments counted: %+v", f)
	}
}

// Fragment flows claimed in hardware (offloaded:yes) that counted: the
// claim contradicts mlx5, inconclusive and not labelled.
func TestDpctlFragmentsClaimedInHardware(t *testing.T) {
	flows := mustDpctl(t, "aging/dpctl-frag-m.txt")
	var first, last []DpctlFlow
	for _, f := range flows {
		g := f
		if IsFragmentMatch(f.Frag()) {
			g.DP, g.Offloaded = "tc", "yes"
			p := g
			p.Packets = 10
			first = append(first, p)
		} else {
			first = append(first, g)
		}
		last = append(last, g)
	}
	f := JudgeDpctlFragments(DpctlSamples{Offloaded: [][]DpctlFlow{first, last}}, []string{agMAC1, agMAC2})
	if f.Labelled || f.FragInHardware != 2 || f.Verdict != results.VerdictInconclusive {
		t.Fatalf("finding %+v", f)
	}
	if !strings.Contains(f.Summary(), "contradicts the NIC's design") {
		t.Errorf("summary %q", f.Summary())
	}
}

func judgeTCFrag(t *testing.T, base string) FragmentFinding {
	t.Helper()
	obs := []TCObservation{{Device: "enp8s0f0_1", Samples: []TCDump{mustTC(t, "aging/tc/"+base+"-1.txt"), mustTC(t, "aging/tc/"+base+"-2.txt")}, Span: 3 * time.Second, Window: 6 * time.Second}}
	return JudgeTCFragments(obs, []string{"fa:16:3e:4a:11:01", "fa:16:3e:4a:11:02"}, results.NetworkVXLAN, &OneWay{From: "fa:16:3e:4a:11:01", To: "fa:16:3e:4a:11:02"})
}

// tc: the fragment rules not_in_hw are labelled and left out; the
// unfragmented rule in_hw that grew is judged offloaded.
func TestTCFragmentsLabelled(t *testing.T) {
	f := judgeTCFrag(t, "tc-frag")
	if !f.Labelled || f.FragFlows != 2 || f.FragPackets != 30000+60000 || f.FragInHardware != 0 {
		t.Fatalf("finding %+v", f)
	}
	if f.Verdict != results.VerdictOffloaded {
		t.Errorf("unfragmented rules: %s: %s", f.Verdict, f.Reason)
	}
}

// tc: an unfragmented rule in software that counted beside the fragment
// rules is not covered by the label: software.
func TestTCFragmentsDoNotCoverUnfragmentedSoftware(t *testing.T) {
	f := judgeTCFrag(t, "tc-frag-nofrag-sw")
	if !f.Labelled || f.Verdict != results.VerdictSoftware {
		t.Fatalf("finding %+v", f)
	}
	if !strings.Contains(f.Summary(), "unfragmented flows: software") {
		t.Errorf("summary %q", f.Summary())
	}
}

// tc: fragment rules in_hw with hardware packets: not mlx5's behaviour.
func TestTCFragmentsInHardwareAreNotLabelled(t *testing.T) {
	f := judgeTCFrag(t, "tc-frag-inhw")
	if f.Labelled || f.FragInHardware != 2 || f.Verdict != results.VerdictInconclusive {
		t.Fatalf("finding %+v", f)
	}
}

// Which fragment matches are the pair's: both guests' MACs, one guest's
// alone (a port-security pipeline's stages), not another host's; one with
// no exact MAC is left out of both the count and the rest.
func TestFragRole(t *testing.T) {
	set, err := newMACSet([]string{agMAC1, agMAC2})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		frag, src, dst string
		want           int
	}{
		{FragFirst, agMAC1, agMAC2, fragOfPair},
		{FragLater, agMAC2, agMAC1, fragOfPair},
		{FragFirst, agMAC1, "", fragOfPair},
		{FragLater, "", agMAC2, fragOfPair},
		{FragFirst, agMAC1, "02:00:c6:12:27:09", fragOther},
		{FragFirst, agMAC1, agMAC1, fragOther},
		{FragLater, "", "00:00:00:00:00:00/01:00:00:00:00:00", fragLeft},
		{FragNo, agMAC1, agMAC2, fragOther},
	} {
		if got := fragRole(c.frag, c.src, c.dst, set); got != c.want {
			t.Errorf("%+v: %d", c, got)
		}
	}
}

// tc on a datapath that installs no tc rule (the lab's userspace one,
// hardware offload off): every sample empty. The finding says tc held no
// rule, not that the datagrams did not fragment (the dpctl check decides
// that); a tc that held rules, or one never read, is not that case.
func TestTCFragmentsNoRules(t *testing.T) {
	macs := []string{"fa:16:3e:4a:11:01", "fa:16:3e:4a:11:02"}
	ow := &OneWay{From: macs[0], To: macs[1]}
	empty := []TCObservation{{Device: "tap1", Samples: []TCDump{{}, {}}, Span: 3 * time.Second, Window: 6 * time.Second}}
	f := JudgeTCFragments(empty, macs, results.NetworkVXLAN, ow)
	if !f.NoRules || f.Fragmented || f.Labelled {
		t.Fatalf("finding %+v", f)
	}
	if s := f.Summary(); !strings.Contains(s, "tc held no rule in the window") || strings.Contains(s, "did not fragment") {
		t.Errorf("summary %q", s)
	}
	if f := judgeTCFrag(t, "tc-frag"); f.NoRules {
		t.Errorf("tc with rules: NoRules set: %+v", f)
	}
	if f := JudgeTCFragments([]TCObservation{{Device: "tap1"}}, macs, results.NetworkVXLAN, ow); f.NoRules {
		t.Errorf("tc never read: NoRules set: %+v", f)
	}
}
