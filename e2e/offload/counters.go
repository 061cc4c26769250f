package offload

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/remote"
	"github.com/mosk-qa/asap2-e2e/e2e/results"
	"github.com/mosk-qa/asap2-e2e/e2e/wait"
)

// The counters check: a cheap fourth witness. The representor's interface
// counters are read on the hypervisor just before and just after the settled
// part of the flow, the guest's data interface counters the same way over
// SSH as the positive control.
//
// Which representor counters: on a hardware netdev the link counters
// (`ip -s link`) count both hardware- and software-datapath traffic; only
// the cpu_hit suite (`ip stats ... group offload subgroup cpu_hit`) counts
// the software datapath (ip-stats(8)). mlx5 is such a device: its VF
// representor reports the VF vport's hardware counters as link counters
// (en_rep.c, mlx5e_rep_get_stats) and its own rings as cpu_hit
// (mlx5e_rep_get_offload_stats); `ethtool -S` calls the latter rx_packets /
// tx_packets and the former vport_rx_packets / vport_tx_packets. So the link
// counters of an mlx5 representor grow with an offloaded flow too: the
// slow path is judged from cpu_hit, and the link counters, which must grow
// like the guest's, show that the representor stands for the guest's port.
// A device without cpu_hit counters (veth, tap: no hardware datapath) counts
// all its traffic in the link counters, which are then the slow path.

// Defaults of CountersInput.
const (
	// DefaultMaxRepPackets: the representor may move fewer packets than
	// this on its slow path for "offloaded" (an upstream traffic-flow test
	// suite fails offload at 1000 packets on the representor in a run).
	DefaultMaxRepPackets uint64 = 1000
	// DefaultMinFlowPackets: the guest's interface must move at least this
	// many packets in the window, or the window proves nothing.
	DefaultMinFlowPackets uint64 = 10000
	// TrackTolerancePercent: the representor's link counters stand for the
	// guest's port only when, in each direction, they moved within this
	// many percent of the guest interface's (or within MaxRepPackets,
	// whichever is larger: the two readings are not taken at the same
	// instant). mlx5 reports the VF vport's counters flipped (the
	// representor's rx is the VF's tx: en_rep.c, "flip tx/rx as we are
	// reporting the counters for the switch vport"), as a veth pair does.
	TrackTolerancePercent = 10
)

// LinkStatsCommand reads one device's link counters as JSON.
func LinkStatsCommand(dev string) string {
	return "ip -s -j link show dev " + remote.ShellQuote(dev)
}

// CPUHitStatsCommand reads one device's cpu_hit counters (the packets the
// netdev handled in software) as JSON; iproute2 5.18 or later. Its output
// has the shape ParseLinkStats reads; a device whose driver keeps no such
// counters is listed without "stats64".
func CPUHitStatsCommand(dev string) string {
	return "ip -j stats show dev " + remote.ShellQuote(dev) + " group offload subgroup cpu_hit"
}

// LinkStats is one device's counters from `ip -s -j link show dev DEV` or
// `ip -j stats show dev DEV group offload subgroup cpu_hit`.
type LinkStats struct {
	Name                 string
	RxPackets, TxPackets uint64
	RxBytes, TxBytes     uint64
	RxDropped, TxDropped uint64
}

// ErrNoCounters is wrapped by ParseLinkStats when the device is listed
// without counters: `ip link` without -s, or a cpu_hit listing of a device
// whose driver keeps no cpu_hit counters.
var ErrNoCounters = errors.New("no counters")

type ipDirection struct {
	Bytes   *uint64 `json:"bytes"`
	Packets *uint64 `json:"packets"`
	Dropped *uint64 `json:"dropped"`
}

type ipStats struct {
	RX *ipDirection `json:"rx"`
	TX *ipDirection `json:"tx"`
}

type ipLink struct {
	Ifname  *string  `json:"ifname"`
	Stats64 *ipStats `json:"stats64"`
	Stats   *ipStats `json:"stats"`
}

