package report

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/mosk-qa/asap2-e2e/e2e/fleet"
	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// The fleet section (issue 21): outliers first, then the nodes whose
// offload proof failed, the verdict by node, a heat map of every node's
// rate against the fleet median, the per-node table with its drift marks,
// the configuration drift table, and the offload checks' rounds. A set
// without a fleet section renders exactly as before.

// fleetFiles are the set's files with a fleet section.
func fleetFiles(s *Set) []*results.Results {
	var out []*results.Results
	for _, f := range s.Files {
		if f.Fleet != nil {
			out = append(out, f)
		}
	}
	return out
}

// FleetVerdictOf is the fleet verdict of a file with a fleet section,
// under its expected path (results.JudgeFleet with the report's outlier
// sentence).
func FleetVerdictOf(f *results.Results) results.FleetVerdict {
	return results.JudgeFleet(f.Fleet, f.Config.ExpectedPath, fleet.StoredLine)
}

// DriftMark follows a value that differs from the fleet's majority.
const DriftMark = "≠"

// OutlierMark precedes an outlier's cell in the per-node table.
const OutlierMark = "▼"

// fleetColumn is one profile and role of the per-node table and heat map.
type fleetColumn struct {
	profile string
	role    string
}

func (c fleetColumn) title() string { return c.profile + " as " + c.role }

// fleetColumns are the rates' profiles in first-seen order, sender then receiver.
func fleetColumns(f *results.Fleet) []fleetColumn {
	var profiles []string
	for _, r := range f.Rates {
		if !slices.Contains(profiles, r.Profile) {
			profiles = append(profiles, r.Profile)
		}
	}
	var out []fleetColumn
	for _, p := range profiles {
		out = append(out, fleetColumn{p, string(fleet.AsSender)}, fleetColumn{p, string(fleet.AsReceiver)})
	}
	return out
}

// fleetRows are the measured nodes, by name, with their rates by column.
func fleetRows(f *results.Fleet) (nodes []string, rate map[string]map[fleetColumn]results.FleetNodeRate) {
	rate = map[string]map[fleetColumn]results.FleetNodeRate{}
	nodes = f.MeasuredNodes()
	for _, r := range f.Rates {
		if rate[r.Node] == nil {
			rate[r.Node] = map[fleetColumn]results.FleetNodeRate{}
			if !slices.Contains(nodes, r.Node) {
				nodes = append(nodes, r.Node)
			}
		}
		rate[r.Node][fleetColumn{r.Profile, r.Role}] = r
	}
	slices.Sort(nodes)
	return nodes, rate
}

func ratioText(r results.FleetNodeRate) string {
	if r.Ratio == nil {
		return results.Dash
	}
	return strconv.FormatFloat(*r.Ratio, 'f', 2, 64) + "×"
}

