package report

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// cpuProfiles are the profiles with a CPU summary, in table order.
func cpuProfiles(s *Set) []*results.ProfileResult {
	var out []*results.ProfileResult
	for _, p := range sortedProfiles(s.Profiles()) {
		if p.Summary.CPU != nil {
			out = append(out, p)
		}
	}
	return out
}

// statCell is "median (min–max)" of a Stat in cores, "—" when empty, the
// median alone for one value.
func statCell(st results.Stat, format func(float64) string) string {
	switch {
	case st.N == 0:
		return results.Dash
	case st.N == 1 || st.Min == st.Max:
		return format(st.Median)
	}
	return fmt.Sprintf("%s (%s–%s)", format(st.Median), format(st.Min), format(st.Max))
}

func pctCell(st results.Stat) string {
	return statCell(st, func(v float64) string { return fmt.Sprintf("%.0f %%", v) })
}

// CPURows are the CPU table's rows: per profile and path, the pair's host
// cores busy, its parts, ovs-vswitchd's cores, host cores per 10 Gbit/s
// delivered and the guests' own iperf3 CPU; medians over repeats with
// min–max.
func CPURows(s *Set) [][]string {
	var rows [][]string
	for _, p := range cpuProfiles(s) {
		c := p.Summary.CPU
		parts := results.Dash
		if c.HostBusy.N > 0 {
			parts = fmt.Sprintf("%s / %s / %s / %s", results.FormatCores(c.User.Median), results.FormatCores(c.System.Median),
				results.FormatCores(c.SoftIRQ.Median), results.FormatCores(c.Guest.Median))
		}
		guests := results.Dash
		if c.GuestClient.N > 0 {
			guests = pctCell(c.GuestClient) + " / " + pctCell(c.GuestServer)
		}
		rows = append(rows, []string{profileTitle(p), pathName(p.Path), fmt.Sprintf("%d", c.HostBusy.N),
			statCell(c.HostBusy, results.FormatCores), parts, statCell(c.OVS, results.FormatCores),
			statCell(c.CoresPer10G, results.FormatCores), guests})
	}
	return rows
}

// writeCPU is the section "Host CPU during the measured windows".
func writeCPU(b *strings.Builder, s *Set) {
	profiles := cpuProfiles(s)
	if len(profiles) == 0 {
		return
	}
	b.WriteString("## Host CPU during the measured windows\n\n")
	b.WriteString("Both hypervisors' `/proc/stat` and `ovs-vswitchd`'s own CPU time, read just before each repeat's iperf3 clients start and just after the last one returned — never while they run. " +
		"A reading's span is therefore the clients' whole run (connection setup, `-O`, `-t`, the final exchange) plus the readings' own milliseconds: the cores below are averages over that span, slightly diluted by its idle edges. " +
		"Host cores busy = Δ(total − idle − iowait) / elapsed ticks per CPU, summed over the two hypervisors; it is split user / system / softirq / guest vCPUs (time the guests' own vCPUs ran, which the kernel counts as user), medians over repeats. " +
		"Host cores per 10 Gbit/s = host cores busy / (delivered / 10 Gbit/s), per repeat. Guest CPU is iperf3's own `cpu_utilization_percent` (process CPU time / wall time, 100 % = one vCPU), sender / receiver: a sender near 100 % per process is guest-bound.\n\n")
	if shared := sharedHosts(s); len(shared) > 0 {
		fmt.Fprintf(b, "**One machine:** in %s both hypervisors reported the same boot id: they are one machine (the lab's namespace hypervisors), so its numbers are that whole machine's — both hypervisors, the guests and everything else it runs — counted once, not a per-hypervisor cost. `ovs-vswitchd` is each hypervisor's own process and is summed.\n\n",
			strings.Join(shared, ", "))
	}
	b.WriteString(mdTable([]string{"Profile", "Path", "Runs", "Host cores busy median (min–max)", "User / system / softirq / guest vCPUs", "ovs-vswitchd cores", "Host cores per 10 Gbit/s", "Guest CPU sender / receiver (iperf3)"}, CPURows(s)))
	b.WriteString("\n")
	var missing []string
	for _, p := range profiles {
		for _, m := range p.Summary.CPU.Missing {
			missing = append(missing, fmt.Sprintf("%s %s, %s", profileTitle(p), pathName(p.Path), m))
		}
	}
	sort.Strings(missing)
	for _, m := range missing {
		b.WriteString("- " + strings.ReplaceAll(m, "\n", " ") + "\n")
	}
	if len(missing) > 0 {
		b.WriteString("\n")
	}
}

