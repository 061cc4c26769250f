package offload

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Churn over a long window (issue 38 item 2): a steady flow runs for
// minutes while the pair's datapath flows are read at a low rate
// (dpctl/dump-flows -m: on the kernel datapath with hw-offload these are
// the tc rules OVS installed, with tc's counters) together with OVS's
// coverage counters and the representor's packet counter. The judge says
// whether any rule of the pair was deleted and added again, when, and
// what the slow path carried per period. Pure: the reads come from the
// harness, the rules from config.
//
// What the sampling can and cannot see:
//   - a flow gone from a read and back in a later one, or back under
//     another ufid: re-added (counted), with the interval it happened in;
//   - a flow whose packets went backwards under the same ufid: either a
//     delete and re-add inside one sample period (the blind spot: OVS
//     derives the ufid from the flow's key, so a re-added flow often has
//     the same ufid) or a modify — OVS before 3.2 resets tc's counters when
//     it modifies an offloaded flow (it replaces the tc filter). The
//     coverage counters tell them apart where they can: dpif_flow_del
//     (every datapath flow deletion, ovs lib/dpif.c) grew in that interval
//     is a re-add (counted), else a modify (listed, not counted);
//   - a flow whose packets stopped growing before it went is an idle
//     expiry (ARP, a neighbour refresh), never churn;
//   - a flow that left hardware (offloaded:yes then not, same ufid) is
//     counted.
// dpif_flow_del counts every flow of the hypervisor, not only the pair's:
// on a busy node it grows with other tenants' expiries, so an interval
// with deletions proves nothing about the pair; the judge only uses it to
// resolve a counter reset it saw, and reports the window's total.

// CoverageDeleted and CoveragePut are the coverage counters of datapath
// flow deletions and puts (creates and modifies) in ovs lib/dpif.c.
const (
	CoverageDeleted = "dpif_flow_del"
	CoveragePut     = "dpif_flow_put"
)

// ChurnSample is one read of a hypervisor.
type ChurnSample struct {
	// At is the read's time since the window started.
	At time.Duration
	// Flows are the pair's datapath flows at the read (the caller filters
	// them: the pair's MACs and the steady flow's protocol).
	Flows []DpctlFlow
	// Coverage is coverage/show at the read; nil when not read.
	Coverage *Coverage
	// RepPackets is the representor's received plus sent packets at the
	// read (its slow path); nil when not read.
	RepPackets *uint64
}

// ChurnRules are the definitions the judge applies (from config).
type ChurnRules struct {
	// SlowPathShare is the most of the steady flow's packets the
	// representor may carry per period (0.01 = 1 %).
	SlowPathShare float64
	// Period is the slow path's period (10 s).
	Period time.Duration
}

// ChurnInput is the window to judge.
type ChurnInput struct {
	Samples []ChurnSample
	// FlowPPS is the steady flow's offered packets per second (the slow
	// path's share is of it); 0 = not known, the share is not judged.
	FlowPPS float64
	// Software: the datapath is software only (the lab's userspace
	// datapath): every packet crosses the representor by construction, so
	// the slow path is not judged, and nothing is in hardware.
	Software bool
	// OVSVersion is `ovs-vswitchd --version`'s version ("2.17.9", "3.3.0");
	// "" when not known. Before 3.2 a modify resets tc's counters.
	OVSVersion string
	Rules      ChurnRules
}

// ChurnKind names one kind of event.
type ChurnKind string

const (
	// ChurnReadded: the flow was gone from a read and back in a later one,
	// or came back under another ufid, or its counters went backwards
	// while the hypervisor deleted flows in that interval. Counted.
	ChurnReadded ChurnKind = "re-added"
	// ChurnGone: the flow carried packets, then was gone until the last
	// read. Counted.
	ChurnGone ChurnKind = "gone"
	// ChurnLeftHardware: offloaded:yes, then not, same ufid. Counted.
	ChurnLeftHardware ChurnKind = "left-hardware"
	// ChurnModified: the counters went backwards under the same ufid with
	// no datapath flow deleted on the hypervisor in that interval: a
	// modify (before OVS 3.2 it resets tc's counters). Not counted.
	ChurnModified ChurnKind = "modified"
	// ChurnUnresolved: counters backwards under the same ufid without a
	// coverage reading to tell a modify from a re-add. Not counted; the
	// statement names it.
	ChurnUnresolved ChurnKind = "reset-unresolved"
	// ChurnIdle: the flow stopped carrying packets before it went (an
	// idle expiry). Not counted.
	ChurnIdle ChurnKind = "idle-expiry"
)

