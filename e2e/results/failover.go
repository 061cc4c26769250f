package results

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// The family's id (its config section's key) and its results.
const (
	FamilyFailover = "failover"
)

func init() {
	Families.Register(50, Family{Key: "failover", Validate: validateFailover}, FamilyFailover)
}

// The bond / VF-LAG failover profile (issue 38 item 1; config failover):
// one measured UDP flow at a fixed rate during which one member of one
// hypervisor's bond is taken down and brought back by commands the config
// names; the outage is the flow's longest gap. Outside the window: the
// bond's state before, after the window, after a second down and after its
// restore, and after each of the latter two the time until the pair's
// flows are in hardware again.

// FailoverProfileID names the profile: its evidence files, log lines,
// Ginkgo label, thresholds' profile and history series.
const FailoverProfileID = "failover"

// MetricFailoverOutage is the longest gap of the failover's flow in ms
// (the failover's and the failback's, the longer; each its upper bound).
const MetricFailoverOutage = "failover_outage_ms"

// FailoverGoalMarginMs is what the default goal adds to the bond's own
// bound (link monitoring + downdelay): the time the new member takes to
// carry the flow.
const FailoverGoalMarginMs = 100

// Failover verdicts.
const (
	FailoverPass         = "pass"
	FailoverFail         = "fail"
	FailoverInconclusive = "inconclusive"
)

// FailoverResult is the profile's one result.
type FailoverResult struct {
	Path Path `json:"path"`
	// Hypervisor is whose bond failed; Side is config failover.hypervisor.
	Hypervisor string `json:"hypervisor"`
	Side       string `json:"side"`
	Bond       string `json:"bond"`
	Member     string `json:"member"`
	// MemberFrom says where the member's name came from: "config" or
	// "active before" (the bond's active member read before the window).
	MemberFrom            string    `json:"member_from,omitempty"`
	StartedAt             time.Time `json:"started_at,omitzero"`
	DurationSeconds       float64   `json:"duration_seconds"`
	DownAtSeconds         float64   `json:"down_at_seconds"`
	RestoreAtSeconds      float64   `json:"restore_at_seconds"`
	BitrateBps            int64     `json:"bitrate_bps"`
	Length                int       `json:"length"`
	ReportIntervalSeconds float64   `json:"report_interval_seconds"`

	// The window's actions (run at DownAt/RestoreAt from the clients'
	// start), and the second down and restore outside the window.
	Down         *FailoverAction `json:"down,omitempty"`
	Restore      *FailoverAction `json:"restore,omitempty"`
	Down2        *FailoverAction `json:"down_again,omitempty"`
	Restore2     *FailoverAction `json:"restore_again,omitempty"`
	Before       *BondState      `json:"bond_before,omitempty"`
	AfterWindow  *BondState      `json:"bond_after_window,omitempty"`
	AfterDown    *BondState      `json:"bond_after_down,omitempty"`
	AfterRestore *BondState      `json:"bond_after_restore,omitempty"`

	Flow *FailoverFlow `json:"flow,omitempty"`
	// Outage is the longest gap that overlaps [down, restore): the
	// failover's; Failback the longest after the restore (another than
	// Outage); nil when the flow lost nothing there.
	Outage   *FailoverGap `json:"outage,omitempty"`
	Failback *FailoverGap `json:"failback,omitempty"`
	// LostBeforeDown counts datagrams lost before the down: the path was
	// lossy before the failover (said, not the failover's).
	LostBeforeDown int64 `json:"lost_before_down,omitempty"`

	// GoalMs is the outage the verdict allows; GoalFrom says whence
	// ("failover.outage_goal_ms", or the bond's bound with its terms).
	GoalMs   float64 `json:"goal_ms,omitempty"`
	GoalFrom string  `json:"goal_from,omitempty"`

	Reoffload []FailoverReoffload `json:"reoffload,omitempty"`

	Verdict string `json:"verdict"`
	Reason  string `json:"reason"`
	// Measured: the verdict rests on the flow's gaps (the failover
	// happened, both commands ran, the flow came back); only then is there
	// a failover_outage_ms.
	Measured     bool   `json:"measured"`
	EvidenceFile string `json:"evidence_file,omitempty"`
	Error        string `json:"error,omitempty"`
}

