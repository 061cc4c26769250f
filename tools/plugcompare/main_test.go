package main

import (
	"bytes"
	"strings"
	"testing"
)

// testdata/veth-results.json and internal-results.json are real results of
// the local lab on 2026-12-02, one after the other on the same lab:
//
//	make e2e CONFIG=lab/harness.yaml                                  (veth, baseline run)
//	make e2e CONFIG=lab/plug-internal.yaml LABELS=throughput OUT=...  (OVS internal port)
//
// tcp-p1 delivered 1.40 Gbit/s over veth and 399 Mbit/s over the internal
// port: the lab disagrees with the reference, and the tool must say so.
func TestCompareOnRecordedLabRuns(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run([]string{"testdata/veth-results.json", "testdata/internal-results.json"}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	md := out.String()
	for _, want := range []string{
		"| lab: veth | 1.40 Gbit/s |",
		"| lab: OVS internal port | 399 Mbit/s |",
		"| reference: veth | 236 Mbit/s | 6993 |",
		"| reference: OVS internal port | 428 Mbit/s | 12010 |",
		"Internal port / veth: **0.28×** in the lab, 1.81× in the reference",
		"The lab disagrees with the reference: veth is faster here.",
		"### Per-interval series, OVS internal port",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("output lacks %q:\n%s", want, md)
		}
	}
}

func TestMissingProfileIsAnErrorNamingTheFile(t *testing.T) {
	var out, errOut bytes.Buffer
	code := run([]string{"-profile", "udp-b0-p30", "testdata/veth-results.json", "testdata/internal-results.json"}, &out, &errOut)
	if code != 1 {
		t.Fatalf("exit %d, want 1", code)
	}
	for _, want := range []string{"testdata/veth-results.json: no profile udp-b0-p30", "testdata/internal-results.json: no profile udp-b0-p30"} {
		if !strings.Contains(errOut.String(), want) {
			t.Errorf("error lacks %q: %s", want, errOut.String())
		}
	}
}
