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

// The run's identity in both reports: the build id, the harness's build,
// the services' versions, the Kubernetes server and each NIC's firmware by
// devlink; a NIC that holds a firmware it does not run is named with
// "firmware flashed but not activated", a warning under the table.
func TestEnvironmentShowsTheIdentity(t *testing.T) {
	r := seedResults(results.PathASAP2)
	e := &r.Environment
	e.BuildID = "pipeline-4711"
	e.Harness = &results.HarnessBuild{Version: "(devel)", Revision: "1d40259abcdef0123", Modified: true, Source: results.HarnessSourceVCS}
	e.ComputeMinMicroversion, e.ComputeMaxMicroversion = "2.1", "2.100"
	e.NetworkAPIVersions, e.IdentityAPIVersion, e.KubernetesServerVersion = []string{"v2.0 CURRENT"}, "v3.14 stable", "v1.29.4"
	if len(e.Hypervisors) < 2 {
		t.Fatalf("seed has %d hypervisors", len(e.Hypervisors))
	}
	e.Hypervisors[0].NICFirmwareRunning, e.Hypervisors[0].NICFirmwareStored = "26.36.1010", "26.41.1000"
	e.Hypervisors[1].NICFirmwareRunning, e.Hypervisors[1].NICFirmwareStored = results.NoDevlink, results.NoDevlink
	s, err := NewSet(r)
	if err != nil {
		t.Fatal(err)
	}
	md := Markdown(s, Options{})
	h0 := e.Hypervisors[0].Name
	for _, want := range []string{
		"| Build id | pipeline-4711 |",
		"| Harness | (devel) 1d40259abcde (modified) |",
		"| Compute API | microversions 2.1 to 2.100 |",
		"| Network API | v2.0 CURRENT |",
		"| Identity API | v3.14 stable |",
		"| Kubernetes | v1.29.4 |",
		h0 + ": running 26.36.1010, stored 26.41.1000: firmware flashed but not activated",
		"unknown (no devlink)",
		"**Warning: " + r.RunID + ": " + h0 + ": NIC",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
	html := string(HTML(s, Options{}))
	for _, want := range []string{"pipeline-4711", "firmware flashed but not activated", "v1.29.4"} {
		if !strings.Contains(html, want) {
			t.Errorf("HTML lacks %q", want)
		}
	}
	// A file without them renders no identity row.
	old, err := NewSet(seedResults(results.PathASAP2))
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range EnvironmentRows(old) {
		switch row[0] {
		case "Build id", "Harness", "Network API", "Identity API", "Kubernetes", "NIC firmware (devlink)":
			t.Errorf("a file without identity shows %q", row)
		}
	}
}