// ParseLinkStats parses iproute2's JSON listing of exactly one device:
//
//	[{"ifindex":2,"ifname":"offrec2-rep",...,"stats64":{"rx":{"bytes":238,"packets":3,"errors":0,"dropped":0,...},"tx":{...}}}]
//
// "stats64" is read, "stats" (32-bit counters) when it is absent. Packets
// and bytes are required in both directions, dropped is 0 when absent.
func ParseLinkStats(data []byte) (LinkStats, error) {
	var ls LinkStats
	if len(strings.TrimSpace(string(data))) == 0 {
		return ls, errors.New("ip link statistics: empty output")
	}
	var entries []json.RawMessage
	if err := json.Unmarshal(data, &entries); err != nil {
		return ls, fmt.Errorf("ip link statistics: not the JSON array `ip -j` prints: %w", err)
	}
	switch len(entries) {
	case 0:
		return ls, errors.New("ip link statistics: no device listed (want exactly one)")
	case 1:
	default:
		return ls, fmt.Errorf("ip link statistics: %d devices listed (want exactly one: was `dev DEV` given?)", len(entries))
	}
	var l ipLink
	if err := json.Unmarshal(entries[0], &l); err != nil {
		return ls, fmt.Errorf("ip link statistics: %w", err)
	}
	if l.Ifname == nil || *l.Ifname == "" {
		return ls, errors.New(`ip link statistics: the device has no "ifname"`)
	}
	ls.Name = *l.Ifname
	st, key := l.Stats64, "stats64"
	if st == nil {
		st, key = l.Stats, "stats"
	}
	if st == nil {
		return ls, fmt.Errorf(`ip link statistics: device %s has no "stats64" or "stats": %w`, ls.Name, ErrNoCounters)
	}
	for _, d := range []struct {
		name                    string
		dir                     *ipDirection
		packets, bytes, dropped *uint64
	}{
		{"rx", st.RX, &ls.RxPackets, &ls.RxBytes, &ls.RxDropped},
		{"tx", st.TX, &ls.TxPackets, &ls.TxBytes, &ls.TxDropped},
	} {
		switch {
		case d.dir == nil:
			return ls, fmt.Errorf("ip link statistics: device %s: %s has no %q", ls.Name, key, d.name)
		case d.dir.Packets == nil:
			return ls, fmt.Errorf("ip link statistics: device %s: %s.%s has no \"packets\"", ls.Name, key, d.name)
		case d.dir.Bytes == nil:
			return ls, fmt.Errorf("ip link statistics: device %s: %s.%s has no \"bytes\"", ls.Name, key, d.name)
		}
		*d.packets, *d.bytes = *d.dir.Packets, *d.dir.Bytes
		if d.dir.Dropped != nil {
			*d.dropped = *d.dir.Dropped
		}
	}
	return ls, nil
}

// RepCounters is one reading of a representor.
type RepCounters struct {
	// Link: `ip -s -j link show`. On a hardware netdev (mlx5: the VF vport)
	// both datapaths; on a device without cpu_hit counters, everything.
	Link LinkStats
	// CPUHit: `ip -j stats show ... cpu_hit`, the software datapath only;
	// nil when the driver keeps no such counters.
	CPUHit *LinkStats
}

// CountersInput configures CheckCounters.
type CountersInput struct {
	// Representor is the guest's representor on the hypervisor.
	Representor string
	// Guest runs commands in the guest; GuestIface is its data interface,
	// GuestName its name in messages (Guest.Name() when empty).
	Guest      remote.Runner
	GuestIface string
	GuestName  string
	// Window is the time between the two readings, inside the settled part
	// of a sustained flow.
	Window time.Duration
	// MaxRepPackets: the representor may move fewer than this many packets
	// (both directions) on its slow path for "offloaded"; 0 means
	// DefaultMaxRepPackets.
	MaxRepPackets uint64
	// MinFlowPackets: the guest's interface must move at least this many
	// (both directions), or the window proves nothing; 0 means
	// DefaultMinFlowPackets. It must exceed MaxRepPackets, or a small flow
	// forwarded by the host would pass as offloaded.
	MinFlowPackets uint64
}

func (in CountersInput) withDefaults() CountersInput {
	if in.MaxRepPackets == 0 {
		in.MaxRepPackets = DefaultMaxRepPackets
	}
	if in.MinFlowPackets == 0 {
		in.MinFlowPackets = DefaultMinFlowPackets
	}
	if in.GuestName == "" && in.Guest != nil {
		in.GuestName = in.Guest.Name()
	}
	return in
}

