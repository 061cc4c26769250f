package report

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// ParityTolerance: a delivered ratio within this fraction of 1 is "parity".
const ParityTolerance = 0.03

// TableKind is one of the seed's three result tables.
type TableKind int

const (
	TableTCP          TableKind = iota // TCP goodput
	TableUDPUnlimited                  // UDP -b0: offered / delivered / loss
	TableUDPCapped                     // UDP -b <cap> per stream
)

// Table is one results table in the seed's layout.
type Table struct {
	Kind   TableKind
	CapBps float64 // per-stream cap, TableUDPCapped only
	Title  string
	Note   string // a paragraph before the table (capped tables: the aggregate caps)
	Header []string
	Rows   []Row
}

// Row is one profile shape with both paths.
type Row struct {
	Label    string
	Shape    results.Shape
	ASAP2    *results.ProfileResult // nil when missing
	Baseline *results.ProfileResult // nil when missing
	// Cells are the seed's columns after the label: ASAP², baseline, gain.
	ASAP2Cell, BaselineCell, GainCell string
	Gain                              float64
	HasGain                           bool
	ASAP2Evidence, BaselineEvidence   *Evidence
	// EvidenceCell states the evidence (and spread) of both paths.
	EvidenceCell string
}

// seedShapes are the methodology's rows of one table, in its order.
func seedShapes(kind TableKind, capBps float64) []results.Shape {
	var out []results.Shape
	for _, sh := range results.SeedShapes() {
		if tableOf(sh) == (tableKey{kind, capBps}) {
			out = append(out, sh)
		}
	}
	return out
}

type tableKey struct {
	kind   TableKind
	capBps float64
}

func tableOf(sh results.Shape) tableKey {
	switch {
	case sh.Protocol == results.ProtoTCP:
		return tableKey{TableTCP, 0}
	case sh.BitrateBps == 0:
		return tableKey{TableUDPUnlimited, 0}
	}
	return tableKey{TableUDPCapped, sh.BitrateBps}
}

// BuildTables lays the set out as the seed's tables: TCP, UDP unlimited,
// then one UDP capped table per cap. A table with any result shows every
// seed row (missing cells "—"), then any other shape sorted by length and
// streams.
func BuildTables(s *Set) []Table {
	shapes := map[tableKey][]results.Shape{}
	for _, p := range s.Profiles() {
		sh := ShapeOf(p)
		k := tableOf(sh)
		if !containsShape(shapes[k], sh) {
			shapes[k] = append(shapes[k], sh)
		}
	}
	keys := make([]tableKey, 0, len(shapes))
	for k := range shapes {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].kind != keys[j].kind {
			return keys[i].kind < keys[j].kind
		}
		return keys[i].capBps < keys[j].capBps
	})
	dur := durationPhrase(s)
	var out []Table
	for _, k := range keys {
		rows := seedShapes(k.kind, k.capBps)
		var extra []results.Shape
		for _, sh := range shapes[k] {
			if !containsShape(rows, sh) {
				extra = append(extra, sh)
			}
		}
		sort.Slice(extra, func(i, j int) bool {
			if extra[i].LengthBytes != extra[j].LengthBytes {
				return extra[i].LengthBytes < extra[j].LengthBytes
			}
			return extra[i].Streams < extra[j].Streams
		})
		rows = append(rows, extra...)
		t := Table{Kind: k.kind, CapBps: k.capBps}
		switch k.kind {
		case TableTCP:
			t.Title = fmt.Sprintf("TCP throughput, %s, ASAP² versus kernel OVS baseline", dur)
			t.Header = []string{"Profile", "ASAP² (`NIC asap2`)", "Baseline (`NIC standard`)", "Approximate gain"}
		case TableUDPUnlimited:
			t.Title = fmt.Sprintf("UDP unlimited offered load (`-u -b0`), %s, offered versus delivered", dur)
			t.Header = udpHeader()
		case TableUDPCapped:
			t.Title = fmt.Sprintf("UDP capped load (%s per stream)", results.FormatBpsShort(k.capBps))
			t.Note = cappedNote(k.capBps, rows, dur, s.lineRate())
			t.Header = udpHeader()
		}
		for _, sh := range rows {
			t.Rows = append(t.Rows, buildRow(s, t, sh))
		}
		out = append(out, t)
	}
	return out
}

