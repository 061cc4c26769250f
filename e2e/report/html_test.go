package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// seedSetWithRepeats is the seed set with the TCP 1-stream baseline run
// three times (the public veth series and two scaled copies) so the HTML
// shows several lines and a whisker.
func seedSetWithRepeats(t *testing.T) *Set {
	t.Helper()
	a, b := seedResults(results.PathASAP2), seedResults(results.PathBaseline)
	p := &b.Profiles[0]
	base := p.Runs[0]
	for i, f := range []float64{0.93, 1.05} {
		r := base
		r.Repeat = i + 2
		r.DeliveredBps = base.DeliveredBps * f
		r.OfferedBps = r.DeliveredBps
		r.Intervals = nil
		for _, iv := range base.Intervals {
			iv.Bps *= f
			r.Intervals = append(r.Intervals, iv)
		}
		p.Runs = append(p.Runs, r)
	}
	results.Summarize(p, b.Config.CVLimitPercent)
	s, err := NewSet(a, b)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Structural checks of the HTML (no browser): self-contained, one bar chart
// per table, one interval chart per profile with intervals, no script.
func TestHTMLStructure(t *testing.T) {
	out := string(HTML(seedSetWithRepeats(t), Options{}))
	for _, bad := range []string{"<script", "http://", "https://", "<link", "@import", "src="} {
		if bad == "http://" {
			// the SVG namespace URI is an identifier, not a fetch
			out2 := strings.ReplaceAll(out, `xmlns="http://www.w3.org/2000/svg"`, "")
			if strings.Contains(out2, bad) {
				t.Errorf("HTML contains %q", bad)
			}
			continue
		}
		if strings.Contains(out, bad) {
			t.Errorf("HTML contains %q: not self-contained", bad)
		}
	}
	if n := strings.Count(out, `class="chart bars"`); n != 3 {
		t.Errorf("bar charts: %d, want 3 (TCP, UDP unlimited, UDP capped)", n)
	}
	if n := strings.Count(out, `class="chart intervals"`); n != 2 {
		t.Errorf("interval charts: %d, want 2 (TCP P1 ASAP² and baseline)", n)
	}
	if n := strings.Count(out, `class="series"`); n != 4 {
		t.Errorf("interval lines: %d, want 4 (1 ASAP² + 3 baseline repeats)", n)
	}
	if n := strings.Count(out, `class="whisker"`); n != 1 {
		t.Errorf("whiskers: %d, want 1", n)
	}
	if !strings.Contains(out, "3.18 Gbit/s / 2.34 Gbit/s / 27%") || !strings.Contains(out, "27% loss") {
		t.Error("UDP cell or loss label missing")
	}
	if *update {
		if err := os.WriteFile(filepath.Join("testdata", "seed-report.html"), []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
