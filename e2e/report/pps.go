package report

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

func init() {
	sections.Register(10, familySection{markdown: func(b *strings.Builder, s *Set) { writePPS(b, s); writeSearches(b, s) }, html: func(b *strings.Builder, s *Set) { b.WriteString(ppsSectionsHTML(s)) }}, results.FamilyPPS)
}

// PPSRows are the packets-per-second table's rows: every profile (both
// paths) whose repeats have packet rates, by datagram length, streams,
// then path.
func PPSRows(s *Set) [][]string {
	var ps []*results.ProfileResult
	for _, p := range s.Profiles() {
		if p.Summary.Packets != nil && p.Summary.Packets.Delivered.N > 0 {
			ps = append(ps, p)
		}
	}
	sort.SliceStable(ps, func(i, j int) bool {
		a, b := ps[i], ps[j]
		if a.LengthBytes != b.LengthBytes {
			return a.LengthBytes < b.LengthBytes
		}
		if a.Streams != b.Streams {
			return a.Streams < b.Streams
		}
		return a.Path < b.Path
	})
	var rows [][]string
	for _, p := range ps {
		k := p.Summary.Packets
		length := "default"
		if p.LengthBytes > 0 {
			length = fmt.Sprintf("%d B", p.LengthBytes)
		}
		rows = append(rows, []string{
			profileTitle(p), pathName(p.Path), length,
			statPps(k.Offered), statPps(k.Delivered), results.FormatLoss(k.Loss.Median),
			results.FormatBps(p.Summary.Offered.Median) + " / " + results.FormatBps(p.Summary.Delivered.Median),
			k.Basis,
		})
	}
	return rows
}

// statPps is a median with its min–max over repeats when they differ.
func statPps(st results.Stat) string {
	if st.N > 1 && st.Min != st.Max {
		return fmt.Sprintf("%s (%s–%s, n=%d)", results.FormatPps(st.Median), results.FormatPps(st.Min), results.FormatPps(st.Max), st.N)
	}
	return results.FormatPps(st.Median)
}

func writePPS(b *strings.Builder, s *Set) {
	rows := PPSRows(s)
	if len(rows) == 0 {
		return
	}
	b.WriteString("## Small packets: packets per second\n\n")
	b.WriteString("UDP at unlimited offered load (`-u -b0`): datagrams per second offered by the sender and delivered to the receiver, " +
		"and the share lost, beside the bit rates (payload bits, as iperf3 counts them). Medians over repeats. " +
		"The last column says how the datagrams were counted: iperf3 before 3.18 counts a datagram whose send failed, " +
		"so there they are derived from bytes / datagram length.\n\n")
	b.WriteString(mdTable([]string{"Profile", "Path", "Datagram", "Offered pps", "Delivered pps", "Loss", "Offered / delivered bit/s", "Counted from"}, rows))
	b.WriteString("\n")
}

// Searches returns every search of the set, by ID then path.
func (s *Set) Searches() []*results.SearchResult {
	var out []*results.SearchResult
	for _, f := range s.Files {
		for i := range f.Searches {
			out = append(out, &f.Searches[i])
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].ID != out[j].ID {
			return out[i].ID < out[j].ID
		}
		return out[i].Path < out[j].Path
	})
	return out
}

// SearchTitle names a search: "NDR (loss ≤ 0 %), 1 stream, 64 B".
func SearchTitle(sr *results.SearchResult) string {
	return fmt.Sprintf("%s (loss ≤ %s), %s, %d B", sr.Kind, results.FormatLoss(sr.LossPercent), streamWord(sr.Streams), sr.LengthBytes)
}

func searchRate(sr *results.SearchResult) (bps, pps string) {
	if !sr.Found {
		return "none found", results.Dash
	}
	return results.FormatBps(sr.RateBps), results.FormatPps(sr.RatePps)
}

