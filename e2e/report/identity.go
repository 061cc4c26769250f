package report

import (
	"fmt"
	"strings"

	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// The run's identity in the environment table (issue 37): the harness
// that wrote the file, the build id, the services' versions, the
// Kubernetes server and each NIC's firmware running and stored.

// harnessCell is the harness's build: "(devel) 1d40259abcde (modified)".
func harnessCell(f *results.Results) string {
	if f.Environment.Harness == nil {
		return ""
	}
	return f.Environment.Harness.String()
}

// firmwareCell is a NIC's firmware by devlink: "26.41.1000" when it runs
// what its flash holds, "running 26.36.1010, stored 26.41.1000: firmware
// flashed but not activated" when not, results.NoDevlink where there was
// no devlink to ask.
func firmwareCell(h results.Hypervisor) string {
	r, st := h.NICFirmwareRunning, h.NICFirmwareStored
	switch {
	case h.FirmwarePending():
		return fmt.Sprintf("running %s, stored %s: %s", r, st, results.FirmwareNotActivated)
	case r == st || st == "":
		return r
	case r == "":
		return "stored " + st
	}
	return fmt.Sprintf("running %s, stored %s", r, st)
}

// FirmwareWarnings are the lines the report prints under the environment
// for every hypervisor whose NIC holds a firmware it does not run: a
// warning, never a failure (the run measured the running firmware).
func FirmwareWarnings(s *Set) []string {
	var out []string
	for _, f := range s.Files {
		for _, h := range f.Environment.Hypervisors {
			if h.FirmwarePending() {
				out = append(out, fmt.Sprintf("Warning: %s: %s: NIC %s %s (running %s, stored %s); the run measured the running firmware",
					f.RunID, h.Name, orDash(h.NIC), results.FirmwareNotActivated, h.NICFirmwareRunning, h.NICFirmwareStored))
			}
		}
	}
	return out
}

func writeFirmwareWarnings(b *strings.Builder, s *Set) {
	w := FirmwareWarnings(s)
	if len(w) == 0 {
		return
	}
	for _, l := range w {
		b.WriteString("**" + l + "**\n\n")
	}
}