// ChurnEvent is one event, placed in the interval between two reads.
type ChurnEvent struct {
	Kind ChurnKind
	// Flow is the flow's match, shortened.
	Flow string
	// After and Before bound when it happened: the reads around it.
	After, Before time.Duration
	Counted       bool
	Detail        string
}

// SlowPathPeriod is the representor's packets in one period.
type SlowPathPeriod struct {
	From, To time.Duration
	Packets  uint64
	// Share is Packets over the steady flow's packets in the period.
	Share float64
	Over  bool
}

// Churn is the judged window.
type Churn struct {
	Events []ChurnEvent
	// Count is the counted events: the threshold churn_count's value.
	Count int
	// Stable: flows of the pair were seen, with no counted event and no
	// slow-path period over the share.
	Stable bool
	// Flows is the distinct flows seen; Reads the reads judged.
	Flows, Reads int
	// Deleted and Put are the window's coverage deltas of dpif_flow_del
	// and dpif_flow_put (every flow of the hypervisor); HasCoverage says
	// the first and last reads had coverage.
	Deleted, Put uint64
	HasCoverage  bool
	// SlowPath are the periods; SlowPathOver those over the share;
	// SlowPathMax the highest share. Not judged on a software datapath
	// or without FlowPPS (SlowPathNote says why).
	SlowPath     []SlowPathPeriod
	SlowPathOver int
	SlowPathMax  float64
	SlowPathNote string
	// BlindSpot states what the sampling cannot see.
	BlindSpot string
	Statement string
}

// ModifyResetsCounters says whether an OVS version resets tc's counters
// when it modifies an offloaded flow (before 3.2); known false when the
// version cannot be read.
func ModifyResetsCounters(version string) (resets, known bool) {
	f := strings.SplitN(strings.TrimSpace(version), ".", 3)
	if len(f) < 2 {
		return false, false
	}
	maj, err1 := strconv.Atoi(f[0])
	minr, err2 := strconv.Atoi(f[1])
	if err1 != nil || err2 != nil || maj < 0 || minr < 0 {
		return false, false
	}
	return maj < 3 || maj == 3 && minr < 2, true
}

// Validate names every problem of the rules at once.
func (r ChurnRules) Validate() error {
	var bad []string
	if !(r.SlowPathShare > 0 && r.SlowPathShare < 1) {
		bad = append(bad, fmt.Sprintf("slow path share must be in (0, 1), got %v", r.SlowPathShare))
	}
	if r.Period <= 0 {
		bad = append(bad, fmt.Sprintf("period must be > 0, got %v", r.Period))
	}
	if len(bad) > 0 {
		return fmt.Errorf("churn rules: %s", strings.Join(bad, "; "))
	}
	return nil
}

// churnKey identifies a flow across reads: its match (a re-added flow
// often gets the same ufid, since OVS derives it from the key).
func churnKey(f DpctlFlow) string {
	var s []string
	for _, m := range f.Match {
		s = append(s, m.Key+"("+m.Value+")")
	}
	return strings.Join(s, ",")
}

// churnSeen is a flow's last read.
type churnSeen struct {
	flow  DpctlFlow
	at    int  // index of the read
	grew  bool // its packets grew into that read (it was carrying traffic)
	first bool // first read of this incarnation
}