// sharedHosts names the runs (by path) whose hypervisors were one machine.
func sharedHosts(s *Set) []string {
	var out []string
	for _, f := range s.Files {
		for _, p := range f.Profiles {
			if p.Summary.CPU != nil && p.Summary.CPU.SharedHost {
				out = append(out, fmt.Sprintf("the %s run %s", pathName(p.Path), f.RunID))
				break
			}
		}
	}
	return out
}

// cpuChart draws host cores per 10 Gbit/s per profile, ASAP² beside
// baseline (median bar, min–max whisker); "" without CPU data.
func cpuChart(s *Set) string {
	type group struct {
		label string
		sides [2]*results.ProfileResult
	}
	var groups []group
	index := map[results.Shape]int{}
	for _, p := range cpuProfiles(s) {
		sh := ShapeOf(p)
		i, ok := index[sh]
		if !ok {
			i = len(groups)
			index[sh] = i
			groups = append(groups, group{label: shortLabelProto(sh)})
		}
		if p.Path == results.PathASAP2 {
			groups[i].sides[0] = p
		} else {
			groups[i].sides[1] = p
		}
	}
	max := 0.0
	for _, g := range groups {
		for _, p := range g.sides {
			if p != nil && p.Summary.CPU.CoresPer10G.N > 0 {
				max = math.Max(max, p.Summary.CPU.CoresPer10G.Max)
			}
		}
	}
	if len(groups) == 0 || max == 0 {
		return ""
	}
	const (
		w, h                   = 960, 330
		left, right, top, base = 70, 20, 40, 280
	)
	top2 := niceMax(max)
	plotH := float64(base - top)
	y := func(v float64) float64 { return float64(base) - v/top2*plotH }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart bars cpu" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %d %d" width="%d" height="%d" role="img" aria-label="Host cores per 10 Gbit/s delivered">`, w, h, w, h)
	for i := 0; i <= 5; i++ {
		v := top2 * float64(i) / 5
		fmt.Fprintf(&b, `<line class="grid" x1="%d" x2="%d" y1="%.1f" y2="%.1f"/>`, left, w-right, y(v), y(v))
		fmt.Fprintf(&b, `<text class="tick" x="%d" y="%.1f" text-anchor="end">%s</text>`, left-6, y(v)+4, fmtTick(v))
	}
	fmt.Fprintf(&b, `<text class="axis" x="14" y="%d" transform="rotate(-90 14 %d)" text-anchor="middle">host cores per 10 Gbit/s</text>`, (top+base)/2, (top+base)/2)
	gw := float64(w-left-right) / float64(len(groups))
	barW := math.Min(gw*0.34, 60)
	for i, g := range groups {
		gx := float64(left) + gw*float64(i)
		for j, p := range g.sides {
			name, col := "ASAP²", colASAP2
			if j == 1 {
				name, col = "Baseline", colBaseline
			}
			x := gx + gw/2 - barW - 2 + float64(j)*(barW+4)
			if p == nil || p.Summary.CPU.CoresPer10G.N == 0 {
				fmt.Fprintf(&b, `<text class="missing" x="%.1f" y="%d" text-anchor="middle">—</text>`, x+barW/2, base-6)
				continue
			}
			st := p.Summary.CPU.CoresPer10G
			by := y(st.Median)
			fmt.Fprintf(&b, `<rect class="bar cpu" x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s %s host cores per 10 Gbit/s (median of %d)</title></rect>`,
				x, by, barW, float64(base)-by, col, name, results.FormatCores(st.Median), st.N)
			if st.N > 1 {
				cx := x + barW/2
				fmt.Fprintf(&b, `<line class="whisker" x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f"/>`, cx, cx, y(st.Min), y(st.Max))
			}
			fmt.Fprintf(&b, `<text class="val" x="%.1f" y="%.1f" text-anchor="middle">%s</text>`, x+barW/2, by-4, results.FormatCores(st.Median))
		}
		fmt.Fprintf(&b, `<text class="rowlabel" x="%.1f" y="%d" text-anchor="middle">%s</text>`, gx+gw/2, base+18, esc(g.label))
	}
	fmt.Fprintf(&b, `<line class="axisline" x1="%d" x2="%d" y1="%d" y2="%d"/>`, left, w-right, base, base)
	fmt.Fprintf(&b, `<rect x="%d" y="10" width="12" height="12" fill="%s"/><text class="legend" x="%d" y="21">ASAP²</text>`, left, colASAP2, left+16)
	fmt.Fprintf(&b, `<rect x="%d" y="10" width="12" height="12" fill="%s"/><text class="legend" x="%d" y="21">Baseline</text>`, left+80, colBaseline, left+96)
	b.WriteString(`</svg>`)
	return b.String()
}

