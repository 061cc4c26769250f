package report

import (
	"strings"
	"testing"

	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// A test input, not a measurement: the asap2 run aged out and came back
// in hardware on cmp-1 (300 ms) and above the goal on cmp-2; the baseline
// run is the lab's shape (software datapath); its fragment profile
// labelled the fragments with one check's unfragmented flows in software.
func agingSet(t *testing.T) *Set {
	t.Helper()
	a, b := seedResults(results.PathASAP2), seedResults(results.PathBaseline)
	v := func(x float64) *float64 { return &x }
	a.Aging = &results.AgingResult{Path: results.PathASAP2, Tuple: "udp 198.18.10.5:41000 -> 198.18.10.4:5201", RestartTuple: "udp 198.18.10.5:41000 -> 198.18.10.4:5201", SameTuple: true,
		IdleSeconds: 35, SampleSeconds: 0.2, BoundSeconds: 10, Verdict: results.AgingMeasured, Reason: "aged out on every hypervisor",
		Hosts: []results.AgingHost{
			{Hypervisor: "cmp-1", MaxIdleSeconds: 10, MaxIdleSource: "unset: OVS's default 10s", AgedOut: true, ReinstallMs: v(120), ReinstallResolutionMs: v(200), ReoffloadMs: v(300), ReoffloadResolutionMs: v(400)},
			{Hypervisor: "cmp-2", MaxIdleSeconds: 10, MaxIdleSource: "other_config:max-idle", AgedOut: true, ReinstallMs: v(150), ReoffloadMs: v(2600)},
		}}
	b.Aging = &results.AgingResult{Path: results.PathBaseline, Tuple: "udp 198.18.10.5:41000 -> 198.18.10.4:5201", SameTuple: false, RestartTuple: "udp 198.18.10.5:41001 -> 198.18.10.4:5201",
		IdleSeconds: 35, Verdict: results.AgingNotMeasured, Reason: "the restart is not the same flow",
		Hosts: []results.AgingHost{{Hypervisor: "cmp-a", AgedOut: false, AgedOutReason: "not an aging measurement: traffic leaked into the idle", Software: true}}}
	b.Fragments = &results.FragmentResult{Path: results.PathBaseline, MTU: 1450, Length: 2450, Fragmented: true, Label: "fragmented traffic: software by the NIC's design (mlx5 cannot match frag first/later)",
		Verdict: results.VerdictSoftware, Reason: "labelled; unfragmented flows of the pair: software",
		Checks: []results.FragmentCheck{
			{Name: "dpctl", Hypervisor: "cmp-a", Fragmented: true, Labelled: true, FragFlows: 2, FragPackets: 5650, Verdict: results.VerdictSoftware, Reason: "a | b"},
			{Name: "tc", Hypervisor: "cmp-b", FragFlows: 2, FragInHardware: 2, Verdict: results.VerdictInconclusive, Reason: "claimed"},
		}}
	s, err := NewSet(a, b)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestAgingTable(t *testing.T) {
	_, rows := AgingRows(agingSet(t).Agings())
	if len(rows) != 3 {
		t.Fatalf("%d rows", len(rows))
	}
	if rows[0][6] != "120 ms (± 200 ms)" || rows[0][7] != "300 ms (± 400 ms)" {
		t.Errorf("cmp-1: %q", rows[0])
	}
	if !strings.Contains(rows[1][7], "above the 2000 ms goal") {
		t.Errorf("cmp-2 above the goal: %q", rows[1][7])
	}
	// Not aged out: no times at all, and the other tuple named.
	if rows[2][6] != results.Dash || rows[2][7] != results.Dash || !strings.HasPrefix(rows[2][5], "**no**") || !strings.Contains(rows[2][1], "not the same flow") {
		t.Errorf("baseline: %q", rows[2])
	}
}

func TestFragmentTable(t *testing.T) {
	_, rows := FragmentRows(agingSet(t).FragmentResults())
	if len(rows) != 2 || rows[0][5] != "software, by design (+5650 packets)" || rows[0][6] != "software" || rows[0][7] != `a \| b` {
		t.Errorf("dpctl row %q", rows[0])
	}
	if !strings.Contains(rows[1][5], "claimed in hardware") {
		t.Errorf("tc row %q", rows[1])
	}
}

func TestAgingAndFragmentsInBothReports(t *testing.T) {
	s := agingSet(t)
	md := Markdown(s, Options{})
	html := string(HTML(s, Options{}))
	for _, want := range []string{"## Aging and re-offload", "## Fragmented UDP", "software by the NIC's design"} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q", want)
		}
	}
	for _, want := range []string{"<h2>Aging and re-offload</h2>", "<h2>Fragmented UDP</h2>"} {
		if !strings.Contains(html, want) {
			t.Errorf("html lacks %q", want)
		}
	}
}
