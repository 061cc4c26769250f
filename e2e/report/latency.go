package report

import (
	"fmt"
	"math"
	"strings"

	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

func init() {
	sections.Register(20, familySection{markdown: writeLatency, html: writeLatencyHTML}, results.FamilyLatency)
}

// LatencyEntry is one latency result of the set, with its file.
type LatencyEntry struct {
	L    *results.LatencyResult
	File *results.Results
}

// Latencies returns the set's latency results in catalogue order, ASAP²
// before baseline within a profile; ids outside the catalogue come last.
func (s *Set) Latencies() []LatencyEntry {
	order := map[string]int{}
	for i, l := range results.LatencyCatalogue() {
		order[l.ID] = i
	}
	rank := func(id string) int {
		if i, ok := order[id]; ok {
			return i
		}
		return len(order)
	}
	var out []LatencyEntry
	for _, f := range s.Files {
		for i := range f.Latency {
			out = append(out, LatencyEntry{L: &f.Latency[i], File: f})
		}
	}
	// stable insertion sort: few entries
	for i := 1; i < len(out); i++ {
		for j := i; j > 0; j-- {
			a, b := out[j-1].L, out[j].L
			if rank(a.ID) < rank(b.ID) || (rank(a.ID) == rank(b.ID) && (a.Path == b.Path || a.Path == results.PathASAP2)) {
				break
			}
			out[j-1], out[j] = out[j], out[j-1]
		}
	}
	return out
}

// us writes a round trip in microseconds for a table cell.
func us(v float64) string {
	if v >= 100 {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.1f", v)
}

// LatencyTable is the methodology-style table of the sockperf profiles:
// profile, path, p50/p99/p99.9/max (µs, round trip), samples, message size,
// duration; and FirstPacketTable the first-packet profile's.
func LatencyTable(es []LatencyEntry) (header []string, rows [][]string) {
	header = []string{"Profile", "Path", "p50 µs", "p99 µs", "p99.9 µs", "max µs", "Samples", "Message size", "Duration"}
	for _, e := range es {
		l := e.L
		if l.Kind == results.LatencyFirstPacket {
			continue
		}
		if !l.OK() {
			rows = append(rows, []string{l.Name, pathName(l.Path), results.Dash, results.Dash, results.Dash, results.Dash, "failed", bytesCell(l.MessageBytes), secondsCell(l.DurationSeconds)})
			continue
		}
		rows = append(rows, []string{l.Name, pathName(l.Path), us(l.P50Us), us(l.P99Us), us(l.P999Us), us(l.MaxUs),
			fmt.Sprintf("%d", l.Samples), bytesCell(l.MessageBytes), secondsCell(l.DurationSeconds)})
	}
	return header, rows
}

// FirstPacketTable is the first-packet profile: the first echo of each
// fresh flow against the same flows' later echoes.
func FirstPacketTable(es []LatencyEntry) (header []string, rows [][]string) {
	header = []string{"Profile", "Path", "First packet median µs", "First packet max µs", "Steady p50 µs", "First / steady", "Flows (first echo lost)", "Idle gap"}
	for _, e := range es {
		l := e.L
		if l.Kind != results.LatencyFirstPacket {
			continue
		}
		if !l.OK() || l.First == nil {
			rows = append(rows, []string{l.Name, pathName(l.Path), results.Dash, results.Dash, results.Dash, results.Dash, "failed", results.Dash})
			continue
		}
		f := l.First
		ratio := results.Dash
		if f.SteadyP50Us > 0 {
			ratio = fmt.Sprintf("%.1f×", f.Ratio())
		}
		rows = append(rows, []string{l.Name, pathName(l.Path), us(f.FirstMedianUs), us(f.FirstMaxUs), us(f.SteadyP50Us), ratio,
			fmt.Sprintf("%d (%d)", f.Flows, f.FirstLost), secondsCell(f.IdleGapSeconds)})
	}
	return header, rows
}

func bytesCell(n int) string {
	if n <= 0 {
		return results.Dash
	}
	return fmt.Sprintf("%d B", n)
}

func secondsCell(s float64) string {
	if s <= 0 {
		return results.Dash
	}
	return fmt.Sprintf("%g s", s)
}

// latencyNotes say what each row rests on: the tool, the load of an
// under-load row, warnings, and why a row failed.
func latencyNotes(es []LatencyEntry) []string {
	var notes []string
	for _, e := range es {
		l := e.L
		who := fmt.Sprintf("%s (%s)", l.ID, pathName(l.Path))
		if l.Load != nil {
			ld := l.Load
			if ld.Error != "" {
				notes = append(notes, fmt.Sprintf("%s: load iperf3 %s failed: %s", who, ld.Profile, ld.Error))
			} else {
				notes = append(notes, fmt.Sprintf("%s: measured while iperf3 %s delivered %s (load of %g s, sockperf after %g s)",
					who, ld.Profile, results.FormatBps(ld.DeliveredBps), ld.DurationSeconds, ld.SettleSeconds))
			}
		}
		if l.Error != "" {
			notes = append(notes, fmt.Sprintf("%s failed: %s", who, l.Error))
		}
		for _, w := range l.Warnings {
			notes = append(notes, who+": "+w)
		}
	}
	return notes
}

const latencyIntro = "Round trips in microseconds between the two guests over the data network: sockperf ping-pong (UDP, `--full-rtt`; " +
	"percentiles over the valid window, its 400 ms warm-up excluded) at idle and beside an iperf3 flow, and the first echo of fresh " +
	"flows (ping after an idle gap longer than OVS's flow idle timeout, so it takes the datapath's miss path) against the same flows' later echoes."

// writeLatency is the markdown section; nothing when the set has no
// latency result (files written before latency existed render as before).
func writeLatency(b *strings.Builder, s *Set) {
	es := s.Latencies()
	if len(es) == 0 {
		return
	}
	b.WriteString("\n## Latency\n\n" + latencyIntro + "\n\n")
	if h, rows := LatencyTable(es); len(rows) > 0 {
		b.WriteString(mdTable(h, rows) + "\n")
	}
	if h, rows := FirstPacketTable(es); len(rows) > 0 {
		b.WriteString("### First packet of a new flow\n\n")
		b.WriteString(mdTable(h, rows) + "\n")
	}
	if notes := latencyNotes(es); len(notes) > 0 {
		for _, n := range notes {
			b.WriteString("- " + strings.ReplaceAll(n, "\n", " ") + "\n")
		}
		b.WriteString("\n")
	}
}

// writeLatencyHTML is the HTML section: the chart, then the tables.
func writeLatencyHTML(b *strings.Builder, s *Set) {
	es := s.Latencies()
	if len(es) == 0 {
		return
	}
	fmt.Fprintf(b, "<h2>Latency</h2>\n<p class=\"note\">%s</p>\n", mdInline(latencyIntro))
	b.WriteString(latencyChart(es))
	var md strings.Builder
	if h, rows := LatencyTable(es); len(rows) > 0 {
		md.WriteString(mdTable(h, rows) + "\n")
	}
	if h, rows := FirstPacketTable(es); len(rows) > 0 {
		md.WriteString("### First packet of a new flow\n\n" + mdTable(h, rows) + "\n")
	}
	for _, n := range latencyNotes(es) {
		md.WriteString("- " + strings.ReplaceAll(n, "\n", " ") + "\n")
	}
	b.WriteString(mdToHTML(md.String()))
}

// latencyBar is one bar of the latency chart: a value, a whisker up to
// high with a cap at mid, and a tick at mark (0 = none).
type latencyBar struct {
	path             results.Path
	value, mid, high float64
	mark             float64
	title            string
}

// latencyChart draws, per latency profile, ASAP² beside baseline on a
// logarithmic µs axis (tails are often 100× the median): for sockperf
// profiles a bar to p50, a whisker to p99.9 with a cap at p99, and a dot at
// max; for the first-packet profile a bar to the first echo's median, a
// whisker to its max, and a tick at the steady state's p50.
func latencyChart(es []LatencyEntry) string {
	type group struct {
		label string
		bars  []latencyBar
	}
	var groups []group
	idx := map[string]int{}
	lo, hi := math.Inf(1), 0.0
	for _, e := range es {
		l := e.L
		if !l.OK() {
			continue
		}
		var bar latencyBar
		if l.Kind == results.LatencyFirstPacket {
			f := l.First
			bar = latencyBar{path: l.Path, value: f.FirstMedianUs, mid: f.FirstMedianUs, high: f.FirstMaxUs, mark: f.SteadyP50Us,
				title: fmt.Sprintf("%s %s: first packet median %s, max %s; steady p50 %s", l.ID, pathName(l.Path),
					results.FormatMicros(f.FirstMedianUs), results.FormatMicros(f.FirstMaxUs), results.FormatMicros(f.SteadyP50Us))}
		} else {
			bar = latencyBar{path: l.Path, value: l.P50Us, mid: l.P99Us, high: l.P999Us, mark: l.MaxUs,
				title: fmt.Sprintf("%s %s: p50 %s, p99 %s, p99.9 %s, max %s (%d samples)", l.ID, pathName(l.Path),
					results.FormatMicros(l.P50Us), results.FormatMicros(l.P99Us), results.FormatMicros(l.P999Us), results.FormatMicros(l.MaxUs), l.Samples)}
		}
		for _, v := range []float64{bar.value, bar.mid, bar.high, bar.mark} {
			if v > 0 {
				lo, hi = math.Min(lo, v), math.Max(hi, v)
			}
		}
		i, ok := idx[l.ID]
		if !ok {
			i = len(groups)
			idx[l.ID] = i
			groups = append(groups, group{label: l.ID})
		}
		groups[i].bars = append(groups[i].bars, bar)
	}
	if len(groups) == 0 {
		return ""
	}
	const (
		w, h                   = 960, 340
		left, right, top, base = 70, 20, 40, 290
	)
	// The axis starts at least a factor 3 below the smallest value, so
	// that the smallest bar is visible.
	decLo, decHi := math.Floor(math.Log10(lo/3)), math.Ceil(math.Log10(hi))
	if decHi <= decLo {
		decHi = decLo + 1
	}
	y := func(v float64) float64 {
		if v <= 0 {
			return base
		}
		return float64(base) - (math.Log10(v)-decLo)/(decHi-decLo)*float64(base-top)
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart latency" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %d %d" width="%d" height="%d" role="img" aria-label="Latency, round trip">`, w, h, w, h)
	for d := decLo; d <= decHi; d++ {
		v := math.Pow(10, d)
		yy := y(v)
		fmt.Fprintf(&b, `<line class="grid" x1="%d" x2="%d" y1="%.1f" y2="%.1f"/>`, left, w-right, yy, yy)
		fmt.Fprintf(&b, `<text class="tick" x="%d" y="%.1f" text-anchor="end">%s</text>`, left-6, yy+4, fmtTick(v))
	}
	fmt.Fprintf(&b, `<text class="axis" x="14" y="%d" transform="rotate(-90 14 %d)" text-anchor="middle">µs, round trip (log)</text>`, (top+base)/2, (top+base)/2)
	gw := float64(w-left-right) / float64(len(groups))
	barW := math.Min(gw*0.3, 60)
	for i, g := range groups {
		gx := float64(left) + gw*float64(i)
		for j, path := range []results.Path{results.PathASAP2, results.PathBaseline} {
			x := gx + gw/2 - barW - 4 + float64(j)*(barW+8)
			color := colASAP2
			if path == results.PathBaseline {
				color = colBaseline
			}
			var bar *latencyBar
			for k := range g.bars {
				if g.bars[k].path == path {
					bar = &g.bars[k]
					break
				}
			}
			if bar == nil {
				fmt.Fprintf(&b, `<text class="missing" x="%.1f" y="%d" text-anchor="middle">—</text>`, x+barW/2, base-6)
				continue
			}
			vy := y(bar.value)
			fmt.Fprintf(&b, `<rect class="bar latency-p50" x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s</title></rect>`,
				x, vy, barW, float64(base)-vy, color, esc(bar.title))
			cx := x + barW/2
			fmt.Fprintf(&b, `<line class="whisker" x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f"/>`, cx, cx, vy, y(bar.high))
			for _, v := range []float64{bar.mid, bar.high} {
				fmt.Fprintf(&b, `<line class="whisker" x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f"/>`, cx-barW/4, cx+barW/4, y(v), y(v))
			}
			if bar.mark > 0 {
				fmt.Fprintf(&b, `<circle class="mark" cx="%.1f" cy="%.1f" r="3" fill="#1a202c"/>`, cx, y(bar.mark))
			}
			fmt.Fprintf(&b, `<text class="val" x="%.1f" y="%.1f" text-anchor="start">%s</text>`, cx+barW/4+3, vy-3, esc(results.FormatMicros(bar.value)))
		}
		fmt.Fprintf(&b, `<text class="rowlabel" x="%.1f" y="%d" text-anchor="middle">%s</text>`, gx+gw/2, base+18, esc(g.label))
	}
	fmt.Fprintf(&b, `<line class="axisline" x1="%d" x2="%d" y1="%d" y2="%d"/>`, left, w-right, base, base)
	fmt.Fprintf(&b, `<rect x="%d" y="10" width="12" height="12" fill="%s"/><text class="legend" x="%d" y="21">ASAP²</text>`, left, colASAP2, left+16)
	fmt.Fprintf(&b, `<rect x="%d" y="10" width="12" height="12" fill="%s"/><text class="legend" x="%d" y="21">Baseline</text>`, left+70, colBaseline, left+86)
	fmt.Fprintf(&b, `<text class="legend" x="%d" y="21">bar: p50 (first packet: its median) · whisker: p99 cap, p99.9 top (first packet: max) · dot: max (first packet: steady p50)</text>`, left+160)
	b.WriteString(`</svg>`)
	return b.String()
}
