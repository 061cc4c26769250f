package config

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

func init() {
	sections.Register(210, section{defaults: (*Config).applyFailoverDefaults, validate: (*validator).failover,
		metric: func(m string) bool { return m == results.MetricFailoverOutage }, profile: func(v *validator, path, _, id string) { v.failoverProfile(path, id) }}, results.FamilyFailover)
}

// Failover is the bond / VF-LAG failover profile (issue 38 item 1): during
// one measured UDP flow at a fixed rate, one member of one hypervisor's
// bond is taken down by DownCommand at DownAt and brought back by
// RestoreCommand at RestoreAt; the outage is the flow's longest gap.
// Outside the window the bond's state is read before, after the down and
// after the restore, and the pair's offload is proved again after each.
type Failover struct {
	Enabled bool `yaml:"enabled"` // false (default): no failover profile
	// Hypervisor is whose bond fails: "source" (the sending guest's
	// hypervisor, default) or "destination".
	Hypervisor string `yaml:"hypervisor"`
	// Bond is the bond's name (/proc/net/bonding/<bond>, or an OVS bond for
	// ovs-appctl bond/show); "" = the one bond the hypervisor has.
	Bond string `yaml:"bond"`
	// Member is the member taken down; "" = the bond's active member read
	// just before the window.
	Member string `yaml:"member"`
	// DownCommand and RestoreCommand run on the hypervisor (its SSH or its
	// pod, as every hypervisor command), {member} and {bond} replaced by
	// the names (shell-quoted); defaults `ip link set {member} down` / `up`.
	DownCommand    string `yaml:"down_command"`
	RestoreCommand string `yaml:"restore_command"`
	// DownAt and RestoreAt are when in the window, from the client's start.
	DownAt    time.Duration `yaml:"down_at"`
	RestoreAt time.Duration `yaml:"restore_at"`
	// Duration is the window: the UDP flow's iperf3 -t (whole seconds).
	Duration time.Duration `yaml:"duration"`
	// BitrateBps and Length are the flow's fixed rate (iperf3 -b, one
	// stream) and datagram payload (-l): the rate turns lost datagrams into
	// time; one datagram is the outage's resolution.
	BitrateBps int64 `yaml:"bitrate"`
	Length     int   `yaml:"length"`
	// ReportInterval is iperf3 -i on both sides (>= 100ms, iperf3's least):
	// where in time a gap lies is known to one interval.
	ReportInterval time.Duration `yaml:"report_interval"`
	// ReoffloadWait bounds the wait until the pair's flows are in hardware
	// again, after the failover and after the restore.
	ReoffloadWait time.Duration `yaml:"reoffload_wait"`
	// EvidenceFlow is the evidence window's flow length in those re-checks
	// (offload.flow_duration's stand-in there): shorter, so that the time
	// until hardware is known to a few seconds.
	EvidenceFlow time.Duration `yaml:"evidence_flow"`
	// OutageGoalMs is the outage the profile's verdict allows; 0 (default)
	// = the bond's own bound read before the window: its link monitoring
	// (miimon) + downdelay + results.FailoverGoalMarginMs.
	OutageGoalMs float64 `yaml:"outage_goal_ms"`
}

// Where the failover happens.
const (
	FailoverSource      = "source"
	FailoverDestination = "destination"
)

// Defaults of the failover section.
const (
	DefaultFailoverDownCommand    = "ip link set {member} down"
	DefaultFailoverRestoreCommand = "ip link set {member} up"
	DefaultFailoverDownAt         = 3 * time.Second
	DefaultFailoverRestoreAt      = 8 * time.Second
	DefaultFailoverDuration       = 13 * time.Second
	DefaultFailoverBitrate        = 200_000_000
	DefaultFailoverLength         = 1200
	DefaultFailoverReportInterval = 100 * time.Millisecond
	DefaultFailoverReoffloadWait  = 60 * time.Second
	DefaultFailoverEvidenceFlow   = 12 * time.Second
	// MinFailoverReportInterval is iperf3's least -i.
	MinFailoverReportInterval = 100 * time.Millisecond
)

// FailoverPlaceholders are what the commands may name.
var FailoverPlaceholders = []string{"{member}", "{bond}"}

var placeholderRE = regexp.MustCompile(`\{[a-z_]+\}`)

func (c *Config) applyFailoverDefaults() {
	f := &c.Failover
	def := func(key string, apply func()) {
		if !c.has("failover." + key) {
			apply()
		}
	}
	def("hypervisor", func() { f.Hypervisor = FailoverSource })
	def("down_command", func() { f.DownCommand = DefaultFailoverDownCommand })
	def("restore_command", func() { f.RestoreCommand = DefaultFailoverRestoreCommand })
	def("down_at", func() { f.DownAt = DefaultFailoverDownAt })
	def("restore_at", func() { f.RestoreAt = DefaultFailoverRestoreAt })
	def("duration", func() { f.Duration = DefaultFailoverDuration })
	def("bitrate", func() { f.BitrateBps = DefaultFailoverBitrate })
	def("length", func() { f.Length = DefaultFailoverLength })
	def("report_interval", func() { f.ReportInterval = DefaultFailoverReportInterval })
	def("reoffload_wait", func() { f.ReoffloadWait = DefaultFailoverReoffloadWait })
	def("evidence_flow", func() { f.EvidenceFlow = DefaultFailoverEvidenceFlow })
}

