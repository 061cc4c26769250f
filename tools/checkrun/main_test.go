package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// testdata/<case>/ holds a real run's results.json and the JUnit file of the
// same ginkgo invocation, recorded on the local lab with
//
//	ASAP2E2E_EXPECTED_PATH=asap2 make e2e CONFIG=lab/harness.yaml LABELS=offload OUT=... REPORT_DIR=...
//
// outlasted/: on a loaded machine the checks took longer than the 30 s
// evidence flow of that config, so the harness made every verdict
// inconclusive. The run failed, but not because the checks proved the
// software path: checkrun must not call that a proper refusal.
func TestOutlastedRunIsNotAProperRefusal(t *testing.T) {
	var out, errOut bytes.Buffer
	code := run([]string{"refused", "testdata/outlasted", "testdata/outlasted/junit.xml"}, &out, &errOut)
	if code != 1 {
		t.Fatalf("exit %d, want 1; stdout:\n%s\nstderr:\n%s", code, out.String(), errOut.String())
	}
	if n := strings.Count(out.String(), "says inconclusive, want software"); n != 12 {
		t.Fatalf("%d checks reported as inconclusive, want all 12:\n%s", n, out.String())
	}
}

func TestUsageAndUnreadableInput(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run([]string{"refused", "only-one-arg"}, &out, &errOut); code != 2 {
		t.Fatalf("bad usage: exit %d, want 2", code)
	}
	dir := t.TempDir()
	if code := run([]string{"refused", dir, filepath.Join(dir, "junit.xml")}, &out, &errOut); code != 2 {
		t.Fatalf("missing results.json: exit %d, want 2", code)
	}
	if !strings.Contains(errOut.String(), "results.json") {
		t.Fatalf("the error does not name the missing file: %s", errOut.String())
	}
}

// refused/: the negative run of `make lab` (lab/job.sh) on 2026-12-02: the
// lab configured as asap2, LABELS=offload. Every check proved the software
// path and the offload spec failed quoting them: a proper refusal.
func TestRecordedNegativeLabRunIsRefused(t *testing.T) {
	var out, errOut bytes.Buffer
	code := run([]string{"refused", "testdata/refused", "testdata/refused/junit.xml"}, &out, &errOut)
	if code != 0 {
		t.Fatalf("exit %d, want 0; stdout:\n%s\nstderr:\n%s", code, out.String(), errOut.String())
	}
	if !strings.Contains(out.String(), "was refused with the checks' reasons") {
		t.Fatalf("unexpected output: %s", out.String())
	}
}

// The same recorded run judged against a JUnit file whose offload spec
// passed (the harness accepted the lab as offloaded) must not count as a
// refusal.
func TestAcceptedRunIsNotARefusal(t *testing.T) {
	data, err := os.ReadFile("testdata/refused/results.json")
	if err != nil {
		t.Fatal(err)
	}
	junit := filepath.Join(t.TempDir(), "junit.xml")
	passed := `<testsuites><testsuite><testcase name="[It] Complementary offload checks proves the traffic is offloaded to the NIC (NIC asap2) [offload, asap2]"></testcase></testsuite></testsuites>`
	if err := os.WriteFile(junit, []byte(passed), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out := refusedWith(t, data, junit)
	if code != 1 {
		t.Fatalf("exit %d, want 1: %s", code, out)
	}
	if !strings.Contains(out, "did not fail") {
		t.Fatalf("the reason does not say the spec passed: %s", out)
	}
}

// refusedWith runs `checkrun refused` on a run directory holding results
// and the JUnit file at junit; it returns the exit status and all output.
func refusedWith(t *testing.T, results []byte, junit string) (int, string) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "results.json"), results, 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	code := run([]string{"refused", dir, junit}, &out, &errOut)
	return code, out.String() + errOut.String()
}

// A refusal rests on every configured check: a check the run was configured
// to do that left no verdict (here counters, added to the recorded run's
// configuration) is named, and the run is not a proper refusal.
func TestConfiguredCheckWithoutVerdictIsNamed(t *testing.T) {
	res, err := results.Load("testdata/refused/results.json")
	if err != nil {
		t.Fatal(err)
	}
	res.Config.Checks = append(res.Config.Checks, "counters")
	data, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	code, out := refusedWith(t, data, "testdata/refused/junit.xml")
	if code != 1 {
		t.Fatalf("exit %d, want 1: %s", code, out)
	}
	if !strings.Contains(out, "check counters was configured but left no verdict") {
		t.Fatalf("the missing check is not named: %s", out)
	}
}

// A port-security run rests on the conntrack check as well: the recorded
// refusal (port security off) marked as on, without conntrack verdicts, is
// not a proper refusal, and each flow without them is named; with a
// conntrack verdict per hypervisor and flow, it is again.
func TestPortSecurityRefusalNeedsConntrackVerdicts(t *testing.T) {
	res, err := results.Load("testdata/refused/results.json")
	if err != nil {
		t.Fatal(err)
	}
	on := true
	res.Config.PortSecurity = &on
	data, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	code, out := refusedWith(t, data, "testdata/refused/junit.xml")
	if code != 1 {
		t.Fatalf("exit %d, want 1: %s", code, out)
	}
	for _, flow := range []string{"tcp", "udp"} {
		if !strings.Contains(out, "the conntrack check left 0 verdict(s) for the "+flow+" flow where dpctl left 2") {
			t.Errorf("the %s flow without conntrack verdicts is not named: %s", flow, out)
		}
	}
	for _, flow := range []string{"tcp", "udp"} {
		for _, hv := range []string{"compute1", "compute2"} {
			res.Offload = append(res.Offload, results.CheckResult{Name: results.CheckConntrack, Flow: flow, Verdict: results.VerdictSoftware,
				Reason: "conntrack: OVS's userspace conntrack on " + hv + " holds the run's connections", EvidenceFiles: []string{"x"}})
		}
	}
	if data, err = json.Marshal(res); err != nil {
		t.Fatal(err)
	}
	if code, out := refusedWith(t, data, "testdata/refused/junit.xml"); code != 1 || strings.Contains(out, "conntrack check left") {
		// still 1: the JUnit failure of the recorded run does not quote the added reasons
		t.Fatalf("exit %d: %s", code, out)
	}
}
