package report

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// Options tune the renderers.
type Options struct {
	// Title of the document; default "ASAP² Direct performance report".
	Title string
	// SeedLayout renders the result tables with exactly the seed's four
	// columns; by default an "Evidence" column is added, stating per row
	// what the offload checks proved (and the spread over repeats).
	SeedLayout bool
	// Thresholds are evaluated rules to show; when nil, the rules stored in
	// the results files are shown.
	Thresholds []results.ThresholdResult
}

func (o Options) title() string {
	if o.Title != "" {
		return o.Title
	}
	return "ASAP² Direct performance report"
}

// Markdown renders the set in the seed's layout plus repeats, offload
// evidence, thresholds, environment and timing sections.
func Markdown(s *Set, o Options) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n\n", o.title())
	b.WriteString(runsParagraph(s))
	if len(fleetFiles(s)) > 0 {
		b.WriteString("\n")
		writeFleet(&b, s)
	}
	b.WriteString("\n## Results\n\n")
	b.WriteString("TCP rows are iperf3's goodput. UDP cells are offered / delivered / loss; gains compare delivered bandwidth (median over repeats).\n\n")
	tables := BuildTables(s)
	if len(tables) == 0 {
		b.WriteString("No profile results.\n")
	}
	for _, t := range tables {
		if t.Note != "" {
			b.WriteString(t.Note + "\n\n")
		}
		fmt.Fprintf(&b, "### %s\n\n", t.Title)
		b.WriteString(MarkdownTable(t, o.SeedLayout))
		b.WriteString("\n")
		if notes := RunNotes(t); len(notes) > 0 {
			for _, n := range notes {
				b.WriteString("- " + strings.ReplaceAll(n, "\n", " ") + "\n")
			}
			b.WriteString("\n")
		}
	}
	writeFamilies(&b, s) // families.go: each family's sections, in order
	writeSpread(&b, s)
	writeCPU(&b, s)
	writeChecks(&b, s)
	writeThresholds(&b, s, o)
	writeEnvironment(&b, s)
	writeTimings(&b, s)
	writeErrors(&b, s)
	return b.String()
}

// MarkdownTable renders one table; seedLayout drops the Evidence column.
// Without that column a gain whose two sides the offload checks did not
// prove (ASAP² offload proven, baseline software) says so in its own cell,
// so the seed-layout table never shows an unproven gain as a clean number.
func MarkdownTable(t Table, seedLayout bool) string {
	header := append([]string(nil), t.Header...)
	if !seedLayout {
		header = append(header, "Evidence")
	}
	rows := make([][]string, 0, len(t.Rows))
	for _, r := range t.Rows {
		gain := r.GainCell
		if seedLayout && r.HasGain && !r.pathsProven() {
			gain += " (" + UnprovenGainNote + ")"
		}
		cells := []string{r.Label, r.ASAP2Cell, r.BaselineCell, gain}
		if !seedLayout {
			cells = append(cells, r.EvidenceCell)
		}
		rows = append(rows, cells)
	}
	return mdTable(header, rows)
}

// UnprovenGainNote marks a seed-layout gain whose data paths the offload
// checks did not prove.
const UnprovenGainNote = "data path not proven by the offload checks"

// pathsProven reports whether both sides show the evidence their path
// must show (a side that was not run has no evidence to miss).
func (r Row) pathsProven() bool {
	if r.ASAP2Evidence != nil && !Expected(results.PathASAP2, r.ASAP2Evidence.Status) {
		return false
	}
	if r.BaselineEvidence != nil && !Expected(results.PathBaseline, r.BaselineEvidence.Status) {
		return false
	}
	return true
}

func mdTable(header []string, rows [][]string) string {
	var b strings.Builder
	line := func(cells []string) {
		b.WriteString("|")
		for _, c := range cells {
			b.WriteString(" " + mdEscape(c) + " |")
		}
		b.WriteString("\n")
	}
	line(header)
	sep := make([]string, len(header))
	for i := range sep {
		sep[i] = "---"
	}
	b.WriteString("|" + strings.Join(sep, "|") + "|\n")
	for _, r := range rows {
		line(r)
	}
	return b.String()
}

func mdEscape(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	s = strings.ReplaceAll(s, "\n", " ")
	if s == "" {
		return results.Dash
	}
	return s
}

