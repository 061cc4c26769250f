package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
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