// FailoverAction is one command run on the hypervisor.
type FailoverAction struct {
	Command string    `json:"command"`
	At      time.Time `json:"at,omitzero"`
	// AtSeconds is when it started, from the flow's clients' start (0 for
	// the actions outside the window).
	AtSeconds float64 `json:"at_seconds,omitempty"`
	Seconds   float64 `json:"seconds"` // how long it ran
	ExitCode  int     `json:"exit_code"`
	Stderr    string  `json:"stderr,omitempty"`
	Error     string  `json:"error,omitempty"` // could not run (transport, bound)
}

// Failed says why the action failed, naming host and command; "" if it ran
// and exited 0.
func (a *FailoverAction) Failed(host string) string {
	switch {
	case a == nil:
		return ""
	case a.Error != "":
		return fmt.Sprintf("on %s `%s` could not run: %s", host, a.Command, a.Error)
	case a.ExitCode != 0:
		s := fmt.Sprintf("on %s `%s` exited %d", host, a.Command, a.ExitCode)
		if st := strings.TrimSpace(a.Stderr); st != "" {
			s += ": " + st
		}
		return s
	}
	return ""
}

// BondState is a bond as the hypervisor showed it: /proc/net/bonding (a
// Linux bond, ASAP²'s VF-LAG) or ovs-appctl bond/show (an OVS bond).
type BondState struct {
	Source string    `json:"source"` // "linux" or "ovs"
	Name   string    `json:"name"`
	Mode   string    `json:"mode"` // active-backup, 802.3ad, balance-slb, ...
	Active string    `json:"active,omitempty"`
	ReadAt time.Time `json:"read_at,omitzero"`
	// MonitorMs is the link monitoring's period (Linux miimon, OVS
	// bond-miimon-interval with detect mode miimon; 0 with carrier
	// detection, -1 unknown); DetectMode is OVS's (carrier, miimon).
	MonitorMs   int          `json:"monitor_ms"`
	DetectMode  string       `json:"detect_mode,omitempty"`
	UpDelayMs   int          `json:"updelay_ms"`
	DownDelayMs int          `json:"downdelay_ms"`
	Members     []BondMember `json:"members"`
	// LAG is what the NIC says of its LAG where the hypervisor has it
	// (mlx5's debugfs lag/state, type, port_sel_mode), probed: empty when
	// absent, never assumed.
	LAG  []string `json:"lag,omitempty"`
	File string   `json:"file,omitempty"` // the raw read, in the evidence
}

// BondMember is one member's state.
type BondMember struct {
	Name string `json:"name"`
	Up   bool   `json:"up"`
	// LinkFailures is the kernel's "Link Failure Count"; -1 where the
	// source has none (OVS).
	LinkFailures int `json:"link_failures"`
	// LinkChanges is OVS's Interface link_resets (every change of the
	// link's state: a failure and its recovery are two); -1 where the source
	// has none (Linux) or it was not read.
	LinkChanges int `json:"link_changes"`
}

// Member returns the member named, if the bond has it.
func (b *BondState) Member(name string) (BondMember, bool) {
	if b == nil {
		return BondMember{}, false
	}
	for _, m := range b.Members {
		if m.Name == name {
			return m, true
		}
	}
	return BondMember{}, false
}

// Bound is the bond's own failover bound in ms — link monitoring +
// downdelay — and its words; ok false when the bond does not say.
func (b *BondState) Bound() (ms int, words string, ok bool) {
	if b == nil || b.MonitorMs < 0 || b.DownDelayMs < 0 {
		return 0, "", false
	}
	mon := fmt.Sprintf("miimon %d ms", b.MonitorMs)
	if b.DetectMode == "carrier" {
		mon = "carrier detection"
	}
	return b.MonitorMs + b.DownDelayMs, fmt.Sprintf("%s + downdelay %d ms", mon, b.DownDelayMs), true
}

