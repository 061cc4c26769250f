package main

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// cpuFile is a seed results file whose every run carries one host busy
// coresPerGbps × delivered Gbit/s cores (so coresPerGbps × 10 per
// 10 Gbit/s), written to dir.
func cpuFile(t *testing.T, seed, dir string, coresPerGbps float64) string {
	t.Helper()
	f, err := results.Load(seed)
	if err != nil {
		t.Fatal(err)
	}
	for i := range f.Profiles {
		p := &f.Profiles[i]
		for j := range p.Runs {
			r := &p.Runs[j]
			busy := coresPerGbps * r.DeliveredBps / 1e9
			r.HostCPU = &results.HostCPURun{Hosts: []results.HostCPU{{Hypervisor: "cmp", BootID: "b", CPUUsage: results.CPUUsage{Busy: busy, User: busy}}}}
		}
		results.Summarize(p, f.Config.CVLimitPercent)
	}
	data, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, filepath.Base(seed))
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// cpuProbe measures the host-CPU chart's bars after layout, by colour.
const cpuProbe = `<script>
(function(){
  var out = {charts: 0, w: 0, asap2: [], baseline: []};
  document.querySelectorAll("svg.chart.cpu").forEach(function(svg){
    out.charts++;
    out.w = svg.getBoundingClientRect().width;
    svg.querySelectorAll("rect.bar").forEach(function(e){
      var h = e.getBBox().height;
      if (e.getAttribute("fill") === "#1a7f64") out.asap2.push(h); else out.baseline.push(h);
    });
  });
  var pre = document.createElement("pre");
  pre.id = "cpuprobe";
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
</script>`

// The HTML's chart of host cores per 10 Gbit/s, laid out by Debian's
// headless Chromium: one bar per profile and path, ASAP² (0.2) and
// baseline (1.1) heights in the ratio of their medians; the report
// round-trips through results files and `report render`.
func TestCPUChartRendersInHeadlessChromium(t *testing.T) {
	dir := t.TempDir()
	a := cpuFile(t, seedASAP2, dir, 0.02)
	b := cpuFile(t, seedBaseline, dir, 0.11)
	out := filepath.Join(dir, "out")
	if code, _, errs := runCmd(t, "render", "-o", out, a, b); code != 0 {
		t.Fatalf("render: exit %d: %s", code, errs)
	}
	page, err := os.ReadFile(filepath.Join(out, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(out, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(md), "## Host CPU during the measured windows") {
		t.Error("report.md has no CPU section")
	}
	probed := filepath.Join(dir, "probed.html")
	if err := os.WriteFile(probed, bytes.Replace(page, []byte("</body>"), []byte(cpuProbe+"</body>"), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	dom := chromium(t, "--dump-dom", "file://"+probed)
	m := regexp.MustCompile(`<pre id="cpuprobe">(.*?)</pre>`).FindSubmatch(dom)
	if m == nil {
		t.Fatalf("probe output missing from the DOM (%d bytes)", len(dom))
	}
	var got struct {
		Charts          int
		W               float64
		ASAP2, Baseline []float64
	}
	if err := json.Unmarshal(bytes.ReplaceAll(m[1], []byte("&quot;"), []byte(`"`)), &got); err != nil {
		t.Fatalf("probe JSON: %v: %s", err, m[1])
	}
	if got.Charts != 1 || got.W < 100 || len(got.ASAP2) != 14 || len(got.Baseline) != 14 {
		t.Fatalf("chart %+v: want one chart with 14 bars per path", got)
	}
	for i := range got.ASAP2 {
		if got.ASAP2[i] <= 0 || math.Abs(got.Baseline[i]/got.ASAP2[i]-5.5) > 0.1 {
			t.Errorf("profile %d: bars %.1f and %.1f px, want the ratio 5.5", i, got.ASAP2[i], got.Baseline[i])
		}
	}
}