// fleetHead is the fleet section up to the heat map: summary, outliers,
// failed offload proof, the verdict by node.
func fleetHead(r *results.Results) string {
	f := r.Fleet
	v := FleetVerdictOf(r)
	var b strings.Builder
	b.WriteString("## Fleet\n\n")
	skipped := len(f.Nodes) - len(f.MeasuredNodes())
	rule := "mad (modified z-score below −" + fmtTick(f.Rule.Threshold) + ", at least " + fmtTick(100*f.Rule.MinDrop) + " % below the median)"
	if f.Rule.Kind == fleet.RuleRatio {
		rule = "ratio (below " + fmtTick(f.Rule.Ratio) + "× the fleet median)"
	}
	fmt.Fprintf(&b, "Run %s, shard %s: %s mode, %d node(s) measured, %d skipped, %d pair(s); expected path %s; outlier rule %s.\n\n",
		r.RunID, f.Shard, f.Mode, len(f.MeasuredNodes()), skipped, len(f.Pairs), pathName(r.Config.ExpectedPath), rule)
	if v.Pass() {
		b.WriteString("**Fleet verdict: PASS**: every node proven and none named as an outlier.\n\n")
	} else {
		fmt.Fprintf(&b, "**Fleet verdict: FAIL**: %s.\n\n", v.Headline())
	}
	if len(f.Shards) > 0 {
		fmt.Fprintf(&b, "Shards of run group %s:\n\n", cmp.Or(f.RunGroup, results.Dash))
		for _, sh := range f.Shards {
			if l := sh.Line(); l != "" {
				b.WriteString("- **" + l + "**\n")
			} else {
				fmt.Fprintf(&b, "- shard %s: run %s (%s)\n", sh.Shard, sh.RunID, sh.File)
			}
		}
		b.WriteString("\n")
	}
	b.WriteString("### Outliers\n\n")
	var outs []string
	for _, nr := range (fleet.Verdict{Rates: ratesOf(f)}).Outliers() {
		l := nr.Line()
		for _, r := range f.Rates {
			if r.Node == nr.Node && r.Profile == nr.Profile && r.Role == string(nr.Role) {
				if by := results.ExplainedBy(f, r); by != "" {
					l += " (through " + by + ", slow both ways: not named)"
				}
			}
		}
		outs = append(outs, l)
	}
	if len(outs) == 0 {
		b.WriteString("None: no node's rate is below the fleet under the rule.\n\n")
	} else {
		for _, l := range outs {
			b.WriteString("- " + l + "\n")
		}
		b.WriteString("\n")
	}
	b.WriteString("### Nodes whose offload proof failed\n\n")
	proofFailed := false
	for _, fl := range v.Failures {
		var rs []string
		for _, why := range fl.Reasons {
			if !strings.HasPrefix(why, "outlier: ") {
				rs = append(rs, why)
			}
		}
		if len(rs) > 0 {
			proofFailed = true
			fmt.Fprintf(&b, "- **%s**: %s\n", fl.Node, strings.Join(rs, "; "))
		}
	}
	if !proofFailed {
		b.WriteString("None.\n")
	}
	b.WriteString("\n")
	if len(v.Notes) > 0 {
		b.WriteString("Notes:\n\n")
		for _, n := range v.Notes {
			b.WriteString("- " + n + "\n")
		}
		b.WriteString("\n")
	}
	return b.String()
}

// ratesOf are the stored rates as fleet.NodeRate.
func ratesOf(f *results.Fleet) []fleet.NodeRate {
	out := make([]fleet.NodeRate, len(f.Rates))
	for i, r := range f.Rates {
		out[i] = fleet.RateOf(r)
	}
	return out
}

// fleetTail is the per-node table and the drift table.
func fleetTail(f *results.Fleet) string {
	var b strings.Builder
	cols := fleetColumns(f)
	nodes, rate := fleetRows(f)
	drift := map[string]results.FleetNodeDrift{}
	for _, d := range f.Drift {
		drift[d.Node] = d
	}
	b.WriteString("### Per node\n\n")
	fmt.Fprintf(&b, "Each node's delivered rate as sender and as receiver (the mean of its pairs in that role), and its ratio to the fleet median of the column; %s marks an outlier. Drift lists the node's values that differ from the fleet's majority.\n\n", OutlierMark)
	header := []string{"Node"}
	for _, c := range cols {
		header = append(header, c.title())
	}
	header = append(header, "Drift")
	var rows [][]string
	for _, n := range nodes {
		row := []string{n}
		for _, c := range cols {
			r, ok := rate[n][c]
			if !ok {
				row = append(row, results.Dash)
				continue
			}
			cell := results.FormatBpsShort(r.BPS) + " (" + ratioText(r) + ")"
			if r.Outlier {
				cell = OutlierMark + " " + cell
			}
			row = append(row, cell)
		}
		var ds []string
		for _, k := range drift[n].Differs {
			ds = append(ds, k+" "+drift[n].Values[k]+" "+DriftMark)
		}
		row = append(row, strings.Join(ds, "; "))
		rows = append(rows, row)
	}
	medians := []string{"fleet median"}
	for _, c := range cols {
		m := math.NaN()
		for _, r := range f.Rates {
			if r.Profile == c.profile && r.Role == c.role {
				m = r.Median
				break
			}
		}
		medians = append(medians, results.FormatBpsShort(m))
	}
	rows = append(rows, append(medians, ""))
	b.WriteString(mdTable(header, rows))
	b.WriteString("\n")
	if len(f.Drift) > 0 {
		b.WriteString("### Configuration drift\n\n")
		fmt.Fprintf(&b, "Collected once per node, outside every measured window. %s marks a value that differs from the fleet's majority (held by more than half of the nodes reporting the key; a key without one marks every value).\n\n", DriftMark)
		var keys []string
		for _, k := range results.DriftKeys {
			for _, d := range f.Drift {
				if _, ok := d.Values[k]; ok {
					keys = append(keys, k)
					break
				}
			}
		}
		for _, d := range f.Drift { // keys beyond the known ones, sorted
			for k := range d.Values {
				if !slices.Contains(keys, k) && !slices.Contains(results.DriftKeys, k) {
					keys = append(keys, k)
				}
			}
		}
		slices.Sort(keys[len(driftKnown(keys)):])
		dn := make([]string, 0, len(f.Drift))
		for _, d := range f.Drift {
			dn = append(dn, d.Node)
		}
		slices.Sort(dn)
		var drows [][]string
		for _, n := range dn {
			d := drift[n]
			row := []string{n}
			for _, k := range keys {
				v, ok := d.Values[k]
				switch {
				case !ok:
					row = append(row, results.Dash)
				case slices.Contains(d.Differs, k):
					row = append(row, orDash(v)+" "+DriftMark)
				default:
					row = append(row, orDash(v))
				}
			}
			drows = append(drows, row)
		}
		maj := []string{"fleet majority"}
		for _, k := range keys {
			if m, ok := results.DriftMajority(f.Drift, k); ok {
				maj = append(maj, orDash(m))
			} else {
				maj = append(maj, "no majority")
			}
		}
		drows = append(drows, maj)
		b.WriteString(mdTable(append([]string{"Node"}, keys...), drows))
		b.WriteString("\n")
	}
	return b.String()
}

