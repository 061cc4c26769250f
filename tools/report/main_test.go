package main

import (
	"bytes"
	"context"
	"encoding/json"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/report"
	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// Fixtures: the seed's numbers written through results.Writer (see
// e2e/report/seed_test.go and e2e/report/testdata).
var (
	seedASAP2    = filepath.Join("..", "..", "e2e", "report", "testdata", "seed-asap2.json")
	seedBaseline = filepath.Join("..", "..", "e2e", "report", "testdata", "seed-baseline.json")
)

func runCmd(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(args, &out, &errb)
	return code, out.String(), errb.String()
}

// plant writes a copy of the seed asap2 fixture with fn applied.
func plant(t *testing.T, fn func(r *results.Results)) string {
	t.Helper()
	r, err := results.Load(seedASAP2)
	if err != nil {
		t.Fatal(err)
	}
	r.RunID = "candidate"
	fn(r)
	file := filepath.Join(t.TempDir(), "candidate.json")
	if _, err := results.NewWriter(file, *r); err != nil {
		t.Fatal(err)
	}
	return file
}

func TestCompareExitZeroWithinTolerance(t *testing.T) {
	cand := plant(t, func(r *results.Results) {
		for i := range r.Profiles {
			r.Profiles[i].Runs[0].DeliveredBps *= 0.96 // -4% everywhere, tolerance 5%
		}
	})
	code, out, errs := runCmd(t, "compare", "-tolerance", "5", seedASAP2, cand)
	if code != 0 {
		t.Fatalf("exit %d, want 0; stderr %s\n%s", code, errs, out)
	}
	if !strings.Contains(out, "| TCP 1 stream (`-P1`) | ASAP² | 16.5 Gbit/s | 15.8 Gbit/s | -4.0% |") || !strings.Contains(out, "**PASS**") {
		t.Errorf("delta table:\n%s", out)
	}
}

func TestCompareExitNonZeroOnPlantedRegression(t *testing.T) {
	cand := plant(t, func(r *results.Results) {
		r.Profiles[2].Runs[0].DeliveredBps *= 0.90 // TCP P30 -10%
		r.Environment.MTU = 1450
	})
	code, out, _ := runCmd(t, "compare", "-tolerance", "5", seedASAP2, cand)
	if code != 1 {
		t.Fatalf("exit %d, want 1\n%s", code, out)
	}
	for _, want := range []string{"| TCP 30 streams (`-P30`) | ASAP² | 22.8 Gbit/s | 20.5 Gbit/s | -10.0% | — | offload proven → offload proven | REGRESSION |",
		"| ASAP² | MTU | 8950 | 1450 |", "**FAIL**: 1 regression(s)"} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in\n%s", want, out)
		}
	}
	// The same regression passes a 15% tolerance.
	if code, out, _ := runCmd(t, "compare", "-tolerance", "15", seedASAP2, cand); code != 0 {
		t.Errorf("exit %d with 15%% tolerance\n%s", code, out)
	}
	js := filepath.Join(t.TempDir(), "cmp.json")
	if code, _, errs := runCmd(t, "compare", "-json", js, seedASAP2, cand); code != 1 {
		t.Errorf("exit %d: %s", code, errs)
	}
	var c report.Comparison
	data, err := os.ReadFile(js)
	if err != nil || json.Unmarshal(data, &c) != nil || c.Regressions != 1 {
		t.Errorf("json output: %v %s", err, data)
	}
}