// Line is the state in one line: "active-backup, active ul1 (ul0 up, ul1
// up; failures 0/0)".
func (b *BondState) Line() string {
	if b == nil {
		return "not read"
	}
	var ms, fs, cs []string
	for _, m := range b.Members {
		ms = append(ms, fmt.Sprintf("%s %s", m.Name, map[bool]string{true: "up", false: "down"}[m.Up]))
		if m.LinkFailures >= 0 {
			fs = append(fs, fmt.Sprint(m.LinkFailures))
		}
		if m.LinkChanges >= 0 {
			cs = append(cs, fmt.Sprint(m.LinkChanges))
		}
	}
	s := b.Mode
	if b.Active != "" {
		s += ", active " + b.Active
	}
	s += " (" + strings.Join(ms, ", ")
	if len(fs) > 0 {
		s += "; link failures " + strings.Join(fs, "/")
	}
	if len(cs) > 0 {
		s += "; link changes " + strings.Join(cs, "/")
	}
	return s + ")"
}

// FailoverFlow is what the window's flow sent and lost.
type FailoverFlow struct {
	Sent             int64   `json:"sent"`
	Lost             int64   `json:"lost"`
	Tail             int64   `json:"tail,omitempty"` // sent after the last datagram received
	OutOfOrder       int64   `json:"out_of_order"`
	PacketsPerSecond float64 `json:"packets_per_second"`
	// ResolutionMs is one datagram's time: the outage's resolution.
	ResolutionMs    float64 `json:"resolution_ms"`
	IntervalSeconds float64 `json:"interval_seconds"`
	DeliveredBps    float64 `json:"delivered_bps"`
	Iperf3Version   string  `json:"iperf3_version,omitempty"`
}

// FailoverGap is one gap of the flow.
type FailoverGap struct {
	// FromSeconds, ToSeconds bound it (the receiver's seconds; it began at
	// most one interval before From).
	FromSeconds float64 `json:"from_seconds"`
	ToSeconds   float64 `json:"to_seconds"`
	Lost        int64   `json:"lost"`
	MinRun      int64   `json:"min_run"`
	// Ms is Lost at the sent rate, the most the gap lasted; MinMs the least.
	Ms     float64 `json:"ms"`
	MinMs  float64 `json:"min_ms"`
	Silent int     `json:"silent_intervals"`
	// Open: traffic had not come back when the sender stopped.
	Open bool `json:"open,omitempty"`
	// Spread: the loss does not stand out as one run (spread loss).
	Spread bool   `json:"spread,omitempty"`
	Words  string `json:"words"`
}

// FailoverReoffload is the time until the pair's flows were in hardware
// again after one event, the evidence windows re-run after it.
type FailoverReoffload struct {
	After string `json:"after"` // "failover" or "restore"
	// Seconds is from the event (its command's end) to the end of the first
	// evidence window whose checks all said offloaded; nil: not within the
	// bound, or never (a software datapath: Software).
	Seconds      *float64 `json:"seconds"`
	BoundSeconds float64  `json:"bound_seconds"`
	Windows      int      `json:"windows"`
	Software     bool     `json:"software_datapath,omitempty"`
	Reason       string   `json:"reason"`
}

// Words is the re-offload in a cell: "4.2 s", "never: software datapath",
// "not within 60 s".
func (r FailoverReoffload) Words() string {
	switch {
	case r.Seconds != nil:
		return fmt.Sprintf("%.1f s", *r.Seconds)
	case r.Software:
		return "never: software datapath"
	}
	return fmt.Sprintf("not within %g s", r.BoundSeconds)
}

// PutFailover stores the failover result (one per path) and writes the file.
func (w *Writer) PutFailover(f FailoverResult) error {
	f = deepCopy(f)
	return w.Update(func(r *Results) {
		for i := range r.Failover {
			if r.Failover[i].Path == f.Path {
				r.Failover[i] = f
				return
			}
		}
		r.Failover = append(r.Failover, f)
	})
}