func pathName(p results.Path) string {
	switch p {
	case results.PathASAP2:
		return "ASAP²"
	case results.PathBaseline:
		return "Baseline"
	}
	return string(p)
}

func fileLabel(f *results.Results) string {
	return fmt.Sprintf("%s run %s", pathName(f.Config.ExpectedPath), f.RunID)
}

func runsParagraph(s *Set) string {
	var b strings.Builder
	for _, f := range s.Files {
		state := "incomplete (no finish time: the run was interrupted or is still going)"
		if f.FinishedAt != nil {
			state = "finished " + f.FinishedAt.UTC().Format(time.RFC3339)
		}
		build := f.Config.BuildLabel
		if build == "" {
			build = f.Environment.BuildLabel
		}
		fmt.Fprintf(&b, "- %s: cloud `%s`, build `%s`, %s, started %s, %s; %d profile result(s).\n",
			fileLabel(f), orDash(firstNonEmpty(f.Config.Cloud, f.Environment.Cloud)), orDash(build), f.Config.Mode(),
			f.StartedAt.UTC().Format(time.RFC3339), state, len(f.Profiles))
	}
	if modes := setModes(s); len(modes) > 1 {
		fmt.Fprintf(&b, "\n**The runs of this report were measured in different port-security modes (%s)**: a gain between them mixes the offload with the cost of security groups.\n", strings.Join(modes, ", "))
	}
	return b.String()
}

// setModes lists the distinct port-security modes of the set's runs, in
// file order (an unrecorded mode counts as off, see ModeDifferences).
func setModes(s *Set) []string {
	var out []string
	for _, f := range s.Files {
		m := f.Config.Mode()
		if m == results.ModeUnrecorded {
			m = results.ModeSecurityGroupsOff
		}
		if !slices.Contains(out, m) {
			out = append(out, m)
		}
	}
	return out
}

func writeSpread(b *strings.Builder, s *Set) {
	profiles := s.Profiles()
	if len(profiles) == 0 {
		return
	}
	b.WriteString("## Repeats and interval statistics\n\n")
	b.WriteString("Delivered rate per profile and path over repeats (median, min–max, coefficient of variation), and over every iperf3 interval of every repeat (min / median / max, and the worst interval).\n\n")
	var rows [][]string
	for _, p := range sortedProfiles(profiles) {
		sm := p.Summary
		status := "stable"
		switch {
		case sm.Delivered.N == 0:
			status = "no successful repeat"
		case sm.Unstable:
			status = "UNSTABLE: " + sm.UnstableReason
		case sm.Delivered.N == 1:
			status = "single run"
		}
		if sm.Failed > 0 {
			status += fmt.Sprintf("; %d repeat(s) failed", sm.Failed)
		}
		row := []string{profileTitle(p), pathName(p.Path), fmt.Sprintf("%d", sm.Delivered.N), results.Dash, results.Dash, results.Dash, results.Dash, results.Dash, status}
		if sm.Delivered.N > 0 {
			row[3] = results.FormatBps(sm.Delivered.Median)
		}
		if sm.Delivered.N > 1 {
			row[4] = results.FormatBps(sm.Delivered.Min) + " – " + results.FormatBps(sm.Delivered.Max)
			row[5] = results.FormatPercent(sm.Delivered.CVPercent)
		}
		if iv := sm.Intervals; iv != nil {
			row[6] = results.FormatBps(iv.MinBps) + " / " + results.FormatBps(iv.MedianBps) + " / " + results.FormatBps(iv.MaxBps)
			row[7] = fmt.Sprintf("%s at %.0f–%.0f s", results.FormatBps(iv.Worst.Bps), iv.Worst.Start, iv.Worst.End)
		}
		rows = append(rows, row)
	}
	b.WriteString(mdTable([]string{"Profile", "Path", "Runs", "Delivered median", "Min – max", "CV", "Intervals min / median / max", "Worst interval", "Status"}, rows))
	b.WriteString("\n")
}

// profileTitle is a short human name: the profile's Name, else its label.
func profileTitle(p *results.ProfileResult) string {
	if p.Name != "" {
		return p.Name
	}
	sh := ShapeOf(p)
	k := tableOf(sh)
	proto := strings.ToUpper(sh.Protocol)
	if k.kind == TableUDPCapped {
		return fmt.Sprintf("UDP %s/stream, %s", results.FormatBpsShort(sh.BitrateBps), RowLabel(k.kind, sh))
	}
	return proto + " " + RowLabel(k.kind, sh)
}