// shortLabelProto is shortLabel with the protocol: "TCP P15", "UDP P30 -l700".
func shortLabelProto(sh results.Shape) string {
	l := strings.ToUpper(sh.Protocol) + " " + shortLabel(sh)
	if sh.BitrateBps > 0 {
		l += " " + FormatBpsShortG(sh.BitrateBps)
	}
	return l
}

// writeCPUChart is the HTML's chart of host cores per 10 Gbit/s.
func writeCPUChart(b *strings.Builder, s *Set) {
	chart := cpuChart(s)
	if chart == "" {
		return
	}
	b.WriteString("<h2>Host cores per 10 Gbit/s delivered</h2>\n<p class=\"note\">Median over repeats (whisker: min–max) of the hypervisors' busy cores per 10 Gbit/s the guests delivered; lower is cheaper. The table under “Host CPU during the measured windows” says what the span covers.</p>\n")
	b.WriteString(chart)
	b.WriteString("\n")
}

// coresPer10G is a profile's median host cores per 10 Gbit/s, or nil.
func coresPer10G(p *results.ProfileResult) *float64 {
	if p == nil || p.Summary.CPU == nil || p.Summary.CPU.CoresPer10G.N == 0 {
		return nil
	}
	v := p.Summary.CPU.CoresPer10G.Median
	return &v
}

// compareCPU gates the host cores per 10 Gbit/s of a row: a candidate
// dearer than the accepted run beyond o.CPUTolerancePercent is a
// regression; a reading on one side only is a note.
func compareCPU(r *DeltaRow, a, cand *results.ProfileResult, o CompareOptions) {
	r.AcceptedCoresPer10G, r.CandidateCoresPer10G = coresPer10G(a), coresPer10G(cand)
	ac, cc := r.AcceptedCoresPer10G, r.CandidateCoresPer10G
	switch {
	case ac == nil && cc == nil:
		return
	case ac == nil || cc == nil:
		side := "accepted"
		if cc == nil {
			side = "candidate"
		}
		r.Notes = append(r.Notes, "host cores per 10 Gbit/s not compared: no reading in the "+side+" run")
		return
	case *ac <= 0:
		return
	}
	d := (*cc - *ac) / *ac * 100
	if d > o.CPUTolerancePercent {
		r.Notes = append(r.Notes, fmt.Sprintf("host cores per 10 Gbit/s rose %s (%s → %s), beyond the %s tolerance",
			results.FormatPercent(d), results.FormatCores(*ac), results.FormatCores(*cc), results.FormatPercent(o.CPUTolerancePercent)))
		if !o.IgnoreCPU {
			r.Status, r.Regression = DeltaRegression, true
		}
	}
}