func validateFailover(r *Results, add func(string, ...any)) {
	seen := map[Path]int{}
	for i, f := range r.Failover {
		k := fmt.Sprintf("failover[%d]", i)
		if f.Path != PathASAP2 && f.Path != PathBaseline {
			add("%s.path: must be asap2 or baseline, got %q", k, f.Path)
		}
		if j, dup := seen[f.Path]; dup {
			add("%s: path %s duplicates failover[%d]", k, f.Path, j)
		} else {
			seen[f.Path] = i
		}
		if !slices.Contains([]string{FailoverPass, FailoverFail, FailoverInconclusive}, f.Verdict) {
			add("%s.verdict: must be pass, fail or inconclusive, got %q", k, f.Verdict)
		}
		for _, g := range []struct {
			n string
			g *FailoverGap
		}{{"outage", f.Outage}, {"failback", f.Failback}} {
			if g.g != nil && (g.g.MinRun < 0 || g.g.MinRun > g.g.Lost || math.IsNaN(g.g.Ms) || g.g.Ms < 0 || g.g.MinMs > g.g.Ms) {
				add("%s.%s: want 0 <= min_run <= lost and 0 <= min_ms <= ms, got %+v", k, g.n, *g.g)
			}
		}
		for j, ro := range f.Reoffload {
			if ro.Seconds != nil && (math.IsNaN(*ro.Seconds) || *ro.Seconds < 0) {
				add("%s.reoffload[%d].seconds: must be >= 0 or null, got %v", k, j, *ro.Seconds)
			}
		}
	}
}

// FailoverInput is what JudgeFailover weighs, all of it in the result.
type FailoverInput = FailoverResult