// sortedProfiles orders profiles by table, seed row order, then path.
func sortedProfiles(ps []*results.ProfileResult) []*results.ProfileResult {
	out := append([]*results.ProfileResult(nil), ps...)
	sort.SliceStable(out, func(i, j int) bool {
		a, b := ShapeOf(out[i]), ShapeOf(out[j])
		ka, kb := tableOf(a), tableOf(b)
		if ka != kb {
			if ka.kind != kb.kind {
				return ka.kind < kb.kind
			}
			return ka.capBps < kb.capBps
		}
		if a != b {
			if a.LengthBytes != b.LengthBytes {
				return a.LengthBytes < b.LengthBytes
			}
			return a.Streams < b.Streams
		}
		return out[i].Path < out[j].Path
	})
	return out
}

// SecurityGroupsNote is what the checks of a run with security groups on
// rest on.
const SecurityGroupsNote = "Security groups on: every packet of the pair crosses conntrack (`ct()`, recirculation). " +
	"ICMP under conntrack is not offloaded by design, so here the flood ping only opens the path; the verdicts rest on the TCP and UDP flows."

func writeChecks(b *strings.Builder, s *Set) {
	b.WriteString("## Offload checks\n\n")
	b.WriteString("The complementary checks ran in their own window (flood ping, then a sustained flow), never during a measured iperf3 window.\n\n")
	b.WriteString(mdTable([]string{"Check", "Offloaded when", "Software when"}, verdictBasis))
	b.WriteString("\nOnly pipelines (a first rule or flow, then the stages its `goto chain` / `recirc()` leads to) whose stages together match the two guests as source and destination count, each direction on its own; anything else is named as unrelated or exception traffic. " +
		"An asap2 run needs every check offloaded on both hypervisors for both flows, and tc confirming dpctl at each; anything short of that is inconclusive or \"partial proof\".\n\n")
	for _, f := range s.Files {
		fmt.Fprintf(b, "### %s\n\n", fileLabel(f))
		ev := Judge(f.Offload, f.Config.Checks, "run")
		fmt.Fprintf(b, "Overall: **%s** (%s).\n\n", ev.Status, ev.Detail)
		if f.Config.Mode() == results.ModeSecurityGroupsOn {
			b.WriteString(SecurityGroupsNote + "\n\n")
		}
		if len(f.Offload) == 0 {
			continue
		}
		var rows [][]string
		for _, c := range f.Offload {
			rows = append(rows, []string{c.Name, orDash(c.Flow), string(c.Verdict), orDash(c.Reason), orDash(strings.Join(c.EvidenceFiles, ", "))})
		}
		b.WriteString(mdTable([]string{"Check", "Flow", "Verdict", "Reason", "Evidence files"}, rows))
		b.WriteString("\n")
		writeBasis(b, f.Offload)
	}
}

// writeBasis lists what each judged verdict looked at (pipelines, directions,
// samples), for the checks that recorded it.
func writeBasis(b *strings.Builder, checks []results.CheckResult) {
	head := false
	for _, c := range checks {
		for _, l := range c.Basis {
			if !head {
				b.WriteString("What the tc and dpctl verdicts looked at (stages of each pipeline, first to last):\n\n")
				head = true
			}
			fmt.Fprintf(b, "- %s, %s flow: %s\n", c.Name, orDash(c.Flow), l)
		}
	}
	if head {
		b.WriteString("\n")
	}
}

// verdictBasis is what each check's verdict rests on, for a release
// engineer reading the report (docs/CONFIG.md has the long form).
var verdictBasis = [][]string{
	{"tc", "every rule of the pair's pipeline, chain 0 through `goto chain N` to the rule that outputs, is `in_hw` and its hardware packet counters grew between two samples, in each direction", "a rule of the pair's pipeline is `not_in_hw`/`skip_hw` and counted packets (also beside an `in_hw` first stage), or there are none while the flow ran"},
	{"dpctl", "every flow of the pair's pipeline, `recirc_id(0)` through `recirc()` to the flow that outputs, is `offloaded:yes` and grew, in each direction (OVS's claim: tc must agree)", "a flow of the pair's pipeline is `dp:ovs`, or `dp:tc` without `offloaded:yes` (TC in software), and counted packets"},
	{"conntrack (security groups on only)", "every connection the flow's iperf3 opened is in the hypervisor's kernel conntrack table as `[HW_OFFLOAD]`, none missing or extra, and the pair's datapath flows cross `ct(`", "a connection is tracked in software or by the software flowtable (`[OFFLOAD]`), or only OVS's userspace conntrack holds them"},
	{"representor", "at most the first packets reached the representor (printed and by tcpdump's own summary) while the guest's own interface saw the flow", "more than the first packets reached the representor"},
	{"counters", "the representor's slow path stayed under its bound while the guest's interface moved the flow and the representor's port tracked it", "the representor's slow path moved more than its bound"},
}