// JudgeChurn judges the window. The reads must be in increasing time,
// never negative, at least two. Every problem is named at once.
func JudgeChurn(in ChurnInput) (Churn, error) {
	var bad []string
	if err := in.Rules.Validate(); err != nil {
		bad = append(bad, err.Error())
	}
	if len(in.Samples) < 2 {
		bad = append(bad, fmt.Sprintf("need at least 2 reads, got %d", len(in.Samples)))
	}
	if in.FlowPPS < 0 || in.FlowPPS != in.FlowPPS {
		bad = append(bad, fmt.Sprintf("flow packets per second must be >= 0, got %v", in.FlowPPS))
	}
	for i, s := range in.Samples {
		switch {
		case s.At < 0:
			bad = append(bad, fmt.Sprintf("read %d: time %v is before the start", i, s.At))
		case i > 0 && s.At <= in.Samples[i-1].At:
			bad = append(bad, fmt.Sprintf("read %d: time %v is not after read %d's %v", i, s.At, i-1, in.Samples[i-1].At))
		}
		keys := map[string]bool{}
		for _, f := range s.Flows {
			k := churnKey(f)
			if keys[k] {
				bad = append(bad, fmt.Sprintf("read %d: flow %s listed twice", i, short(k)))
			}
			keys[k] = true
		}
	}
	if len(bad) > 0 {
		return Churn{}, fmt.Errorf("churn window: %s", strings.Join(bad, "; "))
	}
	ss := in.Samples
	out := Churn{Reads: len(ss)}
	resets, known := ModifyResetsCounters(in.OVSVersion)
	deletedBetween := func(i int) (uint64, bool) {
		a, b := ss[i-1].Coverage, ss[i].Coverage
		if a == nil || b == nil {
			return 0, false
		}
		x, y := a.Totals[CoverageDeleted], b.Totals[CoverageDeleted]
		if y < x { // ovs-vswitchd restarted: every flow was deleted
			return 1, true
		}
		return y - x, true
	}
	seen := map[string]*churnSeen{}
	gone := map[string]*churnSeen{}
	distinct := map[string]bool{}
	add := func(e ChurnEvent) {
		if e.Counted {
			out.Count++
		}
		out.Events = append(out.Events, e)
	}
	for i, s := range ss {
		now := map[string]bool{}
		for _, f := range s.Flows {
			k := churnKey(f)
			now[k] = true
			distinct[k] = true
			prev, ok := seen[k]
			if !ok {
				if g, was := gone[k]; was {
					delete(gone, k)
					e := ChurnEvent{Kind: ChurnReadded, Flow: short(k), After: ss[g.at].At, Before: s.At, Counted: true,
						Detail: fmt.Sprintf("gone from read %d (%s) to read %d (%s), back with %d packets", g.at+1, secs(ss[g.at+1].At), i, secs(s.At), f.Packets)}
					if !g.grew {
						e.Kind, e.Counted = ChurnIdle, false
						e.Detail = "idle before it went (no packets in its last interval), back later: an expiry and a new flow, not churn"
					}
					add(e)
				}
				seen[k] = &churnSeen{flow: f, at: i, first: true}
				continue
			}
			p := prev.flow
			grew := f.Packets > p.Packets
			switch {
			case p.UFID != "" && f.UFID != "" && p.UFID != f.UFID:
				what := "ufid "
				if strings.HasPrefix(p.UFID, "handle:") {
					what = "tc "
				}
				add(ChurnEvent{Kind: ChurnReadded, Flow: short(k), After: ss[i-1].At, Before: s.At, Counted: true,
					Detail: fmt.Sprintf("%s%s then %s", what, p.UFID, f.UFID)})
			case f.Packets < p.Packets:
				e := ChurnEvent{Kind: ChurnModified, Flow: short(k), After: ss[i-1].At, Before: s.At}
				del, has := deletedBetween(i)
				switch {
				case has && del > 0:
					e.Kind, e.Counted = ChurnReadded, true
					e.Detail = fmt.Sprintf("packets %d then %d under the same ufid, and %d datapath flow(s) deleted on the hypervisor in this interval (%s): deleted and re-added within one read period", p.Packets, f.Packets, del, CoverageDeleted)
				case has && known && !resets:
					e.Kind, e.Counted = ChurnReadded, true
					e.Detail = fmt.Sprintf("packets %d then %d under the same ufid; OVS %s keeps counters over a modify, so the rule was replaced", p.Packets, f.Packets, in.OVSVersion)
				case has:
					e.Detail = fmt.Sprintf("packets %d then %d under the same ufid, no datapath flow deleted on the hypervisor in this interval: a modify (OVS before 3.2 resets tc's counters on modify)", p.Packets, f.Packets)
				default:
					e.Kind = ChurnUnresolved
					e.Detail = fmt.Sprintf("packets %d then %d under the same ufid, no coverage read in this interval to tell a modify from a re-add", p.Packets, f.Packets)
				}
				add(e)
				grew = true // the counter restarted: it carried packets since
			}
			if flowHardware(p, false) == flowHW && flowHardware(f, false) != flowHW && (p.UFID == f.UFID || p.UFID == "" || f.UFID == "") {
				add(ChurnEvent{Kind: ChurnLeftHardware, Flow: short(k), After: ss[i-1].At, Before: s.At, Counted: true,
					Detail: fmt.Sprintf("offloaded:%s dp:%s, then offloaded:%s dp:%s", orDash(p.Offloaded), orDash(p.DP), orDash(f.Offloaded), orDash(f.DP))})
			}
			seen[k] = &churnSeen{flow: f, at: i, grew: grew}
		}
		for k, prev := range seen {
			if !now[k] {
				delete(seen, k)
				gone[k] = prev
			}
		}
	}
	for k, g := range gone {
		e := ChurnEvent{Kind: ChurnGone, Flow: short(k), After: ss[g.at].At, Before: ss[g.at+1].At, Counted: true,
			Detail: fmt.Sprintf("carried packets until read %d (%s), absent from read %d on", g.at, secs(ss[g.at].At), g.at+1)}
		if !g.grew {
			e.Kind, e.Counted = ChurnIdle, false
			e.Detail = "idle before it went (no packets in its last interval): an expiry, not churn"
		}
		add(e)
	}
	slices.SortStableFunc(out.Events, func(a, b ChurnEvent) int {
		if a.After != b.After {
			return int(a.After - b.After)
		}
		return strings.Compare(a.Flow, b.Flow)
	})
	out.Flows = len(distinct)
	if a, b := ss[0].Coverage, ss[len(ss)-1].Coverage; a != nil && b != nil {
		out.HasCoverage = true
		out.Deleted = sub(b.Totals[CoverageDeleted], a.Totals[CoverageDeleted])
		out.Put = sub(b.Totals[CoveragePut], a.Totals[CoveragePut])
	}
	out.slowPath(in)
	period := ss[1].At - ss[0].At
	for i := 2; i < len(ss); i++ {
		period = max(period, ss[i].At-ss[i-1].At)
	}
	out.BlindSpot = fmt.Sprintf("a rule deleted and re-added between two reads (up to %s apart) is seen only as its counters restarting under the same ufid, or not at all when it came back with more packets than it had; %s in coverage/show counts every deletion on the hypervisor (%s)",
		secs(period), CoverageDeleted, out.deletedWords())
	out.Stable = out.Count == 0 && out.SlowPathOver == 0 && out.Flows > 0
	out.Statement = out.statement()
	return out, nil
}

