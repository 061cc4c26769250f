package harness

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/config"
	"github.com/mosk-qa/asap2-e2e/e2e/evidence"
	"github.com/mosk-qa/asap2-e2e/e2e/offload"
	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// The idle is the longer of the flowtable timeout and every max-idle read,
// plus the margin: 30 s + 5 s with OVS's default 10 s; a hypervisor whose
// max-idle is 60 s sets it.
func TestAgingIdle(t *testing.T) {
	a := config.Aging{FlowtableTimeout: 30 * time.Second, IdleMargin: 5 * time.Second}
	if got := AgingIdle(a, 10*time.Second, 10*time.Second); got != 35*time.Second {
		t.Errorf("default max-idle: %s", got)
	}
	if got := AgingIdle(a, 10*time.Second, 60*time.Second); got != 65*time.Second {
		t.Errorf("one max-idle of 60s: %s", got)
	}
}

// The recorded first run and restart (../offload/testdata/aging, iperf3
// 3.12 --cport 40003) report the same 5-tuple.
func TestTupleOfRecordedRuns(t *testing.T) {
	read := func(name string) offload.Tuple {
		b, err := os.ReadFile("../offload/testdata/aging/" + name)
		if err != nil {
			t.Fatal(err)
		}
		tu, err := tupleOf(b)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return tu
	}
	first, restart := read("iperf3-aging-1.json"), read("iperf3-aging-2.json")
	if first.String() != "udp 198.18.39.1:40003 -> 198.18.39.2:5201" || offload.SameTuple(first, restart) != "" {
		t.Errorf("first %s, restart %s", first, restart)
	}
	other := read("iperf3-frag.json")
	if offload.SameTuple(first, other) == "" {
		t.Errorf("another client port taken for the same flow: %s", other)
	}
}

func agingHostOK(name string) results.AgingHost {
	v := 231.0
	return results.AgingHost{Hypervisor: name, AgedOut: true, Software: true, ReinstallMs: &v, Reason: "in the datapath: 231 ms after the launch (resolution 209 ms); in hardware: never — software datapath"}
}

func TestAgingVerdict(t *testing.T) {
	ar := results.AgingResult{Tuple: "udp 198.18.10.5:41000 -> 198.18.10.4:5201", IdleSeconds: 35, Hosts: []results.AgingHost{agingHostOK("compute1"), agingHostOK("compute2")}}
	if v, why := AgingVerdict(ar, ""); v != results.AgingMeasured || !strings.Contains(why, "compute2: in the datapath: 231 ms") {
		t.Errorf("%s: %s", v, why)
	}
	// A flow still installed on one hypervisor: no measurement, said.
	stale := ar
	stale.Hosts = []results.AgingHost{agingHostOK("compute1"), {Hypervisor: "compute2", AgedOutReason: "not an aging measurement: 1 flows ... used inside it (traffic leaked into the idle)"}}
	if v, why := AgingVerdict(stale, ""); v != results.AgingNotMeasured || !strings.Contains(why, "compute2: not an aging measurement") {
		t.Errorf("stale: %s: %s", v, why)
	}
	// Another 5-tuple at the restart: not the same flow.
	if v, why := AgingVerdict(ar, "the restart is not the same flow: udp 198.18.10.5:41001 -> ..."); v != results.AgingNotMeasured || !strings.Contains(why, "not the same flow") {
		t.Errorf("other tuple: %s: %s", v, why)
	}
	// On an asap2 run a first flow not proven offloaded is named.
	hw := ar
	hw.Path, hw.Checks = results.PathASAP2, []results.CheckResult{{Name: "dpctl", Verdict: results.VerdictOffloaded}, {Name: "tc", Verdict: results.VerdictSoftware}}
	if v, why := AgingVerdict(hw, ""); v != results.AgingMeasured || !strings.Contains(why, "not proven offloaded (tc software)") {
		t.Errorf("asap2: %s: %s", v, why)
	}
	// A first flow that ignored --cport, said before the idle.
	cport := ar
	cport.Verdict, cport.Reason = results.AgingNotMeasured, "the first flow left from client port 50000, not the pinned 41000"
	if v, why := AgingVerdict(cport, ""); v != results.AgingNotMeasured || !strings.Contains(why, "not the pinned") {
		t.Errorf("cport: %s: %s", v, why)
	}
}