func thresholdsOf(s *Set, o Options) []results.ThresholdResult {
	if o.Thresholds != nil {
		return o.Thresholds
	}
	var out []results.ThresholdResult
	for _, f := range s.Files {
		out = append(out, f.Thresholds...)
	}
	return out
}

// ThresholdRuleText is the rule in words: "tcp-p30 asap2 delivered_bps >= 22.5 Gbit/s".
func ThresholdRuleText(t results.ThresholdResult) string {
	parts := []string{t.Profile}
	if t.Metric != results.MetricGain && t.Path != "" {
		parts = append(parts, t.Path)
	}
	parts = append(parts, t.Metric, t.Op, results.FormatMetric(t.Metric, t.Value))
	return strings.Join(parts, " ")
}

func writeThresholds(b *strings.Builder, s *Set, o Options) {
	ts := thresholdsOf(s, o)
	if len(ts) == 0 {
		return
	}
	pass := 0
	var rows [][]string
	for _, t := range ts {
		res := "FAIL"
		if t.Pass {
			res = "pass"
			pass++
		}
		rows = append(rows, []string{t.Name, ThresholdRuleText(t), res, t.Reason})
	}
	fmt.Fprintf(b, "## Thresholds\n\n%d of %d passed.\n\n", pass, len(ts))
	b.WriteString(mdTable([]string{"Threshold", "Rule", "Result", "Reason"}, rows))
	b.WriteString("\n")
}

// EnvironmentRows are the environment facts per file: item, then one value
// per file in s.Files order.
func EnvironmentRows(s *Set) [][]string {
	get := []struct {
		item string
		fn   func(f *results.Results) string
		// optional rows (the run's identity, issue 37) are left out when
		// no file records them: older files render as before.
		optional bool
	}{
		{"Run ID", func(f *results.Results) string { return f.RunID }, false},
		{"Cloud", func(f *results.Results) string { return firstNonEmpty(f.Environment.Cloud, f.Config.Cloud) }, false},
		{"Build", func(f *results.Results) string { return firstNonEmpty(f.Environment.BuildLabel, f.Config.BuildLabel) }, false},
		{"Build id", func(f *results.Results) string { return firstNonEmpty(f.Environment.BuildID, f.Config.BuildID) }, true},
		{"Harness", harnessCell, true},
		{"Expected path", func(f *results.Results) string { return string(f.Config.ExpectedPath) }, false},
		{"Port security", func(f *results.Results) string { return f.Config.Mode() }, false},
		{"Hypervisor pair", func(f *results.Results) string {
			var n []string
			for _, h := range f.Environment.Hypervisors {
				n = append(n, h.Name)
			}
			return strings.Join(n, " ↔ ")
		}, false},
		{"Hypervisor access", func(f *results.Results) string { return hvJoin(f, accessCell) }, false},
		{"NIC driver", func(f *results.Results) string {
			return hvJoin(f, func(h results.Hypervisor) string {
				if h.NICDriverVersion != "" {
					return h.NICDriver + " " + h.NICDriverVersion
				}
				return h.NICDriver
			})
		}, false},
		{"NIC firmware", func(f *results.Results) string {
			return hvJoin(f, func(h results.Hypervisor) string { return h.NICFirmware })
		}, false},
		{"NIC firmware (devlink)", func(f *results.Results) string { return hvJoin(f, firmwareCell) }, true},
		{"Network backend", func(f *results.Results) string { return backendCell(f.Environment) }, false},
		{"OVS", func(f *results.Results) string {
			return hvJoin(f, func(h results.Hypervisor) string { return h.OVSVersion })
		}, false},
		{"OVN controller", func(f *results.Results) string {
			return hvJoin(f, func(h results.Hypervisor) string { return h.OVNControllerVersion })
		}, false},
		{"tc", func(f *results.Results) string {
			return hvJoin(f, func(h results.Hypervisor) string { return h.TCVersion })
		}, false},
		{"Host kernel", func(f *results.Results) string {
			return hvJoin(f, func(h results.Hypervisor) string { return h.Kernel })
		}, false},
		{"Compute API", func(f *results.Results) string {
			e := f.Environment
			switch {
			case e.ComputeMaxMicroversion == "":
				return ""
			case e.ComputeMinMicroversion != "":
				return "microversions " + e.ComputeMinMicroversion + " to " + e.ComputeMaxMicroversion
			}
			return "max microversion " + e.ComputeMaxMicroversion
		}, false},
		{"Network API", func(f *results.Results) string { return strings.Join(f.Environment.NetworkAPIVersions, ", ") }, true},
		{"Identity API", func(f *results.Results) string { return f.Environment.IdentityAPIVersion }, true},
		{"Kubernetes", func(f *results.Results) string { return f.Environment.KubernetesServerVersion }, true},
		{"iperf3", func(f *results.Results) string { return iperfVersions(f) }, false},
		{"MTU", func(f *results.Results) string { return mtuCell(f.Environment) }, false},
		{"Data network", func(f *results.Results) string { return networkCell(f.Environment) }, false},
		{"Guest kernel", func(f *results.Results) string { return f.Environment.GuestKernel }, false},
		{"Host keys", func(f *results.Results) string {
			if f.Environment.InsecureHostKeys {
				return "NOT verified (insecure opt-in)"
			}
			return "verified"
		}, false},
	}
	rows := make([][]string, 0, len(get))
	for _, g := range get {
		row := []string{g.item}
		recorded := false
		for _, f := range s.Files {
			v := g.fn(f)
			recorded = recorded || v != ""
			row = append(row, orDash(v))
		}
		if g.optional && !recorded {
			continue
		}
		rows = append(rows, row)
	}
	return rows
}