// FailoverCommand is a failover command with its placeholders replaced by
// the names, each quoted for the shell.
func FailoverCommand(tmpl, bond, member string) string {
	return strings.NewReplacer("{member}", shellQuote(member), "{bond}", shellQuote(bond)).Replace(tmpl)
}

// shellQuote quotes s for a POSIX shell unless it is a plain word (config
// does not import remote, whose ShellQuote always quotes).
func shellQuote(s string) string {
	if s != "" && regexp.MustCompile(`^[A-Za-z0-9_.:@%+=/-]+$`).MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

var ifaceNameRE = regexp.MustCompile(`^[A-Za-z0-9_.:@-]{1,15}$`)

func (v *validator) failover() {
	f := v.c.Failover
	if !f.Enabled {
		return
	}
	if v.c.Fleet != nil {
		v.bad("failover.enabled", "runs on the single pair of placement, not in a fleet sweep (remove fleet or the failover section)", f.Enabled)
	}
	v.oneOf("failover.hypervisor", f.Hypervisor, []string{FailoverSource, FailoverDestination})
	for _, k := range []struct{ key, name string }{{"failover.bond", f.Bond}, {"failover.member", f.Member}} {
		if k.name != "" && !ifaceNameRE.MatchString(k.name) {
			v.bad(k.key, "must be an interface name (1..15 of letters, digits, _ . : @ -) or empty (discovered)", k.name)
		}
	}
	for _, k := range []struct{ key, cmd string }{{"failover.down_command", f.DownCommand}, {"failover.restore_command", f.RestoreCommand}} {
		if strings.TrimSpace(k.cmd) == "" {
			v.missing(k.key, "must be a command (default "+map[bool]string{true: DefaultFailoverDownCommand, false: DefaultFailoverRestoreCommand}[k.key == "failover.down_command"]+")")
			continue
		}
		for _, p := range placeholderRE.FindAllString(k.cmd, -1) {
			if !slices.Contains(FailoverPlaceholders, p) {
				v.bad(k.key, fmt.Sprintf("names %s, which is not one of %v", p, FailoverPlaceholders), k.cmd)
			}
		}
	}
	if f.Duration < time.Second || f.Duration%time.Second != 0 {
		v.bad("failover.duration", "must be whole seconds >= 1 (iperf3 -t)", f.Duration)
	}
	if f.DownAt <= 0 {
		v.bad("failover.down_at", "must be > 0 (the flow runs before the member goes down)", f.DownAt)
	}
	if f.RestoreAt <= f.DownAt {
		v.bad("failover.restore_at", fmt.Sprintf("must be after failover.down_at (%s)", f.DownAt), f.RestoreAt)
	} else if f.Duration > 0 && f.RestoreAt+f.ReportInterval >= f.Duration {
		v.bad("failover.restore_at", fmt.Sprintf("must leave at least one report interval (%s) of failover.duration (%s) after it: the flow must be seen coming back", f.ReportInterval, f.Duration), f.RestoreAt)
	}
	if f.BitrateBps <= 0 {
		v.bad("failover.bitrate", "must be > 0 bit/s: a fixed rate turns lost datagrams into time", f.BitrateBps)
	}
	if f.Length < MinSearchLength || f.Length > MaxUDPPayload {
		v.bad("failover.length", fmt.Sprintf("must be %d..%d (UDP payload bytes, iperf3 -l)", MinSearchLength, MaxUDPPayload), f.Length)
	} else if f.BitrateBps > 0 && float64(f.BitrateBps)/8/float64(f.Length)*f.ReportInterval.Seconds() < 10 {
		v.bad("failover.bitrate", fmt.Sprintf("must carry at least 10 datagrams of failover.length %d bytes per report interval %s (a gap shorter than the interval must show)", f.Length, f.ReportInterval), f.BitrateBps)
	}
	if f.ReportInterval < MinFailoverReportInterval {
		v.bad("failover.report_interval", fmt.Sprintf("must be >= %s (iperf3's least -i)", MinFailoverReportInterval), f.ReportInterval)
	}
	if f.ReoffloadWait < time.Second {
		v.bad("failover.reoffload_wait", "must be >= 1s (the bound on the wait until the pair's flows are in hardware again)", f.ReoffloadWait)
	}
	if f.EvidenceFlow < time.Second || f.EvidenceFlow%time.Second != 0 {
		v.bad("failover.evidence_flow", "must be whole seconds >= 1 (the evidence window's flow, iperf3 -t)", f.EvidenceFlow)
	} else if f.EvidenceFlow <= v.c.Offload.Settle+v.c.Offload.CaptureWindow && v.c.Offload.Settle > 0 {
		v.bad("failover.evidence_flow", fmt.Sprintf("must be longer than offload.settle + offload.capture_window (%s): the checks run inside it", v.c.Offload.Settle+v.c.Offload.CaptureWindow), f.EvidenceFlow)
	}
	if f.OutageGoalMs < 0 || f.OutageGoalMs != f.OutageGoalMs {
		v.bad("failover.outage_goal_ms", "must be >= 0 (0 = the bond's own bound: miimon + downdelay + 100 ms)", f.OutageGoalMs)
	}
}

// failoverProfile checks a threshold on the failover profile: only
// results.FailoverProfileID has its metric, and only when it runs.
func (v *validator) failoverProfile(path, id string) {
	if id != results.FailoverProfileID || !v.c.Failover.Enabled {
		v.bad(path, fmt.Sprintf("must be %s, with failover.enabled true, for %s", results.FailoverProfileID, results.MetricFailoverOutage), id)
	}
}
