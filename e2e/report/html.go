package report

import (
	"fmt"
	"strings"

	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

const css = `
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:24px auto;max-width:1000px;color:#1a202c;line-height:1.4}
h1{font-size:1.6em}h2{border-bottom:1px solid #cbd5e0;padding-bottom:4px;margin-top:2em}h3{font-size:1.05em;margin-top:1.6em}
table{border-collapse:collapse;margin:8px 0 16px;font-size:0.86em;width:100%}
th,td{border:1px solid #cbd5e0;padding:4px 6px;text-align:left;vertical-align:top}
th{background:#edf2f7}
td.num{white-space:nowrap}
.badge{display:inline-block;border-radius:3px;padding:0 5px;margin:1px 0;font-size:0.92em;white-space:nowrap}
.ok{background:#c6f6d5;color:#22543d}.bad{background:#fed7d7;color:#742a2a}.warn{background:#fefcbf;color:#744210}.none{background:#e2e8f0;color:#4a5568}
svg.chart{display:block;margin:8px 0 20px;background:#fff;border:1px solid #e2e8f0}
svg .grid{stroke:#e2e8f0;stroke-width:1}svg .axisline{stroke:#4a5568;stroke-width:1}
svg .whisker{stroke:#1a202c;stroke-width:1.5}
svg text{font-family:system-ui,sans-serif;fill:#2d3748}
svg .ctitle{font-size:14px;font-weight:600}svg .tick,svg .legend{font-size:11px}svg .axis{font-size:12px}
svg .val{font-size:10px}svg .rowlabel{font-size:12px}svg .gain{font-size:11px;font-weight:600;fill:#1a7f64}svg .missing{font-size:14px;fill:#a0aec0}
.note{color:#4a5568;font-size:0.9em}
`

// HTML renders the set as one self-contained HTML document: the same
// sections as Markdown, plus inline SVG charts (no script, no external
// resource). Charts: per table, bars of ASAP² vs baseline delivered (UDP:
// offered behind delivered, loss on top); per profile with interval data,
// one line per run (every path and repeat) with the worst interval marked.
func HTML(s *Set, o Options) []byte {
	var b strings.Builder
	b.WriteString("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">")
	fmt.Fprintf(&b, "<title>%s</title><style>%s</style></head><body>\n", esc(o.title()), css)
	fmt.Fprintf(&b, "<h1>%s</h1>\n<ul>", esc(o.title()))
	for _, line := range strings.Split(strings.TrimSpace(runsParagraph(s)), "\n") {
		if line != "" {
			fmt.Fprintf(&b, "<li>%s</li>", mdInline(strings.TrimPrefix(line, "- ")))
		}
	}
	b.WriteString("</ul>\n")
	writeFleetHTML(&b, s)
	b.WriteString("<h2>Results</h2>\n<p class=\"note\">TCP rows are iperf3's goodput. UDP cells are offered / delivered / loss; gains compare delivered bandwidth (median over repeats).</p>\n")
	tables := BuildTables(s)
	if len(tables) == 0 {
		b.WriteString("<p>No profile results.</p>\n")
	}
	for _, t := range tables {
		if t.Note != "" {
			fmt.Fprintf(&b, "<p class=\"note\">%s</p>\n", esc(t.Note))
		}
		fmt.Fprintf(&b, "<h3>%s</h3>\n", mdInline(t.Title))
		b.WriteString(barChart(t))
		b.WriteString("\n<table><tr>")
		for _, h := range append(append([]string(nil), t.Header...), "Evidence") {
			fmt.Fprintf(&b, "<th>%s</th>", mdInline(h))
		}
		b.WriteString("</tr>\n")
		for _, r := range t.Rows {
			fmt.Fprintf(&b, "<tr><td>%s</td><td class=\"num\">%s</td><td class=\"num\">%s</td><td>%s</td><td>%s</td></tr>\n",
				mdInline(r.Label), esc(r.ASAP2Cell), esc(r.BaselineCell), esc(r.GainCell), evidenceBadges(r))
		}
		b.WriteString("</table>\n")
		if notes := RunNotes(t); len(notes) > 0 {
			b.WriteString("<ul class=\"note\">")
			for _, n := range notes {
				fmt.Fprintf(&b, "<li>%s</li>", mdInline(n))
			}
			b.WriteString("</ul>\n")
		}
	}
	writeFamiliesHTML(&b, s) // families.go: each family's sections, in order
	writeIntervalCharts(&b, s)
	writeCPUChart(&b, s)
	b.WriteString(markdownSectionsAsHTML(s, o))
	b.WriteString("</body></html>\n")
	return []byte(b.String())
}

func evidenceBadges(r Row) string {
	var parts []string
	for _, side := range []struct {
		name string
		p    *results.ProfileResult
		ev   *Evidence
	}{{"ASAP²", r.ASAP2, r.ASAP2Evidence}, {"Baseline", r.Baseline, r.BaselineEvidence}} {
		if side.p == nil || side.ev == nil {
			parts = append(parts, fmt.Sprintf(`<span class="badge none">%s: not run</span>`, side.name))
			continue
		}
		cls := "warn"
		if Expected(side.p.Path, side.ev.Status) {
			cls = "ok"
		} else if side.ev.Status == EvidenceSoftware || side.ev.Status == EvidenceOffloadProven || side.ev.Status == EvidencePartialProof {
			cls = "bad" // the opposite of what the path must show
		}
		status := side.ev.Status
		if status == EvidencePartialProof {
			status = PartialProofLabel(*side.ev)
			if cls == "ok" {
				cls = "warn" // opted into, and never shown as the full stamp
			}
		}
		extra := ""
		if n := side.p.Summary.Delivered.N; n > 1 {
			extra = fmt.Sprintf(" · %d runs, CV %s", n, results.FormatPercent(side.p.Summary.Delivered.CVPercent))
		}
		if side.p.Summary.Unstable {
			extra += " · UNSTABLE"
			cls = "bad"
		}
		parts = append(parts, fmt.Sprintf(`<span class="badge %s" title="%s">%s: %s%s</span>`,
			cls, esc(side.ev.Detail+" ("+side.ev.Scope+"-level checks)"), side.name, esc(status), esc(extra)))
	}
	return strings.Join(parts, "<br>")
}

func writeIntervalCharts(b *strings.Builder, s *Set) {
	var charts []string
	for _, t := range BuildTables(s) {
		for _, r := range t.Rows {
			// one chart per path, each scaled from 0 to its own maximum, so
			// the slower path's dips are not flattened by the faster one
			for _, p := range []*results.ProfileResult{r.ASAP2, r.Baseline} {
				if p == nil {
					continue
				}
				var series []lineSeries
				for i, run := range p.Runs {
					if len(run.Intervals) == 0 {
						continue
					}
					color := colASAP2
					if p.Path == results.PathBaseline {
						color = colBaseline
					}
					if len(p.Runs) > 1 {
						color = runPalette[i%len(runPalette)]
					}
					ls := lineSeries{name: fmt.Sprintf("run %d", run.Repeat), color: color, iv: run.Intervals}
					if run.Error != "" {
						ls.name += " (failed)"
						ls.dash = true
					}
					if st := results.IntervalStatsOf(run.Intervals); st != nil {
						w := st.Worst
						ls.worst = &w
					}
					series = append(series, ls)
				}
				if len(series) == 0 {
					continue
				}
				title := fmt.Sprintf("%s, %s — per-interval delivered rate", profileTitleShape(t.Kind, r.Shape), pathName(p.Path))
				caption := ""
				if st := p.Summary.Intervals; st != nil {
					caption = fmt.Sprintf("<p class=\"note\">Intervals min / median / max: %s / %s / %s; worst interval %s at %s–%s s.</p>\n",
						results.FormatBps(st.MinBps), results.FormatBps(st.MedianBps), results.FormatBps(st.MaxBps), results.FormatBps(st.Worst.Bps), fmtTick(st.Worst.Start), fmtTick(st.Worst.End))
				}
				charts = append(charts, "<h3>"+mdInline(title)+"</h3>\n"+intervalChart(title, series)+caption)
			}
		}
	}
	b.WriteString("<h2>Per-interval throughput</h2>\n")
	if len(charts) == 0 {
		b.WriteString("<p>No run recorded per-interval data.</p>\n")
		return
	}
	b.WriteString("<p class=\"note\">One line per run; a dot marks each run's worst interval. A run's average hides these dips.</p>\n")
	for _, c := range charts {
		b.WriteString(c + "\n")
	}
}

func profileTitleShape(kind TableKind, sh results.Shape) string {
	if kind == TableUDPCapped {
		return fmt.Sprintf("UDP %s/stream, %s", results.FormatBpsShort(sh.BitrateBps), RowLabel(kind, sh))
	}
	return strings.ToUpper(sh.Protocol) + " " + RowLabel(kind, sh)
}

// markdownSectionsAsHTML renders the sections after the results tables
// (repeats, checks, thresholds, environment, timing, errors) from the
// markdown renderer, so both formats say the same thing.
func markdownSectionsAsHTML(s *Set, o Options) string {
	var md strings.Builder
	writeSpread(&md, s)
	writeCPU(&md, s)
	writeChecks(&md, s)
	writeThresholds(&md, s, o)
	writeEnvironment(&md, s)
	writeTimings(&md, s)
	writeErrors(&md, s)
	return mdToHTML(md.String())
}

// mdToHTML converts the small markdown subset this package emits (##/###
// headings, pipe tables, "- " lists, paragraphs, `code`, **bold**).
func mdToHTML(md string) string {
	var b strings.Builder
	lines := strings.Split(md, "\n")
	inList := false
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		if inList && !strings.HasPrefix(line, "- ") {
			b.WriteString("</ul>\n")
			inList = false
		}
		switch {
		case strings.HasPrefix(line, "### "):
			fmt.Fprintf(&b, "<h3>%s</h3>\n", mdInline(line[4:]))
		case strings.HasPrefix(line, "## "):
			fmt.Fprintf(&b, "<h2>%s</h2>\n", mdInline(line[3:]))
		case strings.HasPrefix(line, "|"):
			b.WriteString("<table>")
			header := true
			for ; i < len(lines) && strings.HasPrefix(lines[i], "|"); i++ {
				if strings.HasPrefix(lines[i], "|---") {
					continue
				}
				tag := "td"
				if header {
					tag = "th"
				}
				b.WriteString("<tr>")
				for _, c := range splitRow(lines[i]) {
					fmt.Fprintf(&b, "<%s>%s</%s>", tag, mdInline(c), tag)
				}
				b.WriteString("</tr>")
				header = false
			}
			i--
			b.WriteString("</table>\n")
		case strings.HasPrefix(line, "- "):
			if !inList {
				b.WriteString("<ul>")
				inList = true
			}
			fmt.Fprintf(&b, "<li>%s</li>", mdInline(line[2:]))
		case strings.TrimSpace(line) == "":
		default:
			fmt.Fprintf(&b, "<p>%s</p>\n", mdInline(line))
		}
	}
	if inList {
		b.WriteString("</ul>\n")
	}
	return b.String()
}

func splitRow(line string) []string {
	inner := strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(line), "| "), " |")
	var cells []string
	var cur strings.Builder
	for i := 0; i < len(inner); i++ {
		if inner[i] == '\\' && i+1 < len(inner) && inner[i+1] == '|' {
			cur.WriteByte('|')
			i++
			continue
		}
		if strings.HasPrefix(inner[i:], " | ") {
			cells = append(cells, cur.String())
			cur.Reset()
			i += 2
			continue
		}
		cur.WriteByte(inner[i])
	}
	return append(cells, cur.String())
}

// mdInline escapes text and renders `code` and **bold**.
func mdInline(s string) string {
	s = esc(s)
	var b strings.Builder
	code, bold := false, false
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '`':
			if code {
				b.WriteString("</code>")
			} else {
				b.WriteString("<code>")
			}
			code = !code
		case !code && strings.HasPrefix(s[i:], "**"):
			if bold {
				b.WriteString("</strong>")
			} else {
				b.WriteString("<strong>")
			}
			bold = !bold
			i++
		default:
			b.WriteByte(s[i])
		}
	}
	if code {
		b.WriteString("</code>")
	}
	if bold {
		b.WriteString("</strong>")
	}
	return b.String()
}