func TestCompareUsageAndInputErrors(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(bad, []byte(`{"schema_version": 7}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"compare", seedASAP2}, {"compare", seedASAP2, bad}, {"compare", "-tolerance", "-1", seedASAP2, seedASAP2}, {"frobnicate"}, {}} {
		code, _, errs := runCmd(t, args...)
		if code != 2 {
			t.Errorf("%q: exit %d, want 2 (%s)", args, code, errs)
		}
	}
	_, _, errs := runCmd(t, "compare", seedASAP2, bad)
	if !strings.Contains(errs, bad) || !strings.Contains(errs, "schema_version 7 is newer") {
		t.Errorf("error does not name the file and problem: %s", errs)
	}
}

func TestRenderWithThresholds(t *testing.T) {
	dir := t.TempDir()
	rules := filepath.Join(dir, "harness.yaml")
	// the harness config's other keys are ignored; rules are strict
	if err := os.WriteFile(rules, []byte(`run:
  build_label: x
thresholds:
  - name: TCP 30 streams near line rate
    profile: tcp-p30
    path: asap2
    metric: delivered_bps
    op: ">="
    value: 22.5e9
  - name: gain over baseline P15
    profile: tcp-p15
    metric: gain
    op: ">="
    value: 2
`), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runCmd(t, "render", "-o", dir, "-thresholds", rules, "-fail-on-threshold", seedASAP2, seedBaseline)
	if code != 1 || !strings.Contains(out, "threshold FAIL: gain over baseline P15: gain 1.97×") {
		t.Fatalf("exit %d, want 1 for the failing gain rule; %s %s", code, out, errs)
	}
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| 1 stream (`-P1`) | 16.5 Gbit/s | 2.76 Gbit/s | ~6× |", "1 of 2 passed.", "| TCP 30 streams near line rate | tcp-p30 asap2 delivered_bps >= 22.5 Gbit/s | pass |"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	if err := os.WriteFile(rules, []byte("thresholds:\n  - profile: tcp-p1\n    metirc: gain\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, errs := runCmd(t, "render", "-o", dir, "-thresholds", rules, seedASAP2); code != 2 || !strings.Contains(errs, "metirc") {
		t.Errorf("typo in a rule: exit %d, %s", code, errs)
	}
}

// probe is appended to a copy of the report (the report itself has no
// script): it measures every chart after layout and prints the numbers
// into the DOM, which --dump-dom returns.
const probe = `<script>
(function(){
  var out = [];
  document.querySelectorAll("svg.chart").forEach(function(svg){
    var r = svg.getBoundingClientRect();
    var bars = 0, lines = 0, dots = 0;
    svg.querySelectorAll("rect.bar").forEach(function(e){ var b = e.getBBox(); if (b.width > 0 && b.height > 0) bars++; });
    svg.querySelectorAll("polyline.series").forEach(function(e){ var b = e.getBBox(); if (b.width > 0 && b.height > 0) lines++; });
    svg.querySelectorAll("circle.worst").forEach(function(e){ var b = e.getBBox(); if (b.width > 0) dots++; });
    out.push({cls: svg.getAttribute("class"), w: r.width, h: r.height, bars: bars, lines: lines, dots: dots});
  });
  var pre = document.createElement("pre");
  pre.id = "probe";
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
</script>`

type chartProbe struct {
	Cls   string  `json:"cls"`
	W     float64 `json:"w"`
	H     float64 `json:"h"`
	Bars  int     `json:"bars"`
	Lines int     `json:"lines"`
	Dots  int     `json:"dots"`
}

func chromium(t *testing.T, args ...string) []byte {
	t.Helper()
	bin, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("chromium is not installed (Debian: apt-get install chromium); the headless rendering check needs it")
	}
	profile := t.TempDir()
	base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
		"--disable-component-update", "--disable-sync", "--no-first-run", "--user-data-dir=" + profile}
	// a bound on a hung browser, not a synchronisation wait
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append(base, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %v: %v\n%s", args, err, stderr.String())
	}
	return stdout.Bytes()
}

// Renders the report of the seed fixtures in Debian's headless Chromium and
// asserts that every chart is laid out with non-zero size and that its bars,
// interval lines and worst-interval dots have non-zero geometry; then takes
// a screenshot and checks both path colours were painted.
func TestHTMLRendersInHeadlessChromium(t *testing.T) {
	dir := t.TempDir()
	if code, _, errs := runCmd(t, "render", "-o", dir, seedASAP2, seedBaseline); code != 0 {
		t.Fatalf("render: exit %d: %s", code, errs)
	}
	htmlFile := filepath.Join(dir, "report.html")
	page, err := os.ReadFile(htmlFile)
	if err != nil {
		t.Fatal(err)
	}
	probed := filepath.Join(dir, "probed.html")
	if err := os.WriteFile(probed, bytes.Replace(page, []byte("</body>"), []byte(probe+"</body>"), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	dom := chromium(t, "--dump-dom", "file://"+probed)
	m := regexp.MustCompile(`<pre id="probe">(.*?)</pre>`).FindSubmatch(dom)
	if m == nil {
		t.Fatalf("probe output missing from the DOM (%d bytes)", len(dom))
	}
	var charts []chartProbe
	if err := json.Unmarshal(bytes.ReplaceAll(m[1], []byte("&quot;"), []byte(`"`)), &charts); err != nil {
		t.Fatalf("probe JSON: %v: %s", err, m[1])
	}
	var bars, lines, dots, barCharts, lineCharts int
	for _, c := range charts {
		if c.W < 100 || c.H < 100 {
			t.Errorf("chart %s laid out at %.0fx%.0f", c.Cls, c.W, c.H)
		}
		bars += c.Bars
		lines += c.Lines
		dots += c.Dots
		switch c.Cls {
		case "chart bars":
			barCharts++
		case "chart intervals":
			lineCharts++
		}
	}
	// 3 TCP rows x 2 paths; 11 UDP rows x 2 paths x (offered + delivered)
	if barCharts != 3 || bars != 3*2+11*2*2 {
		t.Errorf("bar charts %d with %d drawn bars, want 3 with %d: %+v", barCharts, bars, 3*2+11*2*2, charts)
	}
	if lineCharts != 2 || lines != 2 || dots != 2 {
		t.Errorf("interval charts %d, lines %d, worst dots %d; want 2, 2, 2: %+v", lineCharts, lines, dots, charts)
	}

	shot := filepath.Join(dir, "report.png")
	if keep := os.Getenv("REPORT_SCREENSHOT"); keep != "" {
		shot = keep
	}
	chromium(t, "--window-size=1100,3400", "--hide-scrollbars", "--screenshot="+shot, "file://"+htmlFile)
	f, err := os.Open(shot)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("screenshot %s: %v", shot, err)
	}
	counts := map[string]int{}
	want := map[string][3]uint32{"asap2": {0x1a, 0x7f, 0x64}, "baseline": {0xc0, 0x56, 0x21}}
	bnd := img.Bounds()
	for y := bnd.Min.Y; y < bnd.Max.Y; y += 2 {
		for x := bnd.Min.X; x < bnd.Max.X; x += 2 {
			r, g, b, _ := img.At(x, y).RGBA()
			for name, c := range want {
				if near8(r>>8, c[0]) && near8(g>>8, c[1]) && near8(b>>8, c[2]) {
					counts[name]++
				}
			}
		}
	}
	if counts["asap2"] < 500 || counts["baseline"] < 200 {
		t.Errorf("screenshot %s: painted pixels asap2=%d baseline=%d: the bars were not drawn", shot, counts["asap2"], counts["baseline"])
	}
	t.Logf("screenshot %s (%dx%d), asap2 pixels %d, baseline pixels %d", shot, bnd.Dx(), bnd.Dy(), counts["asap2"], counts["baseline"])
}

func near8(v, want uint32) bool { return v+3 >= want && v <= want+3 }
