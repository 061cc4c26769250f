package history

import (
	"fmt"
	"html"
	"math"
	"sort"
	"strings"
)

// TrendSeries is one series as the trend page draws it: its points, oldest
// first, each with its run (Runs[i] is Points[i]'s) and the run's
// environment (Facts[i], nil or absent when not stored), the change points
// (Detect) and the open regression check reports (Open), if any.
type TrendSeries struct {
	Series       Series
	Points       []Point
	Runs         []Run
	Facts        []Facts
	ChangePoints []ChangePoint
	Open         *ChangePoint
	Acked        bool
}

const trendCSS = `
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:24px auto;max-width:1000px;color:#1a202c;line-height:1.4}
h1{font-size:1.6em}h2{border-bottom:1px solid #cbd5e0;padding-bottom:4px;margin-top:2em}h3{font-size:1.05em;margin-top:1.6em}
table{border-collapse:collapse;margin:8px 0 16px;font-size:0.86em;width:100%}
th,td{border:1px solid #cbd5e0;padding:4px 6px;text-align:left;vertical-align:top}
th{background:#edf2f7}
.badge{display:inline-block;border-radius:3px;padding:0 5px;font-size:0.92em;white-space:nowrap}
.ok{background:#c6f6d5;color:#22543d}.bad{background:#fed7d7;color:#742a2a}.none{background:#e2e8f0;color:#4a5568}
svg.chart{display:block;margin:8px 0 20px;background:#fff;border:1px solid #e2e8f0}
svg .grid{stroke:#e2e8f0;stroke-width:1}svg .line{fill:none;stroke-width:1.2;opacity:0.8}
svg .cp{stroke:#c53030;stroke-width:1.5;stroke-dasharray:4 3}svg .cpok{stroke:#2f855a;stroke-width:1.5;stroke-dasharray:4 3}
svg .env{fill:#d69e2e;stroke:#744210;stroke-width:1}
svg text{font-family:system-ui,sans-serif;fill:#2d3748;font-size:11px}svg .ctitle{font-size:13px;font-weight:600}
.note{color:#4a5568;font-size:0.9em}
`

var palette = []string{"#2b6cb0", "#dd6b20", "#38a169", "#805ad5", "#d53f8c", "#319795", "#b7791f", "#4a5568"}