// JudgeFailover is the profile's verdict and its reason, from its result
// alone (pure; the harness fills the result and stores what this says).
// In order:
//   - the down or restore command failed: fail, naming host, command, exit
//     status and stderr (first: a failed command explains what follows);
//   - the profile did not run or its flow failed (Error), or the member
//     was already down before the window: fail, the failover would prove
//     nothing;
//   - the bond did not change (after the down the member is still up, or
//     still the active member of an active-backup bond): fail — the
//     failover did not happen, and the flow's gap, whatever it is, is no
//     failover outage (never a 0 ms pass);
//   - the member did not come back after the restore, or the flow had not
//     come back when the window ended (an open gap): fail;
//   - no goal (the bond says no bound and failover.outage_goal_ms is 0):
//     inconclusive, with the numbers;
//   - the longer of the failover's and failback's gaps: pass when its most
//     is within the goal, fail when its least exceeds it, inconclusive
//     between (the interval's loss may be several runs);
//   - on the asap2 path, the pair's flows not in hardware again within the
//     bound after an event: fail (a software datapath says so instead).
//
// measured says the verdict rests on the gaps (the earlier steps passed).
func JudgeFailover(f FailoverInput) (verdict, reason string, measured bool) {
	host := f.Hypervisor
	if host == "" {
		host = "the hypervisor"
	}
	bond := fmt.Sprintf("bond %s on %s", f.Bond, host)
	for _, a := range []struct {
		what string
		a    *FailoverAction
	}{{"the down command", f.Down}, {"the restore command", f.Restore}, {"the second down command", f.Down2}, {"the second restore command", f.Restore2}} {
		if why := a.a.Failed(host); why != "" {
			s := fmt.Sprintf("%s failed: %s", a.what, why)
			if strings.Contains(a.what, "restore") {
				s += fmt.Sprintf("; member %s may still be down", f.Member)
			}
			return FailoverFail, s, false
		}
	}
	if f.Error != "" {
		return FailoverFail, "not measured: " + f.Error, false
	}
	if f.Before == nil {
		return FailoverFail, fmt.Sprintf("not measured: %s was not read before the window", bond), false
	}
	m, ok := f.Before.Member(f.Member)
	switch {
	case !ok:
		return FailoverFail, fmt.Sprintf("not measured: %s has no member %s (members: %s)", bond, f.Member, f.Before.Line()), false
	case !m.Up:
		return FailoverFail, fmt.Sprintf("not measured: member %s of %s was already down before the window (%s): taking it down would prove nothing", f.Member, bond, f.Before.Line()), false
	}
	if f.Down == nil || f.Restore == nil {
		return FailoverFail, "not measured: the window's down and restore commands did not both run", false
	}
	if f.AfterDown != nil {
		after, ok := f.AfterDown.Member(f.Member)
		switch {
		case ok && after.Up:
			return FailoverFail, fmt.Sprintf("the failover did not happen: after `%s` member %s of %s was still up (%s); no outage is reported for a failover that did not happen",
				f.Down.Command, f.Member, bond, f.AfterDown.Line()), false
		case f.AfterDown.Mode == "active-backup" && (f.AfterDown.Active == f.Member || f.AfterDown.Active == "" || f.AfterDown.Active == "None"):
			return FailoverFail, fmt.Sprintf("the failover did not happen: after `%s` %s had not moved its traffic to another member (active %q; %s); no outage is reported for a failover that did not happen",
				f.Down.Command, bond, f.AfterDown.Active, f.AfterDown.Line()), false
		}
	}
	for _, st := range []struct {
		when string
		b    *BondState
	}{{"after the window's restore", f.AfterWindow}, {"after the second restore", f.AfterRestore}} {
		if m, ok := st.b.Member(f.Member); st.b != nil && (!ok || !m.Up) {
			return FailoverFail, fmt.Sprintf("the restore never came back: member %s of %s was not up %s (%s)", f.Member, bond, st.when, st.b.Line()), false
		}
	}
	if f.Flow == nil {
		return FailoverFail, "not measured: the flow's gaps were not read", false
	}
	for _, g := range []*FailoverGap{f.Outage, f.Failback} {
		if g != nil && g.Open {
			return FailoverFail, fmt.Sprintf("the flow never came back within the window: %s", g.Words), false
		}
	}
	worst, which := f.Outage, "failover"
	if f.Failback != nil && (worst == nil || f.Failback.Ms > worst.Ms) {
		worst, which = f.Failback, "failback (after the restore)"
	}
	res := fmt.Sprintf("1 datagram = %.2f ms", f.Flow.ResolutionMs)
	var gap string
	if worst == nil {
		gap = fmt.Sprintf("no datagram lost after the down (%d sent; an outage under %s)", f.Flow.Sent, res)
	} else {
		gap = fmt.Sprintf("longest gap, the %s's: %s; %s", which, worst.Words, res)
		if worst.Spread {
			gap += "; spread loss, no single run stands out"
		}
	}
	if f.LostBeforeDown > 0 {
		gap += fmt.Sprintf("; %d datagram(s) lost before the down (the path's own loss)", f.LostBeforeDown)
	}
	if f.GoalMs <= 0 {
		return FailoverInconclusive, gap + "; no goal: the bond states no bound (its link monitoring) and failover.outage_goal_ms is 0", true
	}
	goal := fmt.Sprintf("goal %.0f ms (%s)", f.GoalMs, f.GoalFrom)
	verdict = FailoverPass
	switch {
	case worst != nil && worst.MinMs > f.GoalMs:
		verdict = FailoverFail
		goal = "over the " + goal
	case worst != nil && worst.Ms > f.GoalMs:
		verdict = FailoverInconclusive
		goal = fmt.Sprintf("between %.1f and %.1f ms against the %s: the interval's loss may be several runs", worst.MinMs, worst.Ms, goal)
	default:
		goal = "within the " + goal
	}
	reason = gap + "; " + goal
	if f.Path == PathASAP2 {
		for _, ro := range f.Reoffload {
			if ro.Seconds == nil && !ro.Software {
				return FailoverFail, reason + fmt.Sprintf("; the pair's flows were not in hardware again within %g s after the %s: %s", ro.BoundSeconds, ro.After, ro.Reason), true
			}
		}
	}
	return verdict, reason, true
}

// OutageMs is the metric failover_outage_ms: the longer of the failover's
// and failback's gaps (each its most), 0 when neither lost a datagram;
// ok false when the result has no outage to give (not measured, the
// failover did not happen, the flow never came back).
func (f FailoverResult) OutageMs() (float64, bool) {
	if f.Flow == nil || !f.Measured {
		return 0, false
	}
	v := 0.0
	for _, g := range []*FailoverGap{f.Outage, f.Failback} {
		if g != nil {
			v = max(v, g.Ms)
		}
	}
	return v, true
}

func evaluateFailoverMetric(r ThresholdRule, files []*Results) (actual float64, what string, ok bool) {
	for _, file := range files {
		for _, f := range file.Failover {
			if string(f.Path) != r.Path {
				continue
			}
			v, ok := f.OutageMs()
			if !ok {
				return 0, fmt.Sprintf("profile %s %s has no outage: %s", FailoverProfileID, r.Path, f.Reason), false
			}
			return v, fmt.Sprintf("failover outage %.1f ms on %s", v, f.Hypervisor), true
		}
	}
	return 0, fmt.Sprintf("no %s result for profile %s", r.Path, FailoverProfileID), false
}
