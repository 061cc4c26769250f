package report

import (
	"fmt"
	"sort"
	"strings"

	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

func init() {
	sections.Register(40, familySection{markdown: writeHold, html: writeHoldHTML}, results.FamilyRuleScale, results.FamilyChurn)
}

// Issue 38's evidence windows: the rule-scale table and the churn table.

// RuleScales returns every rule-scale result of the set, by path then N.
func (s *Set) RuleScales() []*results.RuleScaleResult {
	var out []*results.RuleScaleResult
	for _, f := range s.Files {
		for i := range f.RuleScale {
			out = append(out, &f.RuleScale[i])
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Path != out[j].Path {
			return out[i].Path < out[j].Path
		}
		return out[i].N < out[j].N
	})
	return out
}

// Churns returns every churn result of the set, by path.
func (s *Set) Churns() []*results.ChurnResult {
	var out []*results.ChurnResult
	for _, f := range s.Files {
		for i := range f.Churn {
			out = append(out, &f.Churn[i])
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

const ruleScaleIntro = "The client guest opened N distinct UDP 5-tuples (one source port each) and kept them alive while each hypervisor of the pair was read every `intervals.rule_scale_sample.poll`: " +
	"its own evidence window, not a throughput window. *Table* is what was counted: the pair's datapath flows (`dpctl/dump-flows -m`; NORMAL forwarding wildcards the L4 ports, so N 5-tuples can be a handful of flows) " +
	"or, with port security, the conntrack entries of the 5-tuples. *Rules/s* is the insertion rate over the growth phase, *Plateau* where growth stopped, *In hardware* when `rule_scale.hardware_share` of the final count was. " +
	"*OVS* is upcall/show's flows and dynamic flow limit at the last read; *Log and counters* the ovs-vswitchd log's scale lines of the window (lower bounds: OVS rate-limits them) and coverage's `upcall_flow_limit_hit`; *Reads* the sampler's own cost."

// RuleScaleRows are the rule-scale table's rows: one per N, hypervisor and
// table read.
func RuleScaleRows(cs []*results.RuleScaleResult) (header []string, rows [][]string) {
	header = []string{"N", "Path", "Opened", "Hypervisor", "Steering", "Table", "Final (in hardware)", "Rules/s", "Plateau", "In hardware", "OVS", "Log and counters", "Reads"}
	for _, c := range cs {
		opened := fmt.Sprintf("%d in %.1f s", c.Opened, c.OpenSeconds)
		if c.BindFailures > 0 {
			opened += fmt.Sprintf(" (%d ports not bound)", c.BindFailures)
		}
		base := []string{fmt.Sprint(c.N), pathName(c.Path), opened}
		if c.Error != "" {
			opened = "error: " + c.Error
			base[2] = opened
		}
		if len(c.Hosts) == 0 {
			rows = append(rows, append(base, results.Dash, results.Dash, results.Dash, results.Dash, results.Dash, results.Dash, results.Dash, results.Dash, results.Dash, results.Dash))
			continue
		}
		for _, h := range c.Hosts {
			logs := logCell(h)
			ovs := results.Dash
			if h.OVSFlowLimit > 0 {
				ovs = fmt.Sprintf("%d flows, limit %d", h.OVSFlows, h.OVSFlowLimit)
			}
			reads := fmt.Sprintf("%d, %.0f ms avg, %.0f ms max", h.Samples, h.ReadMeanMS, h.ReadMaxMS)
			tables := []*results.Insertion{h.Flows, h.Conntrack}
			any := false
			for _, in := range tables {
				if in == nil {
					continue
				}
				any = true
				table := in.Table
				if table == c.Judged {
					table += " (judged)"
				}
				rows = append(rows, append(append([]string{}, base...), h.Hypervisor, h.Steering, table, fmt.Sprintf("%d (%d)", in.Final, in.FinalInHardware),
					fmt.Sprintf("%.0f", in.RulesPerSecond), plateauCell(in, c.N), hardwareCell(in, h.Software), ovs, logs, reads))
			}
			if !any {
				rows = append(rows, append(append([]string{}, base...), h.Hypervisor, h.Steering, "no timeline: "+h.Reason, results.Dash, results.Dash, results.Dash, results.Dash, ovs, logs, reads))
			}
		}
	}
	return header, rows
}

func plateauCell(in *results.Insertion, n int) string {
	switch {
	case in.BelowTarget:
		return fmt.Sprintf("%d at %.1f s, below N %d", in.PlateauCount, in.PlateauSeconds, n)
	case in.Plateau:
		return fmt.Sprintf("%d at %.1f s", in.PlateauCount, in.PlateauSeconds)
	case in.RulesPerSecond > 0:
		return "still growing at the last read"
	}
	return "no growth"
}

func hardwareCell(in *results.Insertion, software bool) string {
	switch {
	case software:
		return "never (software datapath: none by construction)"
	case in.HardwareSeconds != nil:
		return fmt.Sprintf("%.1f s", *in.HardwareSeconds)
	}
	return fmt.Sprintf("never (%d of %d at the last read)", in.FinalInHardware, in.Final)
}

func logCell(h results.RuleScaleHost) string {
	var parts []string
	kinds := make([]string, 0, len(h.LogEvents))
	for k := range h.LogEvents {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		parts = append(parts, fmt.Sprintf("%s ×%d", k, h.LogEvents[k]))
	}
	if h.LogNote != "" {
		parts = append(parts, "log "+h.LogNote)
	} else if len(parts) == 0 {
		parts = append(parts, "no scale line")
	}
	if v, ok := h.Coverage["upcall_flow_limit_hit"]; ok {
		parts = append(parts, fmt.Sprintf("upcall_flow_limit_hit +%d", v))
	}
	return strings.Join(parts, "; ")
}

const churnIntro = "One steady UDP flow between the pair for the whole window while each hypervisor's datapath flows of the pair (the tc rules OVS installed, on the kernel datapath), OVS's coverage counters and the representor's counters were read every `intervals.churn_sample.poll`: " +
	"its own evidence window, not a throughput window. *Churn* counts the pair's rules deleted and re-added (gone and back, a new ufid, counters restarting while the hypervisor deleted flows), gone, or out of hardware; " +
	"a counter reset with no deletion is a modify (OVS before 3.2 resets tc's counters on modify), listed but not counted. *Churn* is the higher of the datapath flows' count and the representor's tc rules' (*tc rules*: the handle for the ufid). *Slow path* is the representor's slow-path (cpu_hit) packets per period over the flow's. " +
	"*Blind spot* says what reads this far apart cannot see, with coverage's deletions over the window (every flow of the hypervisor)."

// ChurnRows are the churn table's rows: one per hypervisor.
func ChurnRows(cs []*results.ChurnResult) (header []string, rows [][]string) {
	header = []string{"Path", "Window", "Hypervisor", "Verdict", "Churn", "Events", "Slow path (max per period)", "Deleted (coverage)", "Reads", "Blind spot", "tc rules (representor)"}
	for _, c := range cs {
		window := fmt.Sprintf("%.0f s, %s, read every %.0f s, delivered %s, loss %s", c.DurationSeconds, results.FormatBps(float64(c.BitrateBps)), c.SampleSeconds,
			results.FormatBps(c.DeliveredBps), results.FormatLoss(c.LossPercent))
		if c.Error != "" {
			window = "error: " + c.Error
		}
		if len(c.Hosts) == 0 {
			rows = append(rows, []string{pathName(c.Path), window, results.Dash, results.Dash, results.Dash, results.Dash, results.Dash, results.Dash, results.Dash, results.Dash, results.Dash})
			continue
		}
		for _, h := range c.Hosts {
			verdict := "churned"
			switch {
			case h.Stable:
				verdict = "stable"
			case h.Flows == 0 && h.Count == 0:
				verdict = "not judged: no flow of the pair"
			}
			if h.Reads < 2 {
				verdict = "not judged: " + h.Reason
			}
			var ev []string
			for _, e := range h.Events {
				w := fmt.Sprintf("%s %.0f–%.0f s", e.Kind, e.AfterSeconds, e.BeforeSeconds)
				if !e.Counted {
					w += " (not counted)"
				}
				ev = append(ev, w)
			}
			events := results.Dash
			if len(ev) > 0 {
				events = strings.Join(ev, ", ")
			}
			slow := fmt.Sprintf("%s, %d over %s", results.FormatPercent(100*h.SlowPathMax), h.SlowPathOver, results.FormatPercent(100*c.SlowPathShare))
			if h.SlowPathNote != "" {
				slow += " (" + h.SlowPathNote + ")"
			}
			deleted := results.Dash
			if h.Deleted >= 0 {
				deleted = fmt.Sprint(h.Deleted)
			}
			tc := h.TCReason
			if h.TCChurnCount != nil {
				var ev []string
				for _, e := range h.TCEvents {
					if e.Counted {
						ev = append(ev, fmt.Sprintf("%s %.0f–%.0f s", e.Kind, e.AfterSeconds, e.BeforeSeconds))
					}
				}
				tc = fmt.Sprintf("%d counted", *h.TCChurnCount)
				if len(ev) > 0 {
					tc += ": " + strings.Join(ev, ", ")
				}
			}
			if tc == "" {
				tc = results.Dash
			}
			rows = append(rows, []string{pathName(c.Path), window, h.Hypervisor, verdict, fmt.Sprint(h.Count), events, slow, deleted,
				fmt.Sprintf("%d, %.0f ms avg, %.0f ms max", h.Reads, h.ReadMeanMS, h.ReadMaxMS), h.BlindSpot, tc})
		}
	}
	return header, rows
}

func writeHoldMD(b *strings.Builder, s *Set, headings bool) {
	if cs := s.RuleScales(); len(cs) > 0 {
		if headings {
			fmt.Fprintf(b, "## Rule scale and insertion rate\n\n%s\n\n", ruleScaleIntro)
		}
		b.WriteString(mdTable(RuleScaleRows(cs)))
		b.WriteString("\n")
	}
	if cs := s.Churns(); len(cs) > 0 {
		if headings {
			fmt.Fprintf(b, "## Long window without churn\n\n%s\n\n", churnIntro)
		}
		b.WriteString(mdTable(ChurnRows(cs)))
		b.WriteString("\n")
	}
}

func writeHold(b *strings.Builder, s *Set) { writeHoldMD(b, s, true) }

func writeHoldHTML(b *strings.Builder, s *Set) {
	if cs := s.RuleScales(); len(cs) > 0 {
		fmt.Fprintf(b, "<h2>Rule scale and insertion rate</h2>\n<p class=\"note\">%s</p>\n", mdInline(ruleScaleIntro))
		b.WriteString(mdToHTML(mdTable(RuleScaleRows(cs))))
	}
	if cs := s.Churns(); len(cs) > 0 {
		fmt.Fprintf(b, "<h2>Long window without churn</h2>\n<p class=\"note\">%s</p>\n", mdInline(churnIntro))
		b.WriteString(mdToHTML(mdTable(ChurnRows(cs))))
	}
}