// fleetRounds is the offload checks' rounds: each round's pairs, its
// flows' windows and its start skew against the goal; "" for a file
// written before the checks ran in rounds.
func fleetRounds(f *results.Fleet) string {
	if len(f.Rounds) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("### Offload check rounds\n\n")
	pairs := 0
	for _, r := range f.Rounds {
		pairs += len(r.Pairs)
	}
	fmt.Fprintf(&b, "The checks of %d pair(s) ran in %d round(s) of pairs that share no node (a window reads only its own pair's two hypervisors), one round after the other; "+
		"each evidence flow's window opened for every pair of its round at once and closed when the last pair's clients returned. "+
		"Start skew is the spread of the pairs' client starts in a window; the goal is max(1 s, 10 %% of the flow).\n\n", pairs, len(f.Rounds))
	merged := strings.HasPrefix(f.Shard, "all/")
	var rows [][]string
	for _, r := range f.Rounds {
		round := strconv.Itoa(r.Round)
		if merged {
			round += " (shard " + r.Shard + ")"
		}
		var ws []string
		for _, w := range r.Windows {
			end := "not closed"
			if w.End != nil {
				end = w.End.UTC().Format("15:04:05.000")
			}
			ws = append(ws, fmt.Sprintf("%s %s–%s (%d pair(s), skew %s)", w.Flow, w.Start.UTC().Format("15:04:05.000"), end, len(w.Pairs), skewText(w.SkewSeconds)))
		}
		windows := strings.Join(ws, "; ")
		if len(ws) == 0 {
			windows = "none opened"
		}
		goal := results.SkewGoal(r.FlowSeconds)
		skew := skewText(r.SkewSeconds) + " (goal " + skewText(goal) + ")"
		if r.SkewSeconds > goal {
			skew = "**" + skewText(r.SkewSeconds) + ", over the goal " + skewText(goal) + "**"
		}
		if len(r.Windows) == 0 {
			skew = results.Dash
		}
		rows = append(rows, []string{round, strings.Join(r.Pairs, ", "), windows, skew, orDash(r.Error)})
	}
	b.WriteString(mdTable([]string{"Round", "Pairs", "Flow windows (UTC)", "Start skew", "Failed"}, rows))
	b.WriteString("\n")
	return b.String()
}

// skewText is a start skew in seconds as milliseconds below 1 s.
func skewText(s float64) string {
	if s < 1 {
		return strconv.FormatFloat(s*1000, 'f', 0, 64) + " ms"
	}
	return fmtTick(s) + " s"
}

// driftKnown is the prefix of keys that are DriftKeys.
func driftKnown(keys []string) []string {
	i := 0
	for i < len(keys) && slices.Contains(results.DriftKeys, keys[i]) {
		i++
	}
	return keys[:i]
}

// writeFleet writes each fleet section of the set (markdown).
func writeFleet(b *strings.Builder, s *Set) {
	for _, f := range fleetFiles(s) {
		b.WriteString(fleetHead(f))
		b.WriteString(fleetTail(f.Fleet))
		b.WriteString(fleetRounds(f.Fleet))
	}
}

