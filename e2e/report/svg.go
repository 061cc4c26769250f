package report

import (
	"fmt"
	"html"
	"math"
	"strings"

	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// Colours of the two paths and their light (offered) variants.
const (
	colASAP2        = "#1a7f64"
	colASAP2Light   = "#a8dccb"
	colBaseline     = "#c05621"
	colBaselineLite = "#f5c9a9"
)

var runPalette = []string{"#1a7f64", "#2b6cb0", "#6b46c1", "#b7791f", "#c05621", "#c53030", "#2c7a7b", "#4a5568"}

func esc(s string) string { return html.EscapeString(s) }

// niceMax rounds v up to 1, 2, 2.5 or 5 times a power of ten.
func niceMax(v float64) float64 {
	if v <= 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*p >= v*1.0001 {
			return m * p
		}
	}
	return 10 * p
}

// rateAxis picks a unit for an axis whose maximum is max bps.
func rateAxis(max float64) (div float64, unit string) {
	switch {
	case max >= 1e9:
		return 1e9, "Gbit/s"
	case max >= 1e6:
		return 1e6, "Mbit/s"
	case max >= 1e3:
		return 1e3, "Kbit/s"
	}
	return 1, "bit/s"
}

func fmtTick(v float64) string {
	return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.2f", v), "0"), ".")
}

type barSide struct {
	p     *results.ProfileResult
	color string
	light string
	name  string
}

// barChart draws, per row, the ASAP² and baseline delivered medians (with a
// min–max whisker over repeats); for UDP a light bar behind shows the
// offered rate and the loss is written above.
func barChart(t Table) string {
	const (
		w, h                   = 960, 360
		left, right, top, base = 70, 20, 40, 290
	)
	udp := t.Kind != TableTCP
	max := 0.0
	for _, r := range t.Rows {
		for _, p := range []*results.ProfileResult{r.ASAP2, r.Baseline} {
			if p == nil || p.Summary.Delivered.N == 0 {
				continue
			}
			max = math.Max(max, p.Summary.Delivered.Max)
			if udp {
				max = math.Max(max, p.Summary.Offered.Max)
			}
		}
	}
	top2 := niceMax(max)
	div, unit := rateAxis(top2)
	plotH := float64(base - top)
	y := func(v float64) float64 { return float64(base) - v/top2*plotH }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart bars" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %d %d" width="%d" height="%d" role="img" aria-label="%s">`, w, h, w, h, esc(t.Title))
	for i := 0; i <= 5; i++ {
		v := top2 * float64(i) / 5
		yy := y(v)
		fmt.Fprintf(&b, `<line class="grid" x1="%d" x2="%d" y1="%.1f" y2="%.1f"/>`, left, w-right, yy, yy)
		fmt.Fprintf(&b, `<text class="tick" x="%d" y="%.1f" text-anchor="end">%s</text>`, left-6, yy+4, fmtTick(v/div))
	}
	fmt.Fprintf(&b, `<text class="axis" x="14" y="%d" transform="rotate(-90 14 %d)" text-anchor="middle">%s</text>`, (top+base)/2, (top+base)/2, unit)
	n := len(t.Rows)
	if n == 0 {
		n = 1
	}
	group := float64(w-left-right) / float64(n)
	barW := math.Min(group*0.34, 60)
	for i, r := range t.Rows {
		gx := float64(left) + group*float64(i)
		sides := []barSide{{r.ASAP2, colASAP2, colASAP2Light, "ASAP²"}, {r.Baseline, colBaseline, colBaselineLite, "Baseline"}}
		for j, sd := range sides {
			x := gx + group/2 - barW - 2 + float64(j)*(barW+4)
			if sd.p == nil || sd.p.Summary.Delivered.N == 0 {
				fmt.Fprintf(&b, `<text class="missing" x="%.1f" y="%d" text-anchor="middle">—</text>`, x+barW/2, base-6)
				continue
			}
			sm := sd.p.Summary
			if udp {
				oy := y(sm.Offered.Median)
				fmt.Fprintf(&b, `<rect class="bar offered" x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s offered %s</title></rect>`,
					x, oy, barW, float64(base)-oy, sd.light, sd.name, results.FormatBps(sm.Offered.Median))
			}
			dy := y(sm.Delivered.Median)
			fmt.Fprintf(&b, `<rect class="bar delivered" x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s delivered %s</title></rect>`,
				x+func() float64 {
					if udp {
						return barW * 0.2
					}
					return 0
				}(), dy, func() float64 {
					if udp {
						return barW * 0.6
					}
					return barW
				}(), float64(base)-dy, sd.color, sd.name, results.FormatBps(sm.Delivered.Median))
			if sm.Delivered.N > 1 {
				cx := x + barW/2
				fmt.Fprintf(&b, `<line class="whisker" x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f"/>`, cx, cx, y(sm.Delivered.Min), y(sm.Delivered.Max))
			}
			label := results.FormatBps(sm.Delivered.Median)
			labelY := dy - 4
			if udp {
				label = results.FormatLoss(sm.Loss.Median) + " loss"
				labelY = math.Min(dy, y(sm.Offered.Median)) - 4
			}
			fmt.Fprintf(&b, `<text class="val" x="%.1f" y="%.1f" text-anchor="middle">%s</text>`, x+barW/2, labelY, esc(label))
		}
		fmt.Fprintf(&b, `<text class="rowlabel" x="%.1f" y="%d" text-anchor="middle">%s</text>`, gx+group/2, base+18, esc(shortLabel(r.Shape)))
		if r.GainCell != results.Dash {
			fmt.Fprintf(&b, `<text class="gain" x="%.1f" y="%d" text-anchor="middle">%s</text>`, gx+group/2, base+34, esc(gainShort(r, t.Kind == TableTCP)))
		}
	}
	fmt.Fprintf(&b, `<line class="axisline" x1="%d" x2="%d" y1="%d" y2="%d"/>`, left, w-right, base, base)
	// legend
	lx := left
	fmt.Fprintf(&b, `<rect x="%d" y="10" width="12" height="12" fill="%s"/><text class="legend" x="%d" y="21">ASAP² delivered</text>`, lx, colASAP2, lx+16)
	fmt.Fprintf(&b, `<rect x="%d" y="10" width="12" height="12" fill="%s"/><text class="legend" x="%d" y="21">Baseline delivered</text>`, lx+120, colBaseline, lx+136)
	if udp {
		fmt.Fprintf(&b, `<rect x="%d" y="10" width="12" height="12" fill="%s"/><text class="legend" x="%d" y="21">offered</text>`, lx+250, colASAP2Light, lx+266)
	}
	b.WriteString(`</svg>`)
	return b.String()
}