func udpHeader() []string {
	return []string{"Profile", "ASAP² offered / delivered / loss", "Baseline offered / delivered / loss", "Approximate delivered gain"}
}

func containsShape(list []results.Shape, sh results.Shape) bool {
	for _, x := range list {
		if x == sh {
			return true
		}
	}
	return false
}

func durationPhrase(s *Set) string {
	seen := map[float64]bool{}
	for _, p := range s.Profiles() {
		d := p.DurationSeconds
		if d == 0 {
			if f := s.FileOf(p); f != nil {
				d = f.Config.DurationSeconds
			}
		}
		if d > 0 {
			seen[d] = true
		}
	}
	ds := make([]float64, 0, len(seen))
	for d := range seen {
		ds = append(ds, d)
	}
	sort.Float64s(ds)
	parts := make([]string, len(ds))
	for i, d := range ds {
		parts[i] = strconv.FormatFloat(d, 'f', -1, 64)
	}
	switch len(parts) {
	case 0:
		return "runs of unrecorded duration"
	case 1:
		return parts[0] + "-second runs"
	}
	return strings.Join(parts[:len(parts)-1], "-, ") + "- and " + parts[len(parts)-1] + "-second runs"
}

func (s *Set) lineRate() float64 {
	for _, f := range s.Files {
		if f.Config.LineRateBps > 0 {
			return f.Config.LineRateBps
		}
	}
	return 0
}

func cappedNote(capBps float64, rows []results.Shape, dur string, lineRate float64) string {
	var streams []int
	for _, sh := range rows {
		if !containsInt(streams, sh.Streams) {
			streams = append(streams, sh.Streams)
		}
	}
	sort.Ints(streams)
	parts := make([]string, len(streams))
	for i, n := range streams {
		parts[i] = fmt.Sprintf("%s (%s)", FormatBpsShortG(capBps*float64(n)), streamWord(n))
	}
	list := strings.Join(parts, ", ")
	if len(parts) > 1 {
		list = strings.Join(parts[:len(parts)-1], ", ") + ", and " + parts[len(parts)-1]
	}
	note := fmt.Sprintf("UDP, per-stream cap -b %s, %s. Aggregate caps are %s.", bFlag(capBps), dur, list)
	if lineRate > 0 {
		note += fmt.Sprintf(" Hitting those caps is not %s line rate.", gbeName(lineRate))
	}
	return note
}

// FormatBpsShortG formats in Gbit/s without trailing zeros ("0.5 Gbit/s",
// "7.5 Gbit/s"), as the seed states aggregate caps.
func FormatBpsShortG(bps float64) string {
	return strconv.FormatFloat(results.RoundSig(bps/1e9, 3), 'f', -1, 64) + " Gbit/s"
}

func bFlag(bps float64) string {
	switch {
	case bps >= 1e9 && math.Mod(bps, 1e9) == 0:
		return strconv.FormatFloat(bps/1e9, 'f', -1, 64) + "G"
	case bps >= 1e6 && math.Mod(bps, 1e6) == 0:
		return strconv.FormatFloat(bps/1e6, 'f', -1, 64) + "M"
	case bps >= 1e3 && math.Mod(bps, 1e3) == 0:
		return strconv.FormatFloat(bps/1e3, 'f', -1, 64) + "K"
	}
	return strconv.FormatFloat(bps, 'f', -1, 64)
}

func gbeName(lineRate float64) string {
	return strconv.FormatFloat(results.RoundSig(lineRate/1e9, 3), 'f', -1, 64) + " GbE"
}

func containsInt(xs []int, v int) bool {
	for _, x := range xs {
		if x == v {
			return true
		}
	}
	return false
}

func streamWord(n int) string {
	if n == 1 {
		return "1 stream"
	}
	return fmt.Sprintf("%d streams", n)
}

// RowLabel is the seed's profile label for a shape in a table kind.
func RowLabel(kind TableKind, sh results.Shape) string {
	label := streamWord(sh.Streams)
	if sh.LengthBytes > 0 {
		label += fmt.Sprintf(", %d B", sh.LengthBytes)
	}
	if kind == TableUDPCapped {
		return label
	}
	flags := fmt.Sprintf("-P%d", sh.Streams)
	if sh.LengthBytes > 0 {
		flags += fmt.Sprintf(" -l%d", sh.LengthBytes)
	}
	return label + " (`" + flags + "`)"
}

