package report

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// SecurityGroupCost is the answer to a tenant's question "how much do I
// lose by keeping my security groups?": one build and one path measured
// twice, with port security off and on (data_port.port_security), the
// profiles of the same shape side by side.
type SecurityGroupCost struct {
	Off, On *results.Results
	Path    results.Path
	Rows    []CostRow
	// OnlyOff and OnlyOn are profiles measured in one mode only.
	OnlyOff, OnlyOn []string
	// Differences are what of the two environments differs beyond the
	// mode (hypervisors, versions, durations): said above the table, since
	// each one is a second cause of a delta.
	Differences []string
	// Checks are each mode's offload verdicts, one line per check and flow.
	ChecksOff, ChecksOn []string
	// Connections are the connection-scale results of the same N and
	// per-connection cap in both modes; OnlyConnOff and OnlyConnOn the N
	// measured in one mode only.
	Connections             []ConnCostRow
	OnlyConnOff, OnlyConnOn []int
}

// ConnCostRow is one connection-scale N in both modes.
type ConnCostRow struct {
	N, Opened int
	CapBps    int64 // each connection's cap, 0 = unlimited
	// Off and On are the delivered rates of the measured seconds; Ratio is
	// On/Off (0 when Off is 0).
	Off, On, Ratio float64
	// Share is what the port-security run's tables said, per hypervisor.
	Share string
	// Errors are a mode's failure (the row still shows the other).
	ErrOff, ErrOn string
}

// CostRow is one profile shape in both modes.
type CostRow struct {
	ID, Name string
	// Off and On are the median delivered rates; Ratio is On/Off (0 when
	// Off is 0): 0.8 = security groups cost 20 % of the rate.
	Off, On float64
	Ratio   float64
	// Loss (UDP, percent) and Retransmits (TCP) are medians.
	LossOff, LossOn       float64
	RetransOff, RetransOn float64
	// BusyOff and BusyOn are the hosts' busy cores (median), Per10GOff and
	// Per10GOn the same per 10 Gbit/s delivered; nil where a run has no
	// host CPU figures (traffic.host_cpu off, or a missing host).
	BusyOff, BusyOn     *float64
	Per10GOff, Per10GOn *float64
	Repeats             [2]int
}

// NewSecurityGroupCost pairs the profiles of off and on. It refuses (every
// problem at once) files whose modes are not off and on respectively,
// that measured different paths or builds, or that share no profile.
func NewSecurityGroupCost(off, on *results.Results) (*SecurityGroupCost, error) {
	if off == nil || on == nil {
		return nil, errors.New("security groups' cost: two results files are needed, off then on")
	}
	var problems []string
	if m := off.Config.Mode(); m == results.ModeSecurityGroupsOn {
		problems = append(problems, fmt.Sprintf("the first run (%s) was measured with %s: give the run with port security off first", off.RunID, m))
	}
	if m := on.Config.Mode(); m != results.ModeSecurityGroupsOn {
		problems = append(problems, fmt.Sprintf("the second run (%s) was measured with %s: give a run with data_port.port_security true second", on.RunID, m))
	}
	if off.Config.ExpectedPath != on.Config.ExpectedPath {
		problems = append(problems, fmt.Sprintf("the runs measured different paths (%s: %s, %s: %s): the cost of security groups is read on one path", off.RunID, pathName(off.Config.ExpectedPath), on.RunID, pathName(on.Config.ExpectedPath)))
	}
	if off.Environment.BuildLabel != on.Environment.BuildLabel {
		problems = append(problems, fmt.Sprintf("the runs measured different builds (%s: %q, %s: %q): the cost of security groups is read on one build", off.RunID, off.Environment.BuildLabel, on.RunID, on.Environment.BuildLabel))
	}
	c := &SecurityGroupCost{Off: off, On: on, Path: off.Config.ExpectedPath}
	onByShape := map[results.Shape]*results.ProfileResult{}
	for i := range on.Profiles {
		onByShape[ShapeOf(&on.Profiles[i])] = &on.Profiles[i]
	}
	matched := map[results.Shape]bool{}
	for i := range off.Profiles {
		a := &off.Profiles[i]
		b := onByShape[ShapeOf(a)]
		if b == nil {
			c.OnlyOff = append(c.OnlyOff, a.ID)
			continue
		}
		matched[ShapeOf(a)] = true
		c.Rows = append(c.Rows, costRow(a, b))
	}
	for i := range on.Profiles {
		if !matched[ShapeOf(&on.Profiles[i])] {
			c.OnlyOn = append(c.OnlyOn, on.Profiles[i].ID)
		}
	}
	c.Connections, c.OnlyConnOff, c.OnlyConnOn = connectionCost(off, on)
	if len(c.Rows) == 0 && len(c.Connections) == 0 && len(problems) == 0 {
		problems = append(problems, fmt.Sprintf("the runs %s and %s share no profile (of the same protocol, streams, rate and length) and no connection-scale N (of the same cap)", off.RunID, on.RunID))
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("security groups' cost: %s", strings.Join(problems, "; "))
	}
	sort.SliceStable(c.Rows, func(i, j int) bool { return c.Rows[i].ID < c.Rows[j].ID })
	c.Differences = environmentDifferences(off, on)
	c.ChecksOff, c.ChecksOn = checkLines(off), checkLines(on)
	return c, nil
}