// CheckCounters reads the representor's counters on hv and the guest
// interface's counters in the guest, waits Window, reads them again and
// judges the four readings with JudgeCounters. Run it in the settled part of
// a sustained flow. Every output is evidence. A failed or unreadable
// reading (tool missing, no such device, old iproute2) is an inconclusive
// verdict; err is for bad input, transport failure or a cancelled context.
func CheckCounters(ctx context.Context, hv remote.Runner, in CountersInput) (Check, error) {
	c := Check{Name: results.CheckCounters}
	in = in.withDefaults()
	switch {
	case strings.TrimSpace(in.Representor) == "":
		return c, errors.New("counters check: no representor given")
	case in.Guest == nil:
		return c, errors.New("counters check: no guest runner: the guest's own interface counters are the control")
	case strings.TrimSpace(in.GuestIface) == "":
		return c, fmt.Errorf("counters check: no data interface of the guest %s given", in.GuestName)
	case in.Window <= 0:
		return c, fmt.Errorf("counters check: window must be > 0, got %s", in.Window)
	case in.MinFlowPackets <= in.MaxRepPackets:
		return c, fmt.Errorf("counters check: min flow packets (%d) must exceed max representor packets (%d), or a small flow forwarded by the host would pass as offloaded",
			in.MinFlowPackets, in.MaxRepPackets)
	}
	var rep [2]RepCounters
	var guest [2]LinkStats
	for i, when := range []string{"before", "after"} {
		if i > 0 {
			if err := wait.Sleep(ctx, in.Window); err != nil {
				return c, fmt.Errorf("counters check: %w", err)
			}
		}
		problem, err := readCounters(ctx, hv, in, when, &c, &rep[i], &guest[i])
		if err != nil {
			return c, err
		}
		if problem != "" {
			c.Verdict, c.Reason = results.VerdictInconclusive, problem
			return c, nil
		}
	}
	c.Verdict, c.Reason = JudgeCounters(rep[0], rep[1], guest[0], guest[1], in)
	return c, nil
}

// readCounters takes one reading of the representor and the guest; a
// non-empty problem is an inconclusive verdict.
func readCounters(ctx context.Context, hv remote.Runner, in CountersInput, when string, c *Check, rep *RepCounters, guest *LinkStats) (problem string, err error) {
	// read runs one listing; perr is a parse error of an output that ran.
	read := func(r remote.Runner, cmd, name, where string) (ls LinkStats, perr error, problem string, err error) {
		res, err := r.Run(ctx, cmd)
		if err != nil {
			return ls, nil, "", onTarget("counters check", r, err)
		}
		c.Evidence = append(c.Evidence, evidence(name, res))
		if !res.OK() {
			return ls, nil, ipProblem(res, where), nil
		}
		ls, perr = ParseLinkStats(res.Stdout)
		return ls, perr, "", nil
	}
	unreadable := func(cmd, where string, perr error) string {
		return fmt.Sprintf("cannot read `%s` output %s: %v", cmd, where, perr)
	}
	hvWhere := "on the hypervisor " + hv.Name()
	base := "counters-rep-" + fileSafe(in.Representor)

	cmd := LinkStatsCommand(in.Representor)
	ls, perr, problem, err := read(hv, cmd, base+"-"+when+".json", hvWhere)
	switch {
	case err != nil || problem != "":
		return problem, err
	case perr != nil:
		return unreadable(cmd, hvWhere, perr), nil
	}
	rep.Link = ls

	cmd = CPUHitStatsCommand(in.Representor)
	ls, perr, problem, err = read(hv, cmd, base+"-cpuhit-"+when+".json", hvWhere)
	switch {
	case err != nil:
		return "", err
	case problem != "":
		return problem + "; without the representor's cpu_hit (slow-path) counters its link counters cannot tell offloaded from host-forwarded packets (on mlx5 they count all of the VF's traffic)", nil
	case errors.Is(perr, ErrNoCounters):
		rep.CPUHit = nil // the driver keeps none: the link counters are the slow path
	case perr != nil:
		return unreadable(cmd, hvWhere, perr), nil
	default:
		hit := ls // ls is reused for the guest below
		rep.CPUHit = &hit
	}

	guestWhere := "in the guest " + in.GuestName
	cmd = LinkStatsCommand(in.GuestIface)
	ls, perr, problem, err = read(in.Guest, cmd, "counters-guest-"+fileSafe(in.GuestIface)+"-"+when+".json", guestWhere)
	switch {
	case err != nil || problem != "":
		return problem, err
	case perr != nil:
		return unreadable(cmd, guestWhere, perr), nil
	}
	*guest = ls
	return "", nil
}

