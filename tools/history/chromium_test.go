package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/history"
	"github.com/mosk-qa/asap2-e2e/e2e/history/store"
)

// trendProbe measures the trend page's charts as laid out by the browser:
// each chart's size and place, the node lines with non-zero geometry, the
// change point marks (and where the first is), the environment markers
// (drawn, at the x axis, with the change in their title), the labels that
// run past the chart's edge and the heat
// map's cells (drawn, inside their chart, and red by the computed style).
const trendProbe = `<script>
(function(){
  var out = [];
  document.querySelectorAll("svg.chart").forEach(function(svg){
    var r = svg.getBoundingClientRect(), c = {w: r.width, h: r.height, top: r.top, bottom: r.bottom,
      lines: 0, marks: 0, markX: -1, clipped: 0, env: 0, envX: -1, envBottom: -1, envTitle: "", cells: 0, cellsInside: 0, red: 0};
    svg.querySelectorAll("text").forEach(function(e){ var b = e.getBBox(); if (b.x < 0 || b.x + b.width > svg.viewBox.baseVal.width) c.clipped++; });
    svg.querySelectorAll("polyline.line").forEach(function(e){ var b = e.getBBox(); if (b.width > 0 && b.height > 0) c.lines++; });
    svg.querySelectorAll("line.cp, line.cpok").forEach(function(e){ var b = e.getBBox(); if (b.height > 0) { c.marks++; c.markX = b.x; } });
    svg.querySelectorAll("path.env").forEach(function(e){
      var b = e.getBBox(), t = e.querySelector("title");
      if (b.width > 0 && b.height > 0 && getComputedStyle(e).fill !== "none") { c.env++; c.envX = b.x + b.width/2; c.envBottom = b.y + b.height; c.envTitle = t ? t.textContent : ""; }
    });
    svg.querySelectorAll("rect").forEach(function(e){
      var b = e.getBBox(), cr = e.getBoundingClientRect();
      if (b.width > 0 && b.height > 0) c.cells++;
      if (cr.left >= r.left && cr.right <= r.right && cr.top >= r.top && cr.bottom <= r.bottom && cr.width > 0) c.cellsInside++;
      if (getComputedStyle(e).fill === "rgb(254, 178, 178)") c.red++;
    });
    out.push(c);
  });
  var pre = document.createElement("pre");
  pre.id = "probe";
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
</script>`

// fleetNights stores n nights of a 4-pair fleet's tcp-p1 rate (one family:
// a chart and a heat map), after nightly's, each pair within 2 % of the
// others but the third pair 22 % below them on the last night; every
// node's kernel moves at night kernelAt.
func fleetNights(t *testing.T, db string, n, kernelAt int) {
	ctx := context.Background()
	s, err := store.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i := range n {
		run := history.Run{ID: fmt.Sprintf("fleet-%02d", i), StartedAt: time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC).AddDate(0, 0, i), Build: "mosk-25.2"}
		facts := history.Facts{history.FactBackend: "ml2/ovn"}
		var pts []history.Point
		for p := range 4 {
			kernel := "6.1.0-27"
			if i >= kernelAt {
				kernel = "6.1.0-28"
			}
			facts[fmt.Sprintf("hv.cmp%d.kernel", p)] = kernel
			v := 9e9 * (1 + 0.01*float64((p+i)%3))
			if p == 2 && i == n-1 {
				v = 7e9
			}
			ser := history.Series{Metric: history.MetricDelivered, Profile: "tcp-p1", Path: "asap2", Node: fmt.Sprintf("cmp%d>cmp%d", p, (p+1)%4), Backend: "ml2/ovn", Mode: "isolated"}
			pts = append(pts, history.Point{Series: ser, Value: v, Lo: v, Hi: v, N: 3})
		}
		if _, err := s.Ingest(ctx, run, facts, pts); err != nil {
			t.Fatal(err)
		}
	}
}