// connectionCost pairs the connection-scale results of off and on by N
// and per-connection cap, in N order.
func connectionCost(off, on *results.Results) (rows []ConnCostRow, onlyOff, onlyOn []int) {
	type key struct {
		n   int
		cap int64
	}
	byKey := map[key]*results.ConnectionResult{}
	for i := range on.Connections {
		c := &on.Connections[i]
		byKey[key{c.N, c.BitratePerConnectionBps}] = c
	}
	matched := map[key]bool{}
	for i := range off.Connections {
		a := &off.Connections[i]
		k := key{a.N, a.BitratePerConnectionBps}
		b := byKey[k]
		if b == nil {
			onlyOff = append(onlyOff, a.N)
			continue
		}
		matched[k] = true
		r := ConnCostRow{N: a.N, Opened: b.Opened, CapBps: a.BitratePerConnectionBps, Off: a.DeliveredBps, On: b.DeliveredBps, ErrOff: a.Error, ErrOn: b.Error}
		if r.Off > 0 && a.Error == "" && b.Error == "" {
			r.Ratio = r.On / r.Off
		}
		var shares []string
		for _, h := range b.Hosts {
			switch {
			case !h.Shared():
				shares = append(shares, fmt.Sprintf("%s: not read (%s)", h.Hypervisor, h.Reason))
			case h.Source == "ovs-userspace":
				shares = append(shares, fmt.Sprintf("%s: %s, OVS's userspace conntrack (software)", h.Hypervisor, percent(h.Share)))
			default:
				shares = append(shares, fmt.Sprintf("%s: %s [HW_OFFLOAD]", h.Hypervisor, percent(h.Share)))
			}
		}
		r.Share = joinOrNone(shares)
		if b.NotApplicable != "" {
			r.Share = b.NotApplicable
		}
		rows = append(rows, r)
	}
	for i := range on.Connections {
		c := &on.Connections[i]
		if !matched[key{c.N, c.BitratePerConnectionBps}] {
			onlyOn = append(onlyOn, c.N)
		}
	}
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].N < rows[j].N })
	sort.Ints(onlyOff)
	sort.Ints(onlyOn)
	return rows, onlyOff, onlyOn
}

func costRow(a, b *results.ProfileResult) CostRow {
	r := CostRow{ID: a.ID, Name: a.Name,
		Off: a.Summary.Delivered.Median, On: b.Summary.Delivered.Median,
		LossOff: a.Summary.Loss.Median, LossOn: b.Summary.Loss.Median,
		RetransOff: a.Summary.Retransmits.Median, RetransOn: b.Summary.Retransmits.Median,
		Repeats: [2]int{a.Summary.Runs, b.Summary.Runs}}
	if r.Off > 0 {
		r.Ratio = r.On / r.Off
	}
	r.BusyOff, r.Per10GOff = cpuMedians(a.Summary.CPU)
	r.BusyOn, r.Per10GOn = cpuMedians(b.Summary.CPU)
	return r
}

func cpuMedians(c *results.CPUSummary) (busy, per10G *float64) {
	if c == nil {
		return nil, nil
	}
	if c.HostBusy.N > 0 {
		v := c.HostBusy.Median
		busy = &v
	}
	if c.CoresPer10G.N > 0 {
		v := c.CoresPer10G.Median
		per10G = &v
	}
	return busy, per10G
}

// environmentDifferences names what differs beyond the mode: the rows of
// the report's environment table (the mode, the build and the path are
// checked apart; the data network's segmentation id is new in every run,
// its type shows in the MTU row), and the window's length.
func environmentDifferences(off, on *results.Results) []string {
	var out []string
	for _, d := range environmentDiffs(off, on, "Run ID", "Expected path", "Port security", "Build", "Data network") {
		out = append(out, fmt.Sprintf("%s: %q off, %q on", d.Item, d.Accepted, d.Candidate))
	}
	if a, b := off.Config.DurationSeconds, on.Config.DurationSeconds; a != b {
		out = append(out, fmt.Sprintf("duration per repeat: \"%gs\" off, \"%gs\" on", a, b))
	}
	return out
}