// ipProblem turns a failed ip run into a reason.
func ipProblem(r remote.Result, where string) string {
	msg := firstLine(r.Stderr)
	if msg == "" {
		msg = firstLine(r.Stdout)
	}
	switch {
	case r.ExitCode == 127:
		return fmt.Sprintf("ip (iproute2) is not installed %s (exit 127: %s)", where, msg)
	case strings.Contains(msg, "does not exist"):
		return fmt.Sprintf("%s %s", strings.TrimSuffix(msg, "."), where)
	case strings.Contains(msg, `Object "stats" is unknown`):
		return fmt.Sprintf("iproute2 %s has no `ip stats` (it needs 5.18 or later): %s", where, msg)
	}
	return fmt.Sprintf("`%s` exited %d %s: %s", r.Cmd, r.ExitCode, where, msg)
}

// JudgeCounters decides the counters check from two readings of the
// representor and two of the guest's data interface:
//
//   - a counter that went backwards (reset, device recreated): inconclusive;
//   - the guest's interface moved fewer than MinFlowPackets (rx+tx):
//     inconclusive, the window proves nothing;
//   - the representor's slow path (cpu_hit, or the link counters of a
//     device without cpu_hit) moved MaxRepPackets or more: software;
//   - a quiet device without cpu_hit counters, or a quiet slow path while
//     the representor's link counters did not move like the guest's (less
//     than MinFlowPackets, or in either direction off the guest's by more
//     than TrackTolerancePercent or MaxRepPackets): inconclusive with the
//     numbers, the flow did not cross this representor's port or the
//     reading is wrong;
//   - otherwise offloaded.
//
// Packets are judged, not bytes (offloaded byte counters leave out the
// Ethernet header).
func JudgeCounters(rep0, rep1 RepCounters, guest0, guest1 LinkStats, in CountersInput) (results.Verdict, string) {
	in = in.withDefaults()
	if in.MinFlowPackets <= in.MaxRepPackets {
		return results.VerdictInconclusive, fmt.Sprintf("min flow packets (%d) must exceed max representor packets (%d)", in.MinFlowPackets, in.MaxRepPackets)
	}
	rep, iface := in.Representor, in.GuestIface
	if rep == "" {
		rep = rep0.Link.Name
	}
	if iface == "" {
		iface = guest0.Name
	}
	where := iface + " of " + in.GuestName
	if in.GuestName == "" {
		where = iface
	}
	if why := backwards(guest0, guest1); why != "" {
		return results.VerdictInconclusive, fmt.Sprintf("the counters of %s went backwards (%s): the interface was reset or recreated in the window", where, why)
	}
	if why := backwards(rep0.Link, rep1.Link); why != "" {
		return results.VerdictInconclusive, fmt.Sprintf("the link counters of representor %s went backwards (%s): the device was reset or recreated in the window", rep, why)
	}
	if (rep0.CPUHit == nil) != (rep1.CPUHit == nil) {
		return results.VerdictInconclusive, fmt.Sprintf("the cpu_hit counters of representor %s appeared or vanished between the readings", rep)
	}
	if rep0.CPUHit != nil {
		if why := backwards(*rep0.CPUHit, *rep1.CPUHit); why != "" {
			return results.VerdictInconclusive, fmt.Sprintf("the cpu_hit counters of representor %s went backwards (%s): the device was reset or recreated in the window", rep, why)
		}
	}
	flow := moved(guest0, guest1)
	port := moved(rep0.Link, rep1.Link)
	slow, counters, note := port, "link counters", "; it keeps no cpu_hit counters (no hardware datapath), so its link counters are its slow path"
	if rep0.CPUHit != nil {
		slow, counters, note = moved(*rep0.CPUHit, *rep1.CPUHit), "cpu_hit (slow-path) counters", ""
	}
	// A busy slow path is software whatever the flow's size: packets the host
	// datapath handled are counted, not inferred. Only "offloaded", which
	// rests on silence, needs the guest's own counters to show a big flow.
	if slow >= in.MaxRepPackets {
		return results.VerdictSoftware, fmt.Sprintf("representor %s moved %d packets on its %s while the guest's interface %s moved %d (an offloaded port moves fewer than %d there%s): the host datapath carried the flow",
			rep, slow, counters, where, flow, in.MaxRepPackets, note)
	}
	if flow < in.MinFlowPackets {
		return results.VerdictInconclusive, fmt.Sprintf("the flow moved only %d packets through %s in the window (at least %d needed), so quiet representor counters prove nothing",
			flow, where, in.MinFlowPackets)
	}
	if rep0.CPUHit == nil {
		return results.VerdictInconclusive, fmt.Sprintf("representor %s keeps no cpu_hit counters (no hardware datapath) and its link counters moved only %d packets while %s moved %d: the flow did not cross this device (wrong representor?)",
			rep, port, where, flow)
	}
	if port < in.MinFlowPackets {
		return results.VerdictInconclusive, fmt.Sprintf("representor %s moved %d packets on its slow path, but its link counters (the port it stands for) moved only %d while %s moved %d: the flow did not cross this representor's port (wrong representor?)",
			rep, slow, port, where, flow)
	}
	if why := untracked(rep0.Link, rep1.Link, guest0, guest1, in.MaxRepPackets); why != "" {
		return results.VerdictInconclusive, fmt.Sprintf("representor %s moved %d packets on its slow path, but its link counters do not track %s (%s; allowed: %d%% or %d packets, whichever is larger): not the guest's representor, or a wrong reading",
			rep, slow, where, why, TrackTolerancePercent, in.MaxRepPackets)
	}
	return results.VerdictOffloaded, fmt.Sprintf("representor %s moved %d packets on its slow path (cpu_hit) while the guest's interface %s moved %d and the representor's port (link counters) %d, tracking it within %d%% each way (representor rx/tx +%d/+%d, guest tx/rx +%d/+%d): the NIC forwarded the flow",
		rep, slow, where, flow, port, TrackTolerancePercent, rep1.Link.RxPackets-rep0.Link.RxPackets, rep1.Link.TxPackets-rep0.Link.TxPackets,
		guest1.TxPackets-guest0.TxPackets, guest1.RxPackets-guest0.RxPackets)
}