// mtuCell is the data network's MTU and, for a tunnel type, the underlay
// MTU it needs: "8942 (underlay ≥ 9000: geneve over IPv4 takes 58)".
func mtuCell(e results.Environment) string {
	if e.MTU == 0 {
		return ""
	}
	if oh := results.EncapOverhead(e.NetworkType); oh > 0 {
		return fmt.Sprintf("%d (underlay ≥ %d: %s over IPv4 takes %d)", e.MTU, e.MTU+oh, e.NetworkType, oh)
	}
	return fmt.Sprintf("%d", e.MTU)
}

// networkCell is the data network's type and segmentation id: "geneve,
// segmentation id 1234"; empty when not recorded (no admin credentials).
func networkCell(e results.Environment) string {
	switch {
	case e.NetworkType == "":
		return ""
	case e.SegmentationID == "":
		return e.NetworkType
	}
	return e.NetworkType + ", segmentation id " + e.SegmentationID
}

// backendCell is the ML2 backend and Neutron's agents by type:
// "ml2/ovn (OVN Controller agent: 2; OVN Metadata agent: 2)".
func backendCell(e results.Environment) string {
	if e.NetworkBackend == "" && len(e.NetworkAgents) == 0 {
		return ""
	}
	b := firstNonEmpty(e.NetworkBackend, "not known")
	if len(e.NetworkAgents) == 0 {
		return b
	}
	return b + " (" + strings.Join(e.NetworkAgents, "; ") + ")"
}

// hvJoin shows one value when both hypervisors agree, else "hv1: a; hv2: b".
// accessCell is how a hypervisor's commands ran: "ssh" (also a file
// written before the transport was recorded), or "kubernetes: pod NS/NAME,
// container C" (the pod found at connect), each replacement of a pod that
// vanished ("NS/A → NS/B at 12:01:03 UTC (pod vanished: NotFound)"), and
// the node debug pod the host tools ran in, if any.
func accessCell(h results.Hypervisor) string {
	if h.Transport == "" || h.Transport == "ssh" {
		return "ssh"
	}
	c := h.Transport
	if h.Pod != "" {
		c += ": pod " + h.Pod + ", container " + orDash(h.Container)
	}
	for _, m := range h.PodReplacements {
		c += fmt.Sprintf("; %s → %s at %s UTC (%s)", m.From, m.To, m.At.UTC().Format(time.TimeOnly), m.Reason)
	}
	if h.HostToolsPod != "" {
		c += "; host tools in pod " + h.HostToolsPod + ", container " + orDash(h.HostToolsContainer)
	}
	return c
}