func writeSearches(b *strings.Builder, s *Set) {
	srs := s.Searches()
	if len(srs) == 0 {
		return
	}
	b.WriteString("## Zero-loss search (RFC 2544 throughput, ETSI GS NFV-TST 009)\n\n")
	b.WriteString("The highest offered UDP rate whose loss stayed within the criterion (NDR: no drop; PDR: partial drop rate), " +
		"found by binary search between the bounds and confirmed by a final verification trial at that rate; " +
		"a search whose verification never passed reports none found, never a guess. " +
		"This rate, not the TCP table's, is RFC 2544 throughput: the TCP rows are iperf3's goodput (bytes delivered to the application per second).\n\n")
	var rows [][]string
	for _, sr := range srs {
		bps, pps := searchRate(sr)
		rows = append(rows, []string{SearchTitle(sr), pathName(sr.Path), bps, pps,
			fmt.Sprintf("%d of %d × %gs", len(sr.Trials), sr.MaxTrials, sr.TrialSeconds),
			fmt.Sprintf("%s – %s → %s – %s", results.FormatBps(sr.LowerBps), results.FormatBps(sr.UpperBps), results.FormatBps(sr.FinalLowerBps), results.FormatBps(sr.FinalUpperBps)),
			sr.StopReason + errSuffix(sr.Error), orDash(sr.Iperf3Version)})
	}
	b.WriteString(mdTable([]string{"Search", "Path", "Rate found", "Packets/s", "Trials", "Bounds start → end", "Stopped because", "iperf3"}, rows))
	b.WriteString("\n")
	for _, sr := range srs {
		fmt.Fprintf(b, "### Trials: %s, %s\n\n", SearchTitle(sr), pathName(sr.Path))
		b.WriteString(mdTable([]string{"#", "Phase", "Requested", "Offered", "Delivered", "Offered pps", "Delivered pps", "Loss", "Verdict", "Why"}, searchTrialRows(sr)))
		if sr.PacketBasis != "" {
			fmt.Fprintf(b, "\nLoss and packets counted from %s.\n", sr.PacketBasis)
		}
		b.WriteString("\n")
	}
}

func errSuffix(e string) string {
	if e == "" {
		return ""
	}
	return " (error: " + e + ")"
}

func searchTrialRows(sr *results.SearchResult) [][]string {
	var rows [][]string
	for _, t := range sr.Trials {
		req := "unlimited (-b 0)"
		if t.RequestedBps > 0 {
			req = results.FormatBps(t.RequestedBps)
		}
		verdict := "fail"
		if t.Pass {
			verdict = "pass"
		}
		why := t.Reason
		if t.Error != "" {
			verdict, why = "error", t.Error
		}
		opps, dpps := results.Dash, results.Dash
		if t.OfferedPps > 0 || t.DeliveredPps > 0 {
			opps, dpps = results.FormatPps(t.OfferedPps), results.FormatPps(t.DeliveredPps)
		}
		rows = append(rows, []string{fmt.Sprint(t.N), t.Phase, req, results.FormatBps(t.OfferedBps), results.FormatBps(t.DeliveredBps),
			opps, dpps, results.FormatLoss(t.LossPercent), verdict, why})
	}
	return rows
}

// ppsSectionsHTML renders the packets-per-second table and the searches,
// each search with a chart of its trials.
func ppsSectionsHTML(s *Set) string {
	var md strings.Builder
	writePPS(&md, s)
	out := mdToHTML(md.String())
	md.Reset()
	writeSearches(&md, s)
	if md.Len() == 0 {
		return out
	}
	// The chart goes after each search's trials heading.
	sections := strings.Split(md.String(), "\n### ")
	out += mdToHTML(sections[0])
	for i, sr := range s.Searches() {
		if i+1 >= len(sections) {
			break
		}
		part := "### " + sections[i+1]
		head, rest, _ := strings.Cut(part, "\n")
		out += mdToHTML(head+"\n") + searchChart(sr) + mdToHTML(rest)
	}
	return out
}

