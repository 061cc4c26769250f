package report

import (
	"strings"
	"testing"

	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// The compute API's highest microversion, as the Epoxy lab's Nova 31
// announced it, names the OpenStack release beside the OVS and tc versions;
// a run that did not record it shows the cell as unknown.
func TestEnvironmentShowsTheComputeMicroversion(t *testing.T) {
	epoxy := seedResults(results.PathBaseline)
	epoxy.Environment.ComputeMaxMicroversion = "2.100"
	s, err := NewSet(epoxy)
	if err != nil {
		t.Fatal(err)
	}
	if md := Markdown(s, Options{}); !strings.Contains(md, "| Compute API | max microversion 2.100 |") {
		t.Errorf("markdown environment lacks the compute microversion:\n%s", md)
	}
	old, err := NewSet(seedResults(results.PathBaseline))
	if err != nil {
		t.Fatal(err)
	}
	if md := Markdown(old, Options{}); !strings.Contains(md, "| Compute API | — |") {
		t.Errorf("a run without the microversion must show it unknown:\n%s", md)
	}
}
