package report

import (
	"fmt"
	"sort"
	"strings"

	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

func init() {
	sections.Register(60, familySection{markdown: writeFailover, html: writeFailoverHTML}, results.FamilyFailover)
}

// Failovers returns every failover result of the set, by path.
func (s *Set) Failovers() []*results.FailoverResult {
	out := gather(s, func(r *results.Results) []results.FailoverResult { return r.Failover })
	sort.SliceStable(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

const failoverIntro = "One member of one hypervisor's bond taken down and brought back by the configured commands during one measured UDP flow at a fixed rate " +
	"(`failover.*`); the commands were the window's only actions, nothing read a guest or hypervisor in it. " +
	"*Outage* is the flow's longest gap after the down, *Failback* after the restore: the datagrams lost in the receiver's interval that carried the gap at the sent rate " +
	"(the most it lasted; the least beside it when the interval lost more than one run), one datagram the resolution. " +
	"The bond's state was read before and after the window; *In hardware again* is the time from a second down (and its restore), outside the window, " +
	"to the end of the first re-run evidence window whose checks all said offloaded."

// FailoverRows are the failover table's rows, one per path.
func FailoverRows(fs []*results.FailoverResult) (header []string, rows [][]string) {
	header = []string{"Path", "Hypervisor", "Bond", "Member", "Outage", "Failback", "Lost / sent", "Goal", "Verdict", "In hardware again (failover / restore)"}
	for _, f := range fs {
		gapCell := func(g *results.FailoverGap) string {
			switch {
			case f.Flow == nil:
				return results.Dash
			case g == nil:
				return fmt.Sprintf("< %.2f ms (no loss)", f.Flow.ResolutionMs)
			case g.Open:
				return fmt.Sprintf("≥ %.1f ms, not over", g.Ms)
			case g.Spread:
				return fmt.Sprintf("≤ %.1f ms (spread loss)", g.Ms)
			case g.MinRun == g.Lost:
				return fmt.Sprintf("%.1f ms", g.Ms)
			}
			return fmt.Sprintf("%.1f ms (≥ %.1f)", g.Ms, g.MinMs)
		}
		lost := results.Dash
		if f.Flow != nil {
			lost = fmt.Sprintf("%d / %d", f.Flow.Lost, f.Flow.Sent)
		}
		goal := results.Dash
		if f.GoalMs > 0 {
			goal = fmt.Sprintf("%.0f ms", f.GoalMs)
		}
		var ro []string
		for _, r := range f.Reoffload {
			ro = append(ro, r.Words())
		}
		if len(ro) == 0 {
			ro = []string{results.Dash}
		}
		rows = append(rows, []string{string(f.Path), f.Hypervisor + " (" + f.Side + ")", f.Bond, f.Member, gapCell(f.Outage), gapCell(f.Failback),
			lost, goal, f.Verdict, strings.Join(ro, " / ")})
	}
	return header, rows
}

// FailoverFindings are the lines under the table: the verdict's reason,
// the bond's states, the commands.
func FailoverFindings(fs []*results.FailoverResult) []string {
	var out []string
	for _, f := range fs {
		out = append(out, fmt.Sprintf("%s: **%s**: %s", f.Path, f.Verdict, f.Reason))
		for _, st := range []struct {
			when string
			b    *results.BondState
		}{{"before", f.Before}, {"after the window", f.AfterWindow}, {"after the second down", f.AfterDown}, {"after its restore", f.AfterRestore}} {
			if st.b != nil {
				s := fmt.Sprintf("%s: bond %s (%s) %s: %s", f.Path, f.Bond, st.b.Source, st.when, st.b.Line())
				if len(st.b.LAG) > 0 {
					s += "; LAG: " + strings.Join(st.b.LAG, "; ")
				}
				out = append(out, s)
			}
		}
		for _, a := range []struct {
			what string
			a    *results.FailoverAction
		}{{"down", f.Down}, {"restore", f.Restore}} {
			if a.a != nil {
				out = append(out, fmt.Sprintf("%s: %s `%s` at +%.2f s, exit %d", f.Path, a.what, a.a.Command, a.a.AtSeconds, a.a.ExitCode))
			}
		}
		if f.Flow != nil && f.Flow.OutOfOrder > 0 {
			out = append(out, fmt.Sprintf("%s: %d datagram(s) arrived out of order", f.Path, f.Flow.OutOfOrder))
		}
	}
	return out
}

func failoverSection(fs []*results.FailoverResult) tableSection {
	h, rows := FailoverRows(fs)
	return tableSection{heading: "Bond failover: outage under a fixed UDP rate", intro: failoverIntro, header: h, rows: rows, findings: FailoverFindings(fs)}
}

func writeFailover(b *strings.Builder, s *Set) {
	if fs := s.Failovers(); len(fs) > 0 {
		failoverSection(fs).md(b, true)
	}
}

func writeFailoverHTML(b *strings.Builder, s *Set) {
	if fs := s.Failovers(); len(fs) > 0 {
		failoverSection(fs).html(b, "")
	}
}