func shortLabel(sh results.Shape) string {
	s := fmt.Sprintf("P%d", sh.Streams)
	if sh.LengthBytes > 0 {
		s += fmt.Sprintf(" l%d", sh.LengthBytes)
	}
	return s
}

func gainShort(r Row, whole bool) string {
	if !r.HasGain {
		return ""
	}
	if math.Abs(r.Gain-1) <= ParityTolerance {
		return "parity"
	}
	return results.FormatGain(r.Gain, whole)
}

type lineSeries struct {
	name  string
	color string
	iv    []results.Interval
	worst *results.Interval
	dash  bool
}

// intervalChart draws every run's per-interval rate of one profile shape as
// lines (both paths, every repeat), marking each run's worst interval.
func intervalChart(title string, series []lineSeries) string {
	const (
		w, h                   = 960, 300
		left, right, top, base = 70, 190, 36, 250
	)
	maxY, minX, maxX := 0.0, math.Inf(1), math.Inf(-1)
	for _, s := range series {
		for _, iv := range s.iv {
			maxY = math.Max(maxY, iv.Bps)
			minX = math.Min(minX, iv.Start)
			maxX = math.Max(maxX, iv.End)
		}
	}
	if !(maxX > minX) {
		// One instant: show one second from it. At |minX| >= 2^53 adding
		// 1 changes nothing, so take the next float64 instead.
		maxX = minX + 1
		if !(maxX > minX) {
			maxX = math.Nextafter(minX, math.Inf(1))
		}
	}
	// half is half the x range: maxX-minX overflows to +Inf for a range
	// like -1e308..1e308, half of it never does.
	half := maxX/2 - minX/2
	topY := niceMax(maxY)
	div, unit := rateAxis(topY)
	x := func(v float64) float64 { return float64(left) + (v/2-minX/2)/half*float64(w-left-right) }
	y := func(v float64) float64 { return float64(base) - v/topY*float64(base-top) }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart intervals" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %d %d" width="%d" height="%d" role="img" aria-label="%s">`, w, h, w, h, esc(title))
	for i := 0; i <= 5; i++ {
		v := topY * float64(i) / 5
		fmt.Fprintf(&b, `<line class="grid" x1="%d" x2="%d" y1="%.1f" y2="%.1f"/>`, left, w-right, y(v), y(v))
		fmt.Fprintf(&b, `<text class="tick" x="%d" y="%.1f" text-anchor="end">%s</text>`, left-6, y(v)+4, fmtTick(v/div))
	}
	// At most maxXTicks labels, whatever the range: stepping t += step
	// until t passes maxX+1e-9 never ended where t+step == t (times near
	// 1e17 s) and took 1e-9/step rounds for a tiny range (all intervals
	// within 1e-15 s: 5 million labels, 14 s per report).
	step := niceStep(half / 4)
	first := math.Ceil(minX/step) * step
	for i, prev := 0, math.NaN(); i < maxXTicks; i++ {
		t := first + float64(i)*step
		if t > maxX+step*1e-6 || t == prev {
			break
		}
		prev = t
		fmt.Fprintf(&b, `<text class="tick" x="%.1f" y="%d" text-anchor="middle">%s</text>`, x(t), base+16, fmtTick(t))
	}
	fmt.Fprintf(&b, `<text class="axis" x="%d" y="%d" text-anchor="middle">seconds</text>`, (left+w-right)/2, base+34)
	fmt.Fprintf(&b, `<text class="axis" x="14" y="%d" transform="rotate(-90 14 %d)" text-anchor="middle">%s</text>`, (top+base)/2, (top+base)/2, unit)
	fmt.Fprintf(&b, `<line class="axisline" x1="%d" x2="%d" y1="%d" y2="%d"/>`, left, w-right, base, base)
	for i, s := range series {
		if len(s.iv) == 0 {
			continue
		}
		var pts []string
		for _, iv := range s.iv {
			// each interval is drawn at its midpoint, so a dip sits where it happened
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x((iv.Start+iv.End)/2), y(iv.Bps)))
		}
		dash := ""
		if s.dash {
			dash = ` stroke-dasharray="6 3"`
		}
		fmt.Fprintf(&b, `<polyline class="series" fill="none" stroke="%s" stroke-width="2"%s points="%s"><title>%s</title></polyline>`, s.color, dash, strings.Join(pts, " "), esc(s.name))
		if s.worst != nil {
			wx, wy := x((s.worst.Start+s.worst.End)/2), y(s.worst.Bps)
			fmt.Fprintf(&b, `<circle class="worst" cx="%.1f" cy="%.1f" r="4" fill="%s"><title>worst interval %.0f–%.0f s: %s</title></circle>`, wx, wy, s.color, s.worst.Start, s.worst.End, results.FormatBps(s.worst.Bps))
		}
		ly := top + 14 + i*18
		fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="%s" stroke-width="3"%s/>`, w-right+10, w-right+30, ly-4, ly-4, s.color, dash)
		fmt.Fprintf(&b, `<text class="legend" x="%d" y="%d">%s</text>`, w-right+36, ly, esc(s.name))
	}
	b.WriteString(`</svg>`)
	return b.String()
}

// maxXTicks bounds the time-axis labels of an interval chart: a step of
// range/8 rounded up to 1, 2 or 5 times a power of ten leaves at most 9 in
// range, and one more covers rounding.
const maxXTicks = 10

// niceStep rounds v up to 1, 2 or 5 times a power of ten (axis tick steps).
func niceStep(v float64) float64 {
	if v <= 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}