// slowPath splits the representor's counter into periods of Rules.Period
// (from the first read with a counter; the last period may be shorter).
func (o *Churn) slowPath(in ChurnInput) {
	switch {
	case in.Software:
		o.SlowPathNote = "software datapath: every packet crosses the representor by construction, not judged"
	case in.FlowPPS <= 0:
		o.SlowPathNote = "the steady flow's packet rate is not known, not judged"
	}
	var from, prev *ChurnSample
	for i := range in.Samples {
		s := &in.Samples[i]
		if s.RepPackets == nil {
			continue
		}
		if from == nil {
			from, prev = s, s
			continue
		}
		if *s.RepPackets < *prev.RepPackets {
			o.SlowPathNote = strings.TrimPrefix(o.SlowPathNote+fmt.Sprintf("; the representor's counter went backwards between %s and %s (the representor was re-created?), that period not judged", secs(prev.At), secs(s.At)), "; ")
			from, prev = s, s
			continue
		}
		prev = s
		last := i == len(in.Samples)-1
		if s.At-from.At < in.Rules.Period && !last {
			continue
		}
		p := SlowPathPeriod{From: from.At, To: s.At, Packets: *s.RepPackets - *from.RepPackets}
		if in.FlowPPS > 0 {
			p.Share = float64(p.Packets) / (in.FlowPPS * (s.At - from.At).Seconds())
			o.SlowPathMax = max(o.SlowPathMax, p.Share)
			if !in.Software && p.Share > in.Rules.SlowPathShare {
				p.Over = true
				o.SlowPathOver++
			}
		}
		o.SlowPath = append(o.SlowPath, p)
		from = s
	}
	if len(o.SlowPath) == 0 && o.SlowPathNote == "" {
		o.SlowPathNote = "the representor's counter was not read twice, not judged"
	}
}