// writeFleetHTML writes each fleet section with its heat map.
func writeFleetHTML(b *strings.Builder, s *Set) {
	for _, f := range fleetFiles(s) {
		b.WriteString(mdToHTML(fleetHead(f)))
		b.WriteString(fleetHeatMap(f.Fleet))
		b.WriteString("\n")
		b.WriteString(mdToHTML(fleetTail(f.Fleet) + fleetRounds(f.Fleet)))
	}
}

// Heat map bins: ratio to the fleet median, lowest first.
var heatBins = []struct {
	below float64
	color string
	label string
}{
	{0.4, "#c53030", "< 0.4×"},
	{0.6, "#ed8936", "0.4–0.6×"},
	{0.8, "#f6e05e", "0.6–0.8×"},
	{0.95, "#9ae6b4", "0.8–0.95×"},
	{math.Inf(1), "#2f855a", "≥ 0.95×"},
}

const heatNone = "#e2e8f0"

func heatColor(r results.FleetNodeRate, ok bool) string {
	if !ok || r.Ratio == nil {
		return heatNone
	}
	for _, bin := range heatBins {
		if *r.Ratio < bin.below {
			return bin.color
		}
	}
	return heatNone
}

// fleetHeatMap draws one cell per node (a row, by name) per profile and
// role (a column), coloured by the ratio to the fleet median in bins; an
// outlier's cell is outlined, a node with drift carries DriftMark after
// its name. Each cell's title gives the numbers (a tooltip, no script).
func fleetHeatMap(f *results.Fleet) string {
	cols := fleetColumns(f)
	nodes, rate := fleetRows(f)
	drift := map[string]int{}
	for _, d := range f.Drift {
		drift[d.Node] = len(d.Differs)
	}
	const (
		top, cellW, cellH, legendH = 70, 70, 14, 24
		charW                      = 7 // an 11px system-ui character, generously
	)
	left := 150
	for _, n := range nodes {
		left = max(left, charW*(len([]rune(n))+2)+10)
	}
	w := left + cellW*max(len(cols), 1) + 20
	if w < 560 {
		w = 560
	}
	h := top + cellH*len(nodes) + legendH + 10
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart" xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" role="img" aria-label="fleet heat map">`, w, h, w, h)
	fmt.Fprintf(&b, `<text class="ctitle" x="10" y="18">Each node against the fleet median (%d nodes)</text>`, len(nodes))
	x := 10
	for _, bin := range heatBins {
		fmt.Fprintf(&b, `<rect x="%d" y="26" width="12" height="10" fill="%s"/><text class="legend" x="%d" y="35">%s</text>`, x, bin.color, x+15, esc(bin.label))
		x += 90
	}
	fmt.Fprintf(&b, `<rect x="%d" y="26" width="12" height="10" fill="%s"/><text class="legend" x="%d" y="35">no rate</text>`, x, heatNone, x+15)
	for i, c := range cols {
		cx := left + i*cellW + cellW/2
		fmt.Fprintf(&b, `<text class="tick" x="%d" y="%d" text-anchor="middle">%s</text><text class="tick" x="%d" y="%d" text-anchor="middle">%s</text>`,
			cx, top-18, esc(c.profile), cx, top-6, esc(c.role))
	}
	for j, n := range nodes {
		y := top + j*cellH
		label := n
		if drift[n] > 0 {
			label += " " + DriftMark
		}
		fmt.Fprintf(&b, `<text class="tick" x="%d" y="%d" text-anchor="end">%s</text>`, left-6, y+cellH-3, esc(label))
		for i, c := range cols {
			r, ok := rate[n][c]
			title := n + " " + c.title() + ": no rate"
			if ok {
				title = fleet.RateOf(r).Line()
			}
			stroke := ""
			if ok && r.Outlier {
				stroke = ` stroke="#1a202c" stroke-width="2"`
			}
			fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" fill="%s"%s><title>%s</title></rect>`,
				left+i*cellW+1, y+1, cellW-2, cellH-2, heatColor(r, ok), stroke, esc(title))
		}
	}
	fmt.Fprintf(&b, `<text class="legend" x="10" y="%d">Cells: ratio of the node's rate to the fleet median of its column; outlined: an outlier; %s after a name: configuration drift.</text>`, h-10, DriftMark)
	b.WriteString("</svg>")
	return b.String()
}