func buildRow(s *Set, t Table, sh results.Shape) Row {
	r := Row{Label: RowLabel(t.Kind, sh), Shape: sh}
	r.ASAP2 = s.ByShape(sh, results.PathASAP2)
	r.Baseline = s.ByShape(sh, results.PathBaseline)
	r.ASAP2Cell = valueCell(t.Kind, r.ASAP2)
	r.BaselineCell = valueCell(t.Kind, r.Baseline)
	r.Gain, r.HasGain = s.Gain(sh)
	r.GainCell = gainCell(t, sh, r, s.lineRate())
	var ev []string
	for _, side := range []struct {
		name string
		p    *results.ProfileResult
		dst  **Evidence
	}{{"ASAP²", r.ASAP2, &r.ASAP2Evidence}, {"Baseline", r.Baseline, &r.BaselineEvidence}} {
		if side.p == nil {
			ev = append(ev, side.name+": not run")
			continue
		}
		e := s.EvidenceFor(side.p)
		*side.dst = &e
		text := side.name + ": " + e.Status
		if e.Status == EvidencePartialProof {
			text = side.name + ": " + PartialProofLabel(e)
		}
		if !Expected(side.p.Path, e.Status) {
			text += " (expected " + expectedStatus(side.p.Path) + ")"
		}
		if n := side.p.Summary.Delivered.N; n > 1 {
			text += fmt.Sprintf(", %d runs, CV %s", n, results.FormatPercent(side.p.Summary.Delivered.CVPercent))
		}
		if side.p.Summary.Unstable {
			text += ", UNSTABLE"
		}
		if side.p.Summary.Failed > 0 {
			text += fmt.Sprintf(", %d repeat(s) failed", side.p.Summary.Failed)
		}
		ev = append(ev, text)
	}
	r.EvidenceCell = strings.Join(ev, "; ")
	return r
}

// PartialProofLabel is the short form of a partial proof's detail, e.g.
// "partial proof: tc, dpctl only (representor, counters not run)".
func PartialProofLabel(e Evidence) string {
	label, _, _ := strings.Cut(e.Detail, "; ")
	return label
}

func expectedStatus(p results.Path) string {
	if p == results.PathBaseline {
		return EvidenceSoftware
	}
	return EvidenceOffloadProven
}

func valueCell(kind TableKind, p *results.ProfileResult) string {
	if p == nil || p.Summary.Delivered.N == 0 {
		return results.Dash
	}
	sm := p.Summary
	if kind == TableTCP {
		return results.FormatBps(sm.Delivered.Median)
	}
	return results.UDPCell(sm.Offered.Median, sm.Delivered.Median, sm.Loss.Median)
}

// gainCell words the delivered ratio like the seed: "~6×" (TCP: whole when
// round), "~2.6×", "Parity" within ParityTolerance ("Parity at this cap" in
// capped tables), with "(ASAP² at the 7.5 Gbit/s cap)" when ASAP² delivered
// within 1% of the aggregate cap, and "(ASAP² near 25 GbE line rate)" when
// it delivered at least 90% of a configured line rate.
func gainCell(t Table, sh results.Shape, r Row, lineRate float64) string {
	if !r.HasGain {
		return results.Dash
	}
	if math.Abs(r.Gain-1) <= ParityTolerance {
		if t.Kind == TableUDPCapped {
			return "Parity at this cap"
		}
		return "Parity"
	}
	cell := results.FormatGain(r.Gain, t.Kind == TableTCP)
	delivered := r.ASAP2.Summary.Delivered.Median
	if t.Kind == TableUDPCapped {
		agg := t.CapBps * float64(sh.Streams)
		if agg > 0 && math.Abs(delivered-agg)/agg <= 0.01 {
			return cell + " (ASAP² at the " + FormatBpsShortG(agg) + " cap)"
		}
	}
	if lineRate > 0 && delivered >= 0.9*lineRate {
		return cell + " (ASAP² near " + gbeName(lineRate) + " line rate)"
	}
	return cell
}