func (o Churn) deletedWords() string {
	if !o.HasCoverage {
		return "not read at both ends of the window"
	}
	return fmt.Sprintf("%d deletion(s), %d put(s) over the window, every flow of the hypervisor", o.Deleted, o.Put)
}

func (o Churn) statement() string {
	var b strings.Builder
	if o.Flows == 0 {
		fmt.Fprintf(&b, "not judged: no flow of the pair in any of %d reads (the flow did not run, or the pair's flows were not found: MACs, protocol)", o.Reads)
		return b.String()
	}
	if o.Stable {
		b.WriteString("stable")
	} else {
		b.WriteString("churned")
	}
	fmt.Fprintf(&b, ": %d rule(s) of the pair deleted and re-added, gone or out of hardware over %d reads of %d flow(s)", o.Count, o.Reads, o.Flows)
	var at []string
	other := map[ChurnKind]int{}
	for _, e := range o.Events {
		if e.Counted {
			at = append(at, fmt.Sprintf("%s %s–%s", e.Kind, secs(e.After), secs(e.Before)))
		} else {
			other[e.Kind]++
		}
	}
	if len(at) > 0 {
		fmt.Fprintf(&b, " (%s)", strings.Join(at, ", "))
	}
	for _, k := range []ChurnKind{ChurnModified, ChurnUnresolved, ChurnIdle} {
		if n := other[k]; n > 0 {
			fmt.Fprintf(&b, "; %d %s (not counted)", n, k)
		}
	}
	switch {
	case o.SlowPathNote != "" && len(o.SlowPath) == 0 || o.SlowPathNote != "" && o.SlowPathOver == 0 && o.SlowPathMax == 0:
		fmt.Fprintf(&b, "; slow path: %s", o.SlowPathNote)
	case o.SlowPathOver > 0:
		var over []string
		for _, p := range o.SlowPath {
			if p.Over {
				over = append(over, fmt.Sprintf("%s–%s %d packets (%.2f %%)", secs(p.From), secs(p.To), p.Packets, 100*p.Share))
			}
		}
		fmt.Fprintf(&b, "; slow path over its share in %d of %d period(s): %s", o.SlowPathOver, len(o.SlowPath), strings.Join(over, ", "))
	default:
		fmt.Fprintf(&b, "; slow path at most %.2f %% of the flow per period (%d periods)", 100*o.SlowPathMax, len(o.SlowPath))
		if o.SlowPathNote != "" {
			fmt.Fprintf(&b, " (%s)", o.SlowPathNote)
		}
	}
	fmt.Fprintf(&b, "; coverage: %s", o.deletedWords())
	return b.String()
}