// Trend renders the history's offline trend page: the open regressions on
// top (unacknowledged first), then one chart per series family (metric,
// profile, path, backend, mode) with a line per node or pair, the runs in
// time order on the x axis labelled where the build changes, and every
// change point marked (red: regression, green: improvement), and an amber
// triangle on the x axis at each run whose environment changed from the
// family's run before it (EnvNote, in its title). One self-contained HTML
// document: inline SVG, no script.
func Trend(title string, ss []TrendSeries) []byte {
	var b strings.Builder
	esc := html.EscapeString
	b.WriteString("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">")
	fmt.Fprintf(&b, "<title>%s</title><style>%s</style></head><body>\n<h1>%s</h1>\n", esc(title), trendCSS, esc(title))
	var open []TrendSeries
	for _, s := range ss {
		if s.Open != nil {
			open = append(open, s)
		}
	}
	sort.SliceStable(open, func(i, j int) bool { return !open[i].Acked && open[j].Acked })
	b.WriteString("<h2>Regressions in the newest run</h2>\n")
	if len(open) == 0 {
		b.WriteString("<p><span class=\"badge ok\">none</span></p>\n")
	} else {
		b.WriteString("<table><tr><th>state</th><th>series</th><th>since run</th><th>build</th><th>step</th><th>before → after</th><th>confidence</th></tr>\n")
		for _, s := range open {
			c := s.Open
			r := s.Runs[c.Index]
			state := `<span class="badge bad">regression</span>`
			if s.Acked {
				state = `<span class="badge none">acknowledged</span>`
			}
			fmt.Fprintf(&b, "<tr><td>%s</td><td>%s</td><td>%s<br>%s</td><td>%s</td><td>%+.1f %%</td><td>%.4g → %.4g</td><td>%.3f</td></tr>\n",
				state, esc(s.Series.Key()), esc(r.ID), r.StartedAt.Format("2006-01-02"), esc(r.BuildName()), c.Step*100, c.Before, c.After, c.Confidence)
		}
		b.WriteString("</table>\n")
	}
	fams := map[string][]TrendSeries{}
	var order []string
	for _, s := range ss {
		f := s.Series.Family()
		if _, ok := fams[f]; !ok {
			order = append(order, f)
		}
		fams[f] = append(fams[f], s)
	}
	sort.Strings(order)
	b.WriteString("<h2>Series</h2>\n<p class=\"note\">Dashed lines: change points (red a regression, green an improvement). " +
		"<span style=\"color:#d69e2e\">▲</span> on the x axis: the environment changed at that run (hover for what).</p>\n")
	for _, f := range order {
		fmt.Fprintf(&b, "<h3>%s</h3>\n", esc(strings.ReplaceAll(f, "|", " · ")))
		b.WriteString(trendChart(fams[f]))
		if len(fams[f]) >= heatMapNodes {
			b.WriteString(heatMap(fams[f]))
		}
	}
	b.WriteString("</body></html>\n")
	return []byte(b.String())
}

// heatMapNodes is how many nodes or pairs a family needs for a heat map.
const heatMapNodes = 3

// heatMapRuns is how many of the newest runs the heat map shows.
const heatMapRuns = 60

// heatMap is a fleet family's nodes over its newest runs: each cell the
// node's value against the family's median of that run (better or within
// 3 %: green; 3-10 % worse: yellow; more: red; a verdict: offloaded green,
// not red), so a node that fell behind the fleet on some night stands out.
func heatMap(ss []TrendSeries) string {
	const cell, rowH, top = 12.0, 14.0, 16.0
	// room for the longest node name (11 px text, ≈ 7 px a character)
	left := 150.0
	for _, s := range ss {
		left = max(left, 7*float64(len([]rune(s.Series.Node)))+10)
	}
	esc := html.EscapeString
	runs := familyRuns(ss)
	runs = runs[max(0, len(runs)-heatMapRuns):]
	col := map[string]int{}
	for i, r := range runs {
		col[r.ID] = i
	}
	median := map[string]float64{}
	for _, r := range runs {
		var vs []float64
		for _, s := range ss {
			for i, p := range s.Points {
				if s.Runs[i].ID == r.ID {
					vs = append(vs, p.Value)
				}
			}
		}
		sort.Float64s(vs)
		if len(vs) > 0 {
			median[r.ID] = vs[len(vs)/2]
		}
	}
	m := Metrics[ss[0].Series.Metric]
	nodes := append([]TrendSeries(nil), ss...)
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].Series.Node < nodes[j].Series.Node })
	// at least as wide as its title (13 px bold, ≈ 8 px a character)
	title := fmt.Sprintf("each node against the fleet's median, newest %d runs", len(runs))
	w, h := max(left+cell*float64(len(runs))+10, 8*float64(len(title))+10), top+rowH*float64(len(nodes))+20
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" xmlns="http://www.w3.org/2000/svg"><text class="ctitle" x="4" y="12">%s</text>`,
		w, h, w, h, esc(title))
	for row, s := range nodes {
		y := top + rowH*float64(row)
		fmt.Fprintf(&b, `<text x="%.0f" y="%.1f" text-anchor="end">%s</text>`, left-4, y+10, esc(s.Series.Node))
		for i, p := range s.Points {
			c, ok := col[s.Runs[i].ID]
			if !ok {
				continue
			}
			color, word := heatColor(m, p.Value, median[s.Runs[i].ID])
			fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s %s (%s): %.4g, %s</title></rect>`,
				left+cell*float64(c), y, cell-1, rowH-2, color, esc(s.Series.Node), esc(s.Runs[i].ID), esc(s.Runs[i].BuildName()), p.Value, word)
		}
	}
	b.WriteString("</svg>\n")
	return b.String()
}

// heatColor judges v against the run's fleet median med.
func heatColor(m Metric, v, med float64) (color, word string) {
	if m.Verdict {
		if v >= 1 {
			return "#9ae6b4", "offloaded"
		}
		return "#feb2b2", "not offloaded"
	}
	worse := 0.0 // how much worse than the median, relative
	if med != 0 {
		worse = (med - v) / math.Abs(med)
		if !m.HigherBetter {
			worse = -worse
		}
	}
	switch {
	case worse > 0.10:
		return "#feb2b2", fmt.Sprintf("%.1f %% worse than the fleet's median", worse*100)
	case worse > 0.03:
		return "#faf089", fmt.Sprintf("%.1f %% worse than the fleet's median", worse*100)
	}
	return "#9ae6b4", "within 3 % of the fleet's median or better"
}

// trendChart is one family's SVG: a line per node over the family's runs.
func trendChart(ss []TrendSeries) string {
	const w, h, left, right, top, bottom = 960.0, 260.0, 70.0, 10.0, 14.0, 40.0
	esc := html.EscapeString
	runs := familyRuns(ss)
	pos := map[string]int{}
	for i, r := range runs {
		pos[r.ID] = i
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, s := range ss {
		for _, p := range s.Points {
			lo, hi = math.Min(lo, p.Value), math.Max(hi, p.Value)
		}
	}
	if lo == hi {
		lo, hi = lo-1, hi+1
	}
	pad := (hi - lo) * 0.05
	lo, hi = lo-pad, hi+pad
	x := func(i int) float64 {
		if len(runs) < 2 {
			return left + (w-left-right)/2
		}
		return left + float64(i)*(w-left-right)/float64(len(runs)-1)
	}
	y := func(v float64) float64 { return top + (hi-v)/(hi-lo)*(h-top-bottom) }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" xmlns="http://www.w3.org/2000/svg">`, w, h, w, h)
	for k := 0; k <= 4; k++ {
		v := lo + (hi-lo)*float64(k)/4
		fmt.Fprintf(&b, `<line class="grid" x1="%.0f" x2="%.0f" y1="%.1f" y2="%.1f"/><text x="%.0f" y="%.1f" text-anchor="end">%.4g</text>`,
			left, w-right, y(v), y(v), left-4, y(v)+4, v)
	}
	prev := ""
	for i, r := range runs {
		if r.BuildName() != prev {
			fmt.Fprintf(&b, `<line class="grid" x1="%.1f" x2="%.1f" y1="%.0f" y2="%.0f"/><text x="%.1f" y="%.0f">%s</text>`,
				x(i), x(i), top, h-bottom, x(i)+2, h-bottom+14, esc(r.BuildName()))
			prev = r.BuildName()
		}
	}
	for k, s := range ss {
		var pts []string
		for i, p := range s.Points {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(pos[s.Runs[i].ID]), y(p.Value)))
		}
		fmt.Fprintf(&b, `<polyline class="line" stroke="%s" points="%s"><title>%s</title></polyline>`,
			palette[k%len(palette)], strings.Join(pts, " "), esc(s.Series.Node))
		for _, c := range s.ChangePoints {
			cls := "cpok"
			if c.Regression {
				cls = "cp"
			}
			xi := x(pos[s.Runs[c.Index].ID])
			fmt.Fprintf(&b, `<line class="%s" x1="%.1f" x2="%.1f" y1="%.0f" y2="%.0f"><title>%s: %+.1f %% at %s (%s), confidence %.3f</title></line>`,
				cls, xi, xi, top, h-bottom, esc(s.Series.Node), c.Step*100, esc(s.Runs[c.Index].ID), esc(s.Runs[c.Index].BuildName()), c.Confidence)
		}
	}
	// on top of the lines, so that their titles answer the pointer
	facts := familyFacts(ss)
	for i := 1; i < len(runs); i++ {
		note := EnvNote(facts[runs[i-1].ID], facts[runs[i].ID])
		if note == "" {
			continue
		}
		xi, yb := x(i), h-bottom
		fmt.Fprintf(&b, `<path class="env" d="M%.1f,%.1f l5,9 h-10 z"><title>%s (%s): %s</title></path>`,
			xi, yb-9, esc(runs[i].ID), esc(runs[i].BuildName()), esc(note))
	}
	if len(runs) > 0 {
		fmt.Fprintf(&b, `<text x="%.0f" y="%.0f">%s</text><text x="%.0f" y="%.0f" text-anchor="end">%s</text>`,
			left, h-6, runs[0].StartedAt.Format("2006-01-02"), w-right, h-6, runs[len(runs)-1].StartedAt.Format("2006-01-02"))
	}
	b.WriteString("</svg>\n")
	return b.String()
}

// familyFacts is the environment of every run of the family's series
// that has one stored, by run id.
func familyFacts(ss []TrendSeries) map[string]Facts {
	out := map[string]Facts{}
	for _, s := range ss {
		for i, f := range s.Facts {
			if i < len(s.Runs) && len(f) > 0 {
				out[s.Runs[i].ID] = f
			}
		}
	}
	return out
}

// familyRuns is every run of the family's series once, in time order.
func familyRuns(ss []TrendSeries) []Run {
	seen := map[string]Run{}
	for _, s := range ss {
		for _, r := range s.Runs {
			seen[r.ID] = r
		}
	}
	runs := make([]Run, 0, len(seen))
	for _, r := range seen {
		runs = append(runs, r)
	}
	sort.Slice(runs, func(i, j int) bool {
		if !runs[i].StartedAt.Equal(runs[j].StartedAt) {
			return runs[i].StartedAt.Before(runs[j].StartedAt)
		}
		return runs[i].ID < runs[j].ID
	})
	return runs
}
