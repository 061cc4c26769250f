package report

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

func init() {
	sections.Register(30, familySection{markdown: writeConnections, html: writeConnectionsHTML}, results.FamilyConnections)
}

// Connections returns every connection-scale result of the set, by path
// then N.
func (s *Set) Connections() []*results.ConnectionResult {
	out := gather(s, func(r *results.Results) []results.ConnectionResult { return r.Connections })
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Path != out[j].Path {
			return out[i].Path < out[j].Path
		}
		return out[i].N < out[j].N
	})
	return out
}

const connectionsIntro = "N concurrent TCP connections between the pair (iperf3 streams, 128 per process, each process with its control connection: *Opened*). " +
	"With port security each hypervisor's conntrack table was read every second or so during iperf3's omit period only (`connections.offload_wait`, left out of the numbers), never in the measured seconds: " +
	"*Offloaded* is the last read's `[HW_OFFLOAD]` connections of those opened, *Until all offloaded* the first read at which every one was (from the clients' start). " +
	"*Throughput* is the delivered rate of the measured seconds (`connections.duration`)."

// ConnectionRows are the connection-scale table's rows: one per N and
// hypervisor (one per N when the share is not applicable).
func ConnectionRows(cs []*results.ConnectionResult) (header []string, rows [][]string) {
	header = []string{"N", "Path", "Opened", "Hypervisor", "Offloaded", "Until all offloaded", "Throughput", "Table read", "Table fill"}
	for _, c := range cs {
		tput := results.FormatBps(c.DeliveredBps)
		if c.BitratePerConnectionBps > 0 {
			tput += fmt.Sprintf(" (cap %s per connection, %s offered)", results.FormatBps(float64(c.BitratePerConnectionBps)),
				results.FormatBps(float64(c.BitratePerConnectionBps)*float64(c.N)))
		}
		if c.Error != "" {
			tput = "error: " + c.Error
		}
		base := []string{fmt.Sprint(c.N), pathName(c.Path), fmt.Sprint(c.Opened)}
		if c.NotApplicable != "" || len(c.Hosts) == 0 {
			why := c.NotApplicable
			if why == "" {
				why = "no hypervisor read"
			}
			rows = append(rows, append(base, results.Dash, why, results.Dash, tput, results.Dash, results.Dash))
			continue
		}
		for _, h := range c.Hosts {
			share, until := results.Dash, results.Dash
			if h.Shared() {
				share = fmt.Sprintf("%s (%d of %d)", percent(h.Share), h.Offloaded, c.Opened)
				until = fmt.Sprintf("never within %gs", c.OffloadWaitSeconds)
				switch {
				case h.TimeToOffloadSeconds != nil:
					until = fmt.Sprintf("%.1f s", *h.TimeToOffloadSeconds)
				case h.Source == "ovs-userspace":
					until = "never: software conntrack"
				}
			} else {
				share = "no read: " + h.Reason
			}
			rows = append(rows, append(base, h.Hypervisor, share, until, tput, sourceName(h.Source), fillCell(h)))
		}
	}
	return header, rows
}

// fillCell is the table's fill at the last read: "full" when new
// connections were being dropped.
func fillCell(h results.ConnectionHost) string {
	switch {
	case h.TableMax == 0:
		return results.Dash
	case h.TableCount >= h.TableMax:
		return fmt.Sprintf("**full**: %d of %d", h.TableCount, h.TableMax)
	}
	return fmt.Sprintf("%d of %d", h.TableCount, h.TableMax)
}

func percent(share float64) string { return fmt.Sprintf("%.0f %%", 100*share) }

func sourceName(s string) string {
	switch s {
	case "kernel":
		return "kernel (`[HW_OFFLOAD]`)"
	case "ovs-userspace":
		return "OVS userspace (software)"
	}
	return orDash(s)
}

// ConnectionFindings say, with the numbers, where the offloaded share
// falls as N grows: per path and hypervisor, the first N whose share is
// below the smaller N's before it (or below 100 % at the smallest N); the
// hypervisors whose table is OVS's userspace one (software at every N);
// and the counts without conntrack.
func ConnectionFindings(cs []*results.ConnectionResult) []string {
	type key struct {
		path results.Path
		hv   string
	}
	type point struct {
		n, opened, off int
		share          float64
		source         string
		full           string
	}
	series := map[key][]point{}
	var keys []key
	var na []string
	for _, c := range cs {
		if c.NotApplicable != "" {
			na = append(na, fmt.Sprint(c.N))
			continue
		}
		for _, h := range c.Hosts {
			if !h.Shared() {
				continue
			}
			k := key{c.Path, h.Hypervisor}
			if _, ok := series[k]; !ok {
				keys = append(keys, k)
			}
			full := ""
			if h.TableMax > 0 && h.TableCount >= h.TableMax {
				full = fmt.Sprintf(" The table was full (%d of %d entries): new connections were dropped, not left in software.", h.TableCount, h.TableMax)
			}
			series[k] = append(series[k], point{c.N, c.Opened, h.Offloaded, h.Share, h.Source, full})
		}
	}
	var out []string
	for _, k := range keys {
		ps := series[k]
		sort.Slice(ps, func(i, j int) bool { return ps[i].n < ps[j].n })
		if all(ps, func(p point) bool { return p.source == "ovs-userspace" }) {
			out = append(out, fmt.Sprintf("%s (%s): every N's connections are in OVS's userspace conntrack, software at every N (0 %% offloaded by construction).", k.hv, pathName(k.path)))
			continue
		}
		fell := false
		for i, p := range ps {
			switch {
			case i == 0 && p.share < 1:
				out = append(out, fmt.Sprintf("On %s (%s) the share is below 100 %% already at the smallest N: at N=%d %s (%d of %d).%s", k.hv, pathName(k.path), p.n, percent(p.share), p.off, p.opened, p.full))
				fell = true
			case i > 0 && p.share < ps[i-1].share:
				q := ps[i-1]
				out = append(out, fmt.Sprintf("At N=%d the share fell to %s on %s (%s): %d of %d, from %s (%d of %d) at N=%d.%s",
					p.n, percent(p.share), k.hv, pathName(k.path), p.off, p.opened, percent(q.share), q.off, q.opened, q.n, p.full))
				fell = true
			}
		}
		if !fell {
			out = append(out, fmt.Sprintf("On %s (%s) the share never falls: %s at N=%d, %s at N=%d.", k.hv, pathName(k.path),
				percent(ps[0].share), ps[0].n, percent(ps[len(ps)-1].share), ps[len(ps)-1].n))
		}
	}
	if len(na) > 0 {
		out = append(out, fmt.Sprintf("N=%s: no share, port security was off (no conntrack on the path); the throughput stands.", strings.Join(na, ", ")))
	}
	return out
}