// Renders the trend page of a 14-night history with a 25 % drop and a
// kernel change at the same night, and of a 6-night 4-pair fleet, in
// Debian's headless Chromium (as tools/report's report.html is checked)
// and asserts every chart is laid out, every series drawn, the drop marked,
// each environment change marked on the x axis beside it, and the fleet's
// heat map laid out below its chart with every cell drawn.
func TestTrendRendersInHeadlessChromium(t *testing.T) {
	bin, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("chromium is not installed (Debian: apt-get install chromium); the headless rendering check needs it")
	}
	dir := t.TempDir()
	db := filepath.Join(dir, "history.db")
	if code, _, e := runCmd(append([]string{"--store", db, "ingest"}, nightly(t, dir, 14, 10, 0.25)...)...); code != 0 {
		t.Fatalf("ingest: %d %s", code, e)
	}
	fleetNights(t, db, 6, 3)
	page := filepath.Join(dir, "trend.html")
	if code, _, e := runCmd("--store", db, "trend", "-o", page); code != 0 {
		t.Fatalf("trend: %d %s", code, e)
	}
	html, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	probed := filepath.Join(dir, "probed.html")
	if err := os.WriteFile(probed, bytes.Replace(html, []byte("</body>"), []byte(trendProbe+"</body>"), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	// a bound on a hung browser, not a synchronisation wait
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var out, errb bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
		"--disable-component-update", "--disable-sync", "--no-first-run", "--user-data-dir="+t.TempDir(), "--dump-dom", "file://"+probed)
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium: %v\n%s", err, errb.String())
	}
	m := regexp.MustCompile(`<pre id="probe">(.*?)</pre>`).FindSubmatch(out.Bytes())
	if m == nil {
		t.Fatalf("probe output missing from the DOM (%d bytes)", out.Len())
	}
	var charts []struct {
		W, H, Top, Bottom, MarkX, EnvX, EnvBottom           float64
		Lines, Marks, Env, Cells, CellsInside, Red, Clipped int
		EnvTitle                                            string
	}
	if err := json.Unmarshal(bytes.ReplaceAll(m[1], []byte("&quot;"), []byte(`"`)), &charts); err != nil {
		t.Fatalf("probe JSON: %v: %s", err, m[1])
	}
	lines, marks, env, heat := 0, 0, 0, -1
	for i, c := range charts {
		// a chart of lines is 960×260; a heat map 150 + 12 a run wide, 16 + 14
		// a node high (plus margins)
		minW, minH := 100.0, 100.0
		if c.Cells > 0 {
			minW, minH = 150+12*6, 16+14*4
		}
		if c.W < minW || c.H < minH {
			t.Errorf("chart %d laid out at %.0fx%.0f, want at least %.0fx%.0f", i, c.W, c.H, minW, minH)
		}
		if i > 0 && c.Top < charts[i-1].Bottom {
			t.Errorf("chart %d (top %.0f) overlaps the one before (bottom %.0f)", i, c.Top, charts[i-1].Bottom)
		}
		if c.Clipped > 0 {
			t.Errorf("chart %d: %d labels run past its edge", i, c.Clipped)
		}
		lines += c.Lines
		marks += c.Marks
		env += c.Env
		if c.Env == 1 && (math.Abs(c.EnvBottom-220) > 0.5 || !strings.Contains(c.EnvTitle, "environment changed at this run: kernel of ")) {
			t.Errorf("chart %d: environment marker's bottom at y %.1f, want the x axis (220); title %q", i, c.EnvBottom, c.EnvTitle)
		}
		if c.Marks == 1 && (c.Env != 1 || math.Abs(c.MarkX-c.EnvX) > 1 || !strings.Contains(c.EnvTitle, envChanged)) {
			t.Errorf("chart %d: the change point at x %.1f has no environment marker beside it (x %.1f, %q)", i, c.MarkX, c.EnvX, c.EnvTitle)
		}
		if c.Cells > 0 {
			heat = i
		}
	}
	// 7 series of one pair, each a family of its own; only the varied one
	// (udp-500m-p1-l700's rate) is not flat, and a flat line has a zero-
	// height box: one line with geometry, and its drop marked once. The
	// fleet's family: a chart of 4 lines and a heat map. The kernel change
	// is marked in each of the 8 charts of lines.
	if len(charts) != 9 || lines != 5 || marks != 1 || env != 8 {
		t.Fatalf("charts %d, drawn lines %d, change point marks %d, environment markers %d: %+v", len(charts), lines, marks, env, charts)
	}
	if h := charts[max(heat, 0)]; heat < 1 || h.Cells != 24 || h.CellsInside != 24 || h.Red != 1 || h.Env != 0 || charts[heat-1].Lines != 4 {
		t.Fatalf("heat map (chart %d): %d cells drawn, %d inside it, %d red; want 4 nodes × 6 runs, all inside, the one 22 %% below red, under the fleet's chart: %+v", heat, h.Cells, h.CellsInside, h.Red, charts)
	}
}
