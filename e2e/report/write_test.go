package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// A run's failures reach report.md: a repeat's error (with the harness's
// look after the window) and the run's errors (profiles refused on a
// damaged topology). The harness pins that it records them in the results
// file (TestRunProfileExplainsAFailedRepeat); WriteRun, the run's last
// final step, renders them.
func TestMarkdownErrorsSection(t *testing.T) {
	r := seedResults(results.PathASAP2)
	failed := "iperf3 run tcp-p1: guest asap2e2e-client: port 5201: iperf3 reported: control socket has closed unexpectedly; after the window: data port asap2e2e-r1-vm0-data (p1) no longer exists"
	notRun := "tcp-p15: not run: the topology was damaged during tcp-p1 repeat 1 (data port asap2e2e-r1-vm0-data (p1) no longer exists)"
	r.Profiles[0].Runs[0].Error = failed
	results.Summarize(&r.Profiles[0], r.Config.CVLimitPercent)
	r.Errors = append(r.Errors, notRun)
	dir := t.TempDir()
	files, err := WriteRun(dir, *r)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{filepath.Join(dir, "report.md"), filepath.Join(dir, "report.html")}; len(files) != 2 || files[0] != want[0] || files[1] != want[1] {
		t.Fatalf("WriteRun wrote %q, want %q", files, want)
	}
	md, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	errs := string(md[strings.Index(string(md), "## Errors"):])
	for _, w := range []string{"repeat 1: " + failed, notRun} {
		if !strings.Contains(errs, w) {
			t.Errorf("report.md's errors lack %q:\n%s", w, errs)
		}
	}
	if _, err := os.Stat(files[1]); err != nil {
		t.Error(err)
	}
}