// checkLines is one line per flow, check and verdict, in the order the
// run recorded them, with how many verdicts (one per hypervisor) said it:
// "tcp dpctl: software ×2".
func checkLines(r *results.Results) []string {
	var keys []string
	n := map[string]int{}
	for _, c := range r.Offload {
		flow := c.Flow
		if flow == "" {
			flow = "run"
		}
		k := fmt.Sprintf("%s %s: %s", flow, c.Name, c.Verdict)
		if n[k] == 0 {
			keys = append(keys, k)
		}
		n[k]++
	}
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = fmt.Sprintf("%s ×%d", k, n[k])
	}
	return out
}

// Markdown renders the side by side.
func (c *SecurityGroupCost) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# The cost of security groups: %s\n\n", pathName(c.Path))
	fmt.Fprintf(&b, "Build %q. Port security off: run %s; on: run %s (the data ports with port security and the run's security group, so every packet passes conntrack).\n\n",
		c.Off.Environment.BuildLabel, c.Off.RunID, c.On.RunID)
	if len(c.Differences) > 0 {
		fmt.Fprintf(&b, "**Besides the mode, the runs differ in:** %s. Each is a second cause of the deltas below.\n\n", strings.Join(c.Differences, "; "))
	}
	b.WriteString("| profile | off | on | on / off | loss off / on | retransmits off / on | host busy cores off / on | cores per 10 Gbit/s off / on | repeats off / on |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range c.Rows {
		ratio := "n/a (nothing delivered off)"
		if r.Off > 0 {
			ratio = fmt.Sprintf("%.2f× (%+.0f %%)", r.Ratio, (r.Ratio-1)*100)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %.2f %% / %.2f %% | %.0f / %.0f | %s / %s | %s / %s | %d / %d |\n",
			r.ID, results.FormatBps(r.Off), results.FormatBps(r.On), ratio,
			r.LossOff, r.LossOn, r.RetransOff, r.RetransOn,
			optCores(r.BusyOff), optCores(r.BusyOn), optCores(r.Per10GOff), optCores(r.Per10GOn),
			r.Repeats[0], r.Repeats[1])
	}
	if len(c.OnlyOff) > 0 {
		fmt.Fprintf(&b, "\nMeasured with port security off only: %s.\n", strings.Join(c.OnlyOff, ", "))
	}
	if len(c.OnlyOn) > 0 {
		fmt.Fprintf(&b, "\nMeasured with port security on only: %s.\n", strings.Join(c.OnlyOn, ", "))
	}
	if len(c.Connections) > 0 {
		b.WriteString("\n## Connection scale, off and on\n\n")
		b.WriteString("| N | opened | cap per connection | off | on | on / off | offloaded share (on) |\n|---:|---:|---|---:|---:|---:|---|\n")
		for _, r := range c.Connections {
			capCell := "unlimited"
			if r.CapBps > 0 {
				capCell = results.FormatBps(float64(r.CapBps))
			}
			offCell, onCell := results.FormatBps(r.Off), results.FormatBps(r.On)
			if r.ErrOff != "" {
				offCell = "error: " + r.ErrOff
			}
			if r.ErrOn != "" {
				onCell = "error: " + r.ErrOn
			}
			ratio := "n/a"
			if r.Ratio > 0 {
				ratio = fmt.Sprintf("%.2f× (%+.0f %%)", r.Ratio, (r.Ratio-1)*100)
			}
			fmt.Fprintf(&b, "| %d | %d | %s | %s | %s | %s | %s |\n", r.N, r.Opened, capCell, offCell, onCell, ratio, r.Share)
		}
	}
	if len(c.OnlyConnOff) > 0 {
		fmt.Fprintf(&b, "\nConnection scale with port security off only: N = %s.\n", intList(c.OnlyConnOff))
	}
	if len(c.OnlyConnOn) > 0 {
		fmt.Fprintf(&b, "\nConnection scale with port security on only: N = %s.\n", intList(c.OnlyConnOn))
	}
	b.WriteString("\nOffload verdicts, off: ")
	b.WriteString(joinOrNone(c.ChecksOff))
	b.WriteString(".\n\nOffload verdicts, on: ")
	b.WriteString(joinOrNone(c.ChecksOn))
	b.WriteString(".\n\nWith port security on, ICMP is not offloaded under conntrack by design (the flood ping's packets stay in software on ASAP² too); the proof of a port-security run rests on its TCP and UDP flows and on the conntrack check.\n")
	return b.String()
}

func intList(ns []int) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = fmt.Sprint(n)
	}
	return strings.Join(s, ", ")
}

func optCores(v *float64) string {
	if v == nil {
		return "–"
	}
	return fmt.Sprintf("%.2f", *v)
}

func joinOrNone(s []string) string {
	if len(s) == 0 {
		return "none recorded"
	}
	return strings.Join(s, "; ")
}