func all[T any](xs []T, f func(T) bool) bool {
	for _, x := range xs {
		if !f(x) {
			return false
		}
	}
	return len(xs) > 0
}

func connectionsSection(cs []*results.ConnectionResult) tableSection {
	h, rows := ConnectionRows(cs)
	return tableSection{heading: "Connection scale: offloaded share against N", intro: connectionsIntro, header: h, rows: rows, findings: ConnectionFindings(cs)}
}

func writeConnections(b *strings.Builder, s *Set) {
	if cs := s.Connections(); len(cs) > 0 {
		connectionsSection(cs).md(b, true)
	}
}

func writeConnectionsHTML(b *strings.Builder, s *Set) {
	if cs := s.Connections(); len(cs) > 0 {
		connectionsSection(cs).html(b, connectionsChart(cs))
	}
}

// connectionsChart draws the offloaded share (0..100 %) against N on a
// logarithmic axis, one line per path and hypervisor; the counts without
// a share are not drawn (the table says why).
func connectionsChart(cs []*results.ConnectionResult) string {
	type pt struct {
		n     int
		share float64
		title string
	}
	type line struct {
		name string
		pts  []pt
	}
	var lines []*line
	byName := map[string]*line{}
	maxN := 1
	for _, c := range cs {
		for _, h := range c.Hosts {
			if !h.Shared() {
				continue
			}
			name := h.Hypervisor + " (" + pathName(c.Path) + ")"
			l := byName[name]
			if l == nil {
				l = &line{name: name}
				byName[name] = l
				lines = append(lines, l)
			}
			l.pts = append(l.pts, pt{c.N, h.Share, fmt.Sprintf("%s, N=%d: %s (%d of %d)", name, c.N, percent(h.Share), h.Offloaded, c.Opened)})
			maxN = max(maxN, c.N)
		}
	}
	if len(lines) == 0 {
		return ""
	}
	const w, h, left, right, top, bottom = 640.0, 280.0, 60.0, 20.0, 30.0, 60.0
	decades := math.Max(1, math.Ceil(math.Log10(float64(maxN))))
	x := func(n int) float64 { return left + (w-left-right)*math.Log10(float64(n))/decades }
	y := func(share float64) float64 { return top + (h-top-bottom)*(1-share) }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" role="img" aria-label="offloaded share against N">`, w, h, w, h)
	fmt.Fprintf(&b, `<text class="ctitle" x="%.0f" y="18">Connections [HW_OFFLOAD] at the last read, against N</text>`, left)
	for i := 0; i <= 4; i++ {
		v := float64(i) / 4
		fmt.Fprintf(&b, `<line class="grid" x1="%.0f" x2="%.0f" y1="%.1f" y2="%.1f"/>`, left, w-right, y(v), y(v))
		fmt.Fprintf(&b, `<text class="tick" x="%.0f" y="%.1f" text-anchor="end">%.0f %%</text>`, left-6, y(v)+4, 100*v)
	}
	for d := 0.0; d <= decades; d++ {
		n := int(math.Pow(10, d))
		fmt.Fprintf(&b, `<text class="tick" x="%.1f" y="%.0f" text-anchor="middle">%d</text>`, x(n), h-bottom+16, n)
	}
	fmt.Fprintf(&b, `<text class="axis" x="%.0f" y="%.0f" text-anchor="middle">N (concurrent connections, log scale)</text>`, (left+w-right)/2, h-bottom+32)
	for i, l := range lines {
		sort.Slice(l.pts, func(a, c int) bool { return l.pts[a].n < l.pts[c].n })
		col := runPalette[i%len(runPalette)]
		var coords []string
		for _, p := range l.pts {
			coords = append(coords, fmt.Sprintf("%.1f,%.1f", x(p.n), y(p.share)))
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>`, col, strings.Join(coords, " "))
		for _, p := range l.pts {
			fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="4" fill="%s"><title>%s</title></circle>`, x(p.n), y(p.share), col, esc(p.title))
		}
		fmt.Fprintf(&b, `<text class="legend" x="%.0f" y="%.0f" fill="%s">%s</text>`, left+float64(i%3)*190, h-8, col, esc(l.name))
	}
	b.WriteString("</svg>\n")
	return b.String()
}