// short clips a flow's match for a sentence.
func short(k string) string {
	if len(k) > 160 {
		return k[:160] + "…"
	}
	return k
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// PairFlows keeps the flows of the pair: an Ethernet source or destination
// among macs (any case, exact masks allowed) and, when proto is not "",
// that protocol ("udp", "tcp"): its match field (udp(...), which -m prints
// even fully wildcarded), or the IP field's proto= (a flow built back from
// a tc rule that does not match the ports may lack the L4 field). A MAC
// that does not read is an error.
func PairFlows(flows []DpctlFlow, macs []string, proto string) ([]DpctlFlow, error) {
	set, err := newMACSet(macs)
	if err != nil {
		return nil, fmt.Errorf("the pair's MACs: %w", err)
	}
	var out []DpctlFlow
	for _, f := range flows {
		if !set.has(f.EthSrc) && !set.has(f.EthDst) {
			continue
		}
		if proto != "" && !hasProto(f, proto) {
			continue
		}
		out = append(out, f)
	}
	return out, nil
}

// FromMAC keeps the flows whose Ethernet source is mac: one direction of
// the pair. The churn window's steady flow is one-way UDP; its return
// direction carries iperf3's setup datagrams and then nothing, and OVS
// removes that idle flow after its max-idle (10 s): read as the pair's,
// it showed as a rule gone between two reads on every hypervisor of the
// lab's first judged window (2026-12-06), churn that was none.
func FromMAC(flows []DpctlFlow, mac string) []DpctlFlow {
	set, err := newMACSet([]string{mac})
	if err != nil {
		return nil
	}
	var out []DpctlFlow
	for _, f := range flows {
		if set.has(f.EthSrc) {
			out = append(out, f)
		}
	}
	return out
}

// InHardware says whether OVS claims the flow in hardware (offloaded:yes;
// see flowHardware).
func InHardware(f DpctlFlow) bool { return flowHardware(f, false) == flowHW }

// ipProtos are the IP protocol numbers PairFlows knows by name.
var ipProtos = map[string]string{"udp": "17", "tcp": "6", "sctp": "132"}

// hasProto says whether f's match admits proto: its ipv4/ipv6 field's
// proto= exact and that protocol, or wildcarded. A megaflow whose mask
// leaves the protocol out still prints the first packet's: on the lab's
// userspace datapath the pair's UDP flow was
// ipv4(...,proto=1/0,...),icmp(type=8/0,code=0/0) (the flood ping came
// first), which carries UDP as well (2026-12-06; read as "not the pair's"
// before, every churn window said "no flow of the pair"). Without an IP
// field (a flow built back from a tc rule that does not match the ports),
// its L4 field.
func hasProto(f DpctlFlow, proto string) bool {
	n, known := ipProtos[proto]
	for _, k := range []string{"ipv4", "ipv6"} {
		v, ok := f.Field(k)
		if !ok {
			continue
		}
		for _, part := range strings.Split(v, ",") {
			key, val, _ := strings.Cut(strings.TrimSpace(part), "=")
			if key != "proto" {
				continue
			}
			got, exact, _ := exactValue(val)
			if !exact {
				return true // wildcarded (or a partial mask): it admits proto
			}
			return known && got == n
		}
		return true // an IP match that does not name the protocol admits it
	}
	_, ok := f.Field(proto)
	return ok
}

// TCChurnFlows are a tc dump's flower rules as the churn judge reads
// flows: the match is the chain, the priority and the flower keys; the
// handle stands for the ufid (a rule deleted and added again under the
// same match usually gets another handle, or the lowest free one — the
// same — with its counters from zero); packets are tc's 64-bit total
// (hardware and software); in_hw is offloaded:yes. Other classifiers are
// left out.
func TCChurnFlows(d TCDump) []DpctlFlow {
	var out []DpctlFlow
	for _, f := range d.Filters {
		if f.Kind != "flower" {
			continue
		}
		m := []MatchField{{Key: "chain", Value: fmt.Sprint(f.Chain)}, {Key: "pref", Value: fmt.Sprint(f.Pref)}, {Key: "protocol", Value: f.Protocol}}
		keys := make([]string, 0, len(f.Keys))
		for k := range f.Keys {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			m = append(m, MatchField{Key: k, Value: f.Keys[k]})
		}
		fl := DpctlFlow{UFID: "handle:" + normHandle(f.Handle), Match: m, Packets: f.counts().pkts, DP: "tc", EthSrc: f.Keys["src_mac"], EthDst: f.Keys["dst_mac"]}
		if f.InHW {
			fl.Offloaded = "yes"
		} else {
			fl.Offloaded = "no"
		}
		out = append(out, fl)
	}
	return out
}