func hvJoin(f *results.Results, fn func(results.Hypervisor) string) string {
	hs := f.Environment.Hypervisors
	if len(hs) == 0 {
		return ""
	}
	same := true
	for _, h := range hs[1:] {
		if fn(h) != fn(hs[0]) {
			same = false
		}
	}
	if same {
		return fn(hs[0])
	}
	var parts []string
	for _, h := range hs {
		parts = append(parts, h.Name+": "+orDash(fn(h)))
	}
	return strings.Join(parts, "; ")
}

func iperfVersions(f *results.Results) string {
	var vs []string
	for _, g := range f.Environment.Guests {
		if g.Iperf3Version != "" && !containsString(vs, g.Iperf3Version) {
			vs = append(vs, g.Iperf3Version)
		}
	}
	if len(vs) == 0 {
		for _, p := range f.Profiles {
			for _, r := range p.Runs {
				if r.Iperf3Version != "" && !containsString(vs, r.Iperf3Version) {
					vs = append(vs, r.Iperf3Version)
				}
			}
		}
	}
	if len(vs) <= 1 {
		return strings.Join(vs, "")
	}
	var parts []string
	for _, g := range f.Environment.Guests {
		parts = append(parts, g.Name+": "+orDash(g.Iperf3Version))
	}
	return strings.Join(parts, "; ")
}

func writeEnvironment(b *strings.Builder, s *Set) {
	if len(s.Files) == 0 {
		return
	}
	b.WriteString("## Environment\n\n")
	header := []string{"Item"}
	for _, f := range s.Files {
		header = append(header, fileLabel(f))
	}
	b.WriteString(mdTable(header, EnvironmentRows(s)))
	b.WriteString("\n")
	writeFirmwareWarnings(b, s)
}

// TimingRows are the phase durations per file (seconds), with a total row.
func TimingRows(s *Set) [][]string {
	var phases []string
	for _, f := range s.Files {
		for _, t := range f.Timings {
			if !containsString(phases, t.Phase) {
				phases = append(phases, t.Phase)
			}
		}
	}
	if len(phases) == 0 {
		return nil
	}
	var rows [][]string
	totals := make([]float64, len(s.Files))
	for _, ph := range phases {
		row := []string{ph}
		for i, f := range s.Files {
			sum, found := 0.0, false
			for _, t := range f.Timings {
				if t.Phase == ph {
					sum += t.Seconds
					found = true
				}
			}
			if found {
				row = append(row, formatSeconds(sum))
				totals[i] += sum
			} else {
				row = append(row, results.Dash)
			}
		}
		rows = append(rows, row)
	}
	total := []string{"total"}
	for _, t := range totals {
		total = append(total, formatSeconds(t))
	}
	return append(rows, total)
}

func formatSeconds(s float64) string {
	d := time.Duration(s * float64(time.Second)).Round(100 * time.Millisecond)
	return d.String()
}

func writeTimings(b *strings.Builder, s *Set) {
	rows := TimingRows(s)
	if rows == nil {
		return
	}
	b.WriteString("## Timing\n\n")
	header := []string{"Phase"}
	for _, f := range s.Files {
		header = append(header, fileLabel(f))
	}
	b.WriteString(mdTable(header, rows))
	b.WriteString("\n")
}

func writeErrors(b *strings.Builder, s *Set) {
	var lines []string
	for _, f := range s.Files {
		for _, e := range f.Errors {
			lines = append(lines, fmt.Sprintf("- %s: %s", fileLabel(f), e))
		}
		for _, p := range f.Profiles {
			for _, r := range p.Runs {
				if r.Error != "" {
					lines = append(lines, fmt.Sprintf("- %s: %s repeat %d: %s", fileLabel(f), profileTitle(&p), r.Repeat, r.Error))
				}
			}
		}
	}
	if len(lines) == 0 {
		return
	}
	b.WriteString("## Errors\n\n" + strings.Join(lines, "\n") + "\n")
}

func orDash(s string) string {
	if strings.TrimSpace(s) == "" {
		return results.Dash
	}
	return s
}

func firstNonEmpty(xs ...string) string {
	for _, x := range xs {
		if x != "" {
			return x
		}
	}
	return ""
}

func containsString(xs []string, v string) bool {
	for _, x := range xs {
		if x == v {
			return true
		}
	}
	return false
}