func fragCheck(name, hv string, v results.Verdict, f *offload.FragmentFinding) evidence.FlowCheck {
	return evidence.FlowCheck{Flow: "udp", Hypervisor: hv, Check: offload.Check{Name: name, Verdict: v, Reason: "r", Fragments: f}}
}

func TestSummarizeFragments(t *testing.T) {
	base := results.FragmentResult{MTU: 1450, Length: 2450}
	lab := &offload.FragmentFinding{Fragmented: true, Labelled: true, FragFlows: 2, FragPackets: 100, Verdict: results.VerdictOffloaded}
	quiet := &offload.FragmentFinding{Verdict: results.VerdictInconclusive}
	claimed := &offload.FragmentFinding{Fragmented: true, FragInHardware: 2, FragFlows: 2, FragPackets: 100, Verdict: results.VerdictInconclusive}

	got := SummarizeFragments(base, []evidence.FlowCheck{fragCheck("tc", "c1", results.VerdictOffloaded, lab), fragCheck("dpctl", "c1", results.VerdictOffloaded, lab), fragCheck("dpctl", "c2", results.VerdictInconclusive, quiet)})
	if got.Label != offload.FragmentLabel || !got.Fragmented || got.Verdict != results.VerdictInconclusive || len(got.Checks) != 3 {
		t.Errorf("labelled: %+v", got)
	}
	// An unfragmented flow in software on one check: the label stays on
	// the fragments, the verdict is software.
	sw := *lab
	sw.Verdict = results.VerdictSoftware
	got = SummarizeFragments(base, []evidence.FlowCheck{fragCheck("tc", "c1", results.VerdictSoftware, &sw), fragCheck("dpctl", "c1", results.VerdictOffloaded, lab)})
	if got.Label == "" || got.Verdict != results.VerdictSoftware || !strings.Contains(got.Reason, "unfragmented flows of the pair: software") {
		t.Errorf("software beside: %+v", got)
	}
	// Nothing fragmented: said, never labelled.
	got = SummarizeFragments(base, []evidence.FlowCheck{fragCheck("dpctl", "c1", results.VerdictInconclusive, quiet)})
	if got.Label != "" || got.Fragmented || !strings.Contains(got.Reason, "did not fragment") {
		t.Errorf("not fragmented: %+v", got)
	}
	// Fragments claimed in hardware: not labelled.
	got = SummarizeFragments(base, []evidence.FlowCheck{fragCheck("tc", "c1", results.VerdictInconclusive, claimed), fragCheck("dpctl", "c1", results.VerdictOffloaded, lab)})
	if got.Label != "" || !strings.Contains(got.Reason, "claimed in hardware") {
		t.Errorf("claimed: %+v", got)
	}
	// A check that could not finish carries no finding: inconclusive.
	got = SummarizeFragments(base, []evidence.FlowCheck{fragCheck("tc", "c1", results.VerdictOffloaded, nil)})
	if got.Checks[0].Verdict != results.VerdictInconclusive || got.Verdict != results.VerdictInconclusive {
		t.Errorf("no finding: %+v", got)
	}
}

func TestFamilyChecksKeepOffloadOrder(t *testing.T) {
	cfg := &config.Config{Offload: config.Offload{Checks: []string{"dpctl", "representor", "tc", "counters"}}}
	if got := strings.Join(familyChecks(cfg, "tc", "dpctl"), ","); got != "dpctl,tc" {
		t.Errorf("%s", got)
	}
}