// untracked says how the representor's link counters fail to follow the
// guest interface's, direction by direction (the representor receives what
// the guest sends); "" when they follow within TrackTolerancePercent or
// slack packets.
func untracked(rep0, rep1, guest0, guest1 LinkStats, slack uint64) string {
	var out []string
	for _, d := range []struct {
		name      string
		rep, peer uint64
	}{
		{"representor rx vs guest tx", rep1.RxPackets - rep0.RxPackets, guest1.TxPackets - guest0.TxPackets},
		{"representor tx vs guest rx", rep1.TxPackets - rep0.TxPackets, guest1.RxPackets - guest0.RxPackets},
	} {
		diff, larger := d.rep-d.peer, d.rep
		if d.peer > d.rep {
			diff, larger = d.peer-d.rep, d.peer
		}
		if diff > max(larger/100*TrackTolerancePercent, slack) {
			out = append(out, fmt.Sprintf("%s: +%d vs +%d", d.name, d.rep, d.peer))
		}
	}
	return strings.Join(out, ", ")
}

// backwards describes packet counters that decreased between two readings.
func backwards(a, b LinkStats) string {
	var out []string
	if b.RxPackets < a.RxPackets {
		out = append(out, fmt.Sprintf("rx packets %d -> %d", a.RxPackets, b.RxPackets))
	}
	if b.TxPackets < a.TxPackets {
		out = append(out, fmt.Sprintf("tx packets %d -> %d", a.TxPackets, b.TxPackets))
	}
	return strings.Join(out, ", ")
}

// moved is the packets (rx+tx) between two readings that did not go
// backwards, saturating instead of wrapping.
func moved(a, b LinkStats) uint64 {
	rx, tx := b.RxPackets-a.RxPackets, b.TxPackets-a.TxPackets
	if rx > math.MaxUint64-tx {
		return math.MaxUint64
	}
	return rx + tx
}
