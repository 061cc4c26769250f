package report

import (
	"fmt"
	"strings"

	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

func init() {
	sections.Register(50, familySection{markdown: writeAgingFragments, html: writeAgingFragmentsHTML}, results.FamilyAging, results.FamilyFragments)
}

// Agings returns every aging result of the set, in file order.
func (s *Set) Agings() []*results.AgingResult {
	var out []*results.AgingResult
	for _, f := range s.Files {
		if f.Aging != nil {
			out = append(out, f.Aging)
		}
	}
	return out
}

// FragmentResults returns every fragment result of the set, in file order.
func (s *Set) FragmentResults() []*results.FragmentResult {
	var out []*results.FragmentResult
	for _, f := range s.Files {
		if f.Fragments != nil {
			out = append(out, f.Fragments)
		}
	}
	return out
}

var agingIntro = "A UDP flow from a pinned client port (iperf3 `--cport`) ran with the dpctl and tc checks, then idled longer than the kernel's flowtable timeout and OVS's max-idle as read from each hypervisor, plus a margin (nothing measured or read while it idled). " +
	"After the idle each hypervisor's datapath flows were dumped once: a flow of the 5-tuple still there is *not an aging measurement*. " +
	"Then the same 5-tuple restarted and each hypervisor's datapath was dumped every `intervals.aging_sample.poll`: *In the datapath* is the first dump in which the tuple's flows counted packets, *In hardware* the first in which OVS claims them in hardware (`offloaded:yes`) of the claims that end in proof (counters grown over the dump before; a hardware rule's counters reach tc later, so their growth is given beside it), both in ms from the restarted client's launch, ± the resolution (the span back to the dump before). " +
	fmt.Sprintf("Goal on hardware: in hardware ≤ %d ms.", results.AgingGoal.Milliseconds())

// AgingRows are the aging table's rows: one per hypervisor.
func AgingRows(as []*results.AgingResult) (header []string, rows [][]string) {
	header = []string{"Path", "5-tuple", "Idle", "Hypervisor", "max-idle", "Aged out", "In the datapath", "In hardware", "Verdict"}
	ms := func(v, res *float64) string {
		if v == nil {
			return "never"
		}
		s := fmt.Sprintf("%.0f ms", *v)
		if res != nil {
			s += fmt.Sprintf(" (± %.0f ms)", *res)
		}
		return s
	}
	for _, a := range as {
		tuple := orDash(a.Tuple)
		if a.RestartTuple != "" && !a.SameTuple {
			tuple += " / restart: " + a.RestartTuple + " (**not the same flow**)"
		}
		idle := fmt.Sprintf("%.0f s", a.IdleSeconds)
		verdict := orDash(a.Verdict)
		if a.Error != "" {
			verdict = "error: " + a.Error
		}
		if len(a.Hosts) == 0 {
			rows = append(rows, []string{pathName(a.Path), tuple, idle, results.Dash, results.Dash, results.Dash, results.Dash, results.Dash, verdict})
			continue
		}
		for _, h := range a.Hosts {
			aged := "yes"
			if !h.AgedOut {
				aged = "**no**: " + h.AgedOutReason
			}
			dp, hw := results.Dash, results.Dash
			if h.AgedOut && a.Error == "" {
				dp = ms(h.ReinstallMs, h.ReinstallResolutionMs)
				hw = ms(h.ReoffloadMs, h.ReoffloadResolutionMs)
				if h.ReoffloadMs != nil && h.ReoffloadProvenMs != nil && *h.ReoffloadProvenMs > *h.ReoffloadMs {
					hw += fmt.Sprintf(", counters grew by %.0f ms", *h.ReoffloadProvenMs)
				}
				switch {
				case h.Software:
					hw = "never — software datapath"
				case h.ReoffloadMs != nil && *h.ReoffloadMs > float64(results.AgingGoal.Milliseconds()):
					hw += fmt.Sprintf(" (above the %d ms goal)", results.AgingGoal.Milliseconds())
				}
			}
			rows = append(rows, []string{pathName(a.Path), tuple, idle, h.Hypervisor,
				fmt.Sprintf("%.0f s (%s)", h.MaxIdleSeconds, orDash(h.MaxIdleSource)), aged, dp, hw, verdict})
		}
	}
	return header, rows
}

// agingNotes are the verdict lines under the aging table.
func agingNotes(as []*results.AgingResult) []string {
	var out []string
	for _, a := range as {
		if a.Reason != "" {
			out = append(out, fmt.Sprintf("%s (%s): %s", pathName(a.Path), orDash(a.Verdict), a.Reason))
		}
	}
	return out
}

// writeTableMD writes a section's table and its lines, under its heading
// and intro when withHeading (the HTML writes those itself).
func writeTableMD(b *strings.Builder, heading, intro string, withHeading bool, header []string, rows [][]string, notes []string) {
	if withHeading {
		b.WriteString("## " + heading + "\n\n" + intro + "\n\n")
	}
	b.WriteString(mdTable(header, rows))
	b.WriteString("\n")
	for _, n := range notes {
		b.WriteString("- " + strings.ReplaceAll(n, "\n", " ") + "\n")
	}
	b.WriteString("\n")
}

// writeTableHTML is writeTableMD's section in the HTML report.
func writeTableHTML(b *strings.Builder, heading, intro string, header []string, rows [][]string, notes []string) {
	fmt.Fprintf(b, "<h2>%s</h2>\n<p class=\"note\">%s</p>\n", esc(heading), mdInline(intro))
	var md strings.Builder
	writeTableMD(&md, heading, intro, false, header, rows, notes)
	b.WriteString(mdToHTML(md.String()))
}

var fragmentsIntro = "UDP datagrams above the tenant network's MTU (Neutron's) reach the datapath as IP fragments, matched by OVS as `ipv4(frag=first)` / `ipv4(frag=later)` and by tc flower as `ip_flags frag/firstfrag` / `frag/nofirstfrag`; mlx5 cannot match them, so they stay in software by the NIC's design. " +
	"The tc and dpctl checks split the pair's flows: the fragment flows are labelled, never judged; every other flow of the pair (`frag=no`) is judged as in any window (*Unfragmented*)."

// FragmentRows are the fragment table's rows: one per check and hypervisor.
func FragmentRows(fs []*results.FragmentResult) (header []string, rows [][]string) {
	header = []string{"Path", "Datagram / MTU", "Check", "Hypervisor", "Fragment flows", "Fragments", "Unfragmented", "Reason"}
	for _, f := range fs {
		size := fmt.Sprintf("%d B / %d", f.Length, f.MTU)
		if f.Error != "" {
			rows = append(rows, []string{pathName(f.Path), size, results.Dash, results.Dash, results.Dash, results.Dash, results.Dash, "error: " + f.Error})
			continue
		}
		for _, c := range f.Checks {
			frag := "none counted"
			switch {
			case c.Labelled:
				frag = fmt.Sprintf("software, by design (+%d packets)", c.FragPackets)
			case c.FragInHardware > 0:
				frag = fmt.Sprintf("**%d claimed in hardware** (not mlx5's)", c.FragInHardware)
			}
			rows = append(rows, []string{pathName(f.Path), size, c.Name, c.Hypervisor, fmt.Sprint(c.FragFlows), frag, string(c.Verdict), strings.ReplaceAll(c.Reason, "|", "\\|")})
		}
	}
	return header, rows
}

// fragmentNotes are the lines under the fragment table.
func fragmentNotes(fs []*results.FragmentResult) []string {
	var out []string
	for _, f := range fs {
		out = append(out, pathName(f.Path)+": "+f.Reason)
	}
	return out
}

const (
	agingHeading     = "Aging and re-offload"
	fragmentsHeading = "Fragmented UDP"
)

func writeAgingFragments(b *strings.Builder, s *Set) {
	if as := s.Agings(); len(as) > 0 {
		h, rows := AgingRows(as)
		writeTableMD(b, agingHeading, agingIntro, true, h, rows, agingNotes(as))
	}
	if fs := s.FragmentResults(); len(fs) > 0 {
		h, rows := FragmentRows(fs)
		writeTableMD(b, fragmentsHeading, fragmentsIntro, true, h, rows, fragmentNotes(fs))
	}
}

func writeAgingFragmentsHTML(b *strings.Builder, s *Set) {
	if as := s.Agings(); len(as) > 0 {
		h, rows := AgingRows(as)
		writeTableHTML(b, agingHeading, agingIntro, h, rows, agingNotes(as))
	}
	if fs := s.FragmentResults(); len(fs) > 0 {
		h, rows := FragmentRows(fs)
		writeTableHTML(b, fragmentsHeading, fragmentsIntro, h, rows, fragmentNotes(fs))
	}
}