// searchChart plots a search's trials in order: the requested rate
// (unlimited: what the sender reached) as a dot, green when the trial
// passed and red when it failed, the delivered rate as a ring, and the
// rate found as a dashed line.
func searchChart(sr *results.SearchResult) string {
	if len(sr.Trials) == 0 {
		return ""
	}
	const w, h, left, right, top, bottom = 640.0, 260.0, 70.0, 20.0, 30.0, 40.0
	maxV := sr.RateBps
	for _, t := range sr.Trials {
		maxV = math.Max(maxV, math.Max(t.RequestedBps, math.Max(t.OfferedBps, t.DeliveredBps)))
	}
	top2 := niceMax(maxV)
	div, unit := rateAxis(top2)
	x := func(i int) float64 {
		return left + (w-left-right)*(float64(i)+0.5)/float64(len(sr.Trials))
	}
	y := func(v float64) float64 { return top + (h-top-bottom)*(1-v/top2) }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" role="img" aria-label="%s">`, w, h, w, h, esc("trials of "+SearchTitle(sr)))
	fmt.Fprintf(&b, `<text class="ctitle" x="%.0f" y="18">%s, %s: trials</text>`, left, esc(SearchTitle(sr)), esc(pathName(sr.Path)))
	for i := 0; i <= 4; i++ {
		v := top2 * float64(i) / 4
		fmt.Fprintf(&b, `<line class="grid" x1="%.0f" x2="%.0f" y1="%.1f" y2="%.1f"/>`, left, w-right, y(v), y(v))
		fmt.Fprintf(&b, `<text class="tick" x="%.0f" y="%.1f" text-anchor="end">%s</text>`, left-6, y(v)+4, fmtTick(v/div))
	}
	fmt.Fprintf(&b, `<text class="axis" x="14" y="%.0f" transform="rotate(-90 14 %.0f)" text-anchor="middle">%s</text>`, (top+h-bottom)/2, (top+h-bottom)/2, unit)
	if sr.Found {
		fmt.Fprintf(&b, `<line x1="%.0f" x2="%.0f" y1="%.1f" y2="%.1f" stroke="#1a7f64" stroke-dasharray="5 4"/>`, left, w-right, y(sr.RateBps), y(sr.RateBps))
		fmt.Fprintf(&b, `<text class="legend" x="%.0f" y="%.1f" text-anchor="end">%s %s</text>`, w-right, y(sr.RateBps)-4, esc(sr.Kind), esc(results.FormatBps(sr.RateBps)))
	}
	for i, t := range sr.Trials {
		req := t.RequestedBps
		if req == 0 {
			req = t.OfferedBps
		}
		color := "#c53030"
		if t.Pass {
			color = "#1a7f64"
		}
		fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="5" fill="%s"><title>%s</title></circle>`, x(i), y(req), color,
			esc(fmt.Sprintf("trial %d (%s): requested %s, offered %s, delivered %s, loss %s", t.N, t.Phase, results.FormatBps(t.RequestedBps), results.FormatBps(t.OfferedBps), results.FormatBps(t.DeliveredBps), results.FormatLoss(t.LossPercent))))
		fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="7" fill="none" stroke="%s"/>`, x(i), y(t.DeliveredBps), color)
		fmt.Fprintf(&b, `<text class="tick" x="%.1f" y="%.0f" text-anchor="middle">%d%s</text>`, x(i), h-bottom+16, t.N, map[string]string{"verify": " v", "unlimited": " u"}[t.Phase])
	}
	fmt.Fprintf(&b, `<text class="legend" x="%.0f" y="%.0f">dot: requested (u: unlimited, at the sender's rate; v: verification), green pass, red fail; ring: delivered</text>`, left, h-8)
	b.WriteString("</svg>\n")
	return b.String()
}

// compareSearches gates each search of the accepted run against the
// candidate's (same ID and path): a rate lower by more than the tolerance,
// or none found where the accepted run found one, is a regression.
func compareSearches(accepted, candidate *Set, o CompareOptions) []DeltaRow {
	cand := map[string]*results.SearchResult{}
	for _, sr := range candidate.Searches() {
		cand[sr.ID+"|"+string(sr.Path)] = sr
	}
	var rows []DeltaRow
	seen := map[string]bool{}
	for _, a := range accepted.Searches() {
		key := a.ID + "|" + string(a.Path)
		seen[key] = true
		r := DeltaRow{Profile: SearchTitle(a), ID: a.ID, Path: a.Path, AcceptedDelivered: a.RateBps, Status: DeltaOK}
		c := cand[key]
		switch {
		case c == nil:
			r.Status, r.Regression = DeltaMissing, !o.AllowMissing && a.Found
			r.Notes = append(r.Notes, "search not in the candidate run")
		case a.Found && !c.Found:
			r.Status, r.Regression = DeltaRegression, true
			r.Notes = append(r.Notes, "candidate found no rate: "+c.StopReason)
		case !a.Found:
			r.CandidateDelivered = c.RateBps
			r.Notes = append(r.Notes, "accepted run found no rate: nothing to compare against")
		default:
			r.CandidateDelivered = c.RateBps
			r.DeltaPercent = (c.RateBps - a.RateBps) / a.RateBps * 100
			switch {
			case r.DeltaPercent < -o.TolerancePercent:
				r.Status, r.Regression = DeltaRegression, true
				r.Notes = append(r.Notes, fmt.Sprintf("%s %s below the accepted run, beyond the %s tolerance", a.Kind, results.FormatPercent(-r.DeltaPercent), results.FormatPercent(o.TolerancePercent)))
			case r.DeltaPercent > o.TolerancePercent:
				r.Status = DeltaImproved
			}
		}
		rows = append(rows, r)
	}
	for _, c := range candidate.Searches() {
		if !seen[c.ID+"|"+string(c.Path)] {
			rows = append(rows, DeltaRow{Profile: SearchTitle(c), ID: c.ID, Path: c.Path, CandidateDelivered: c.RateBps, Status: DeltaNew, Notes: []string{"not in the accepted run"}})
		}
	}
	return rows
}
