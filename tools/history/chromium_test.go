package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"
)

// trendProbe measures the trend page's charts as laid out by the browser:
// each chart's size, the node lines with non-zero geometry, the change
// point marks and the heat map's cells.
const trendProbe = `<script>
(function(){
  var out = [];
  document.querySelectorAll("svg.chart").forEach(function(svg){
    var r = svg.getBoundingClientRect(), lines = 0, marks = 0, cells = 0;
    svg.querySelectorAll("polyline.line").forEach(function(e){ var b = e.getBBox(); if (b.width > 0 && b.height > 0) lines++; });
    svg.querySelectorAll("line.cp, line.cpok").forEach(function(e){ var b = e.getBBox(); if (b.height > 0) marks++; });
    svg.querySelectorAll("rect").forEach(function(e){ var b = e.getBBox(); if (b.width > 0 && b.height > 0) cells++; });
    out.push({w: r.width, h: r.height, lines: lines, marks: marks, cells: cells});
  });
  var pre = document.createElement("pre");
  pre.id = "probe";
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
</script>`

// Renders the trend page of a 14-night history with a 25 % drop in Debian's
// headless Chromium (as tools/report's report.html is checked) and asserts
// every chart is laid out, every series drawn and the drop marked.
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
		W, H                float64
		Lines, Marks, Cells int
	}
	if err := json.Unmarshal(bytes.ReplaceAll(m[1], []byte("&quot;"), []byte(`"`)), &charts); err != nil {
		t.Fatalf("probe JSON: %v: %s", err, m[1])
	}
	lines, marks := 0, 0
	for _, c := range charts {
		if c.W < 100 || c.H < 100 {
			t.Errorf("chart laid out at %.0fx%.0f", c.W, c.H)
		}
		lines += c.Lines
		marks += c.Marks
	}
	// 7 series of one pair, each a family of its own; only the varied one
	// (udp-500m-p1-l700's rate) is not flat, and a flat line has a zero-
	// height box: one line with geometry, and its drop marked once.
	if len(charts) != 7 || lines != 1 || marks != 1 {
		t.Fatalf("charts %d, drawn lines %d, change point marks %d: %+v", len(charts), lines, marks, charts)
	}
}
