package offload

import (
	"fmt"
	"net"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// id identifies a filter across samples.
func (f TCFilter) id() string {
	return fmt.Sprintf("%s/chain %d/pref %d/handle %s/%s", f.Kind, f.Chain, f.Pref, normHandle(f.Handle), f.Protocol)
}

func (f TCFilter) describe() string {
	var keys []string
	for _, k := range []string{"src_mac", "dst_mac", "eth_type", "vlan_id", "cvlan_id", "ip_proto", "ct_state", "ct_zone", "enc_key_id", "enc_src_ip", "enc_dst_ip", "enc_dst_port", "geneve_opts", "vxlan_opts"} {
		if v, ok := f.Keys[k]; ok {
			keys = append(keys, k+" "+v)
		}
	}
	return fmt.Sprintf("%s pref %d handle %s [%s]", f.Kind, f.Pref, f.Handle, strings.Join(keys, ", "))
}

// tcRole is what a pipeline is to the guest pair (pathRole).
type tcRole int

const (
	tcUnrelated tcRole = iota // not the pair's traffic
	tcPair                    // source and destination MACs are two different guests
	tcPairInner               // decap pipeline: inner destination MAC a guest, no source MAC
	tcException               // from a guest to a multicast/broadcast address
)

// isDecap reports whether the rule matches tunnel metadata (enc_key_id,
// enc_dst_ip, enc_dst_port, ..., or a tunnel option: geneve_opts,
// vxlan_opts), i.e. decapsulates.
func (f TCFilter) isDecap() bool {
	for k := range f.Keys {
		if strings.HasPrefix(k, "enc_") || k == "geneve_opts" || k == "vxlan_opts" {
			return true
		}
	}
	return false
}

// isGroupMAC reports whether a normalized MAC has the group (I/G) bit set:
// multicast or broadcast.
func isGroupMAC(mac string) bool {
	hw, err := net.ParseMAC(mac)
	return err == nil && len(hw) > 0 && hw[0]&1 == 1
}

// keyedFilters gives every filter of a dump a key that is stable across
// samples: its id plus how many filters with the same id came before it, so
// that two identical dumps pair up filter by filter even when tc prints
// duplicates (or a JSON form without handles).
func keyedFilters(d TCDump) ([]string, map[string]TCFilter) {
	keys := make([]string, len(d.Filters))
	byKey := make(map[string]TCFilter, len(d.Filters))
	seen := map[string]int{}
	for i, f := range d.Filters {
		id := f.id()
		keys[i] = fmt.Sprintf("%s#%d", id, seen[id])
		seen[id]++
		byKey[keys[i]] = f
	}
	return keys, byKey
}

// TCObservation is what the TC check saw on one device: the dumps of its
// samples in time order, or the problem that kept it from seeing anything.
type TCObservation struct {
	Device string
	// Samples are the parsed dumps, oldest first.
	Samples []TCDump
	// IngressQdisc: true/false when `tc qdisc show dev DEV ingress` was read;
	// nil when unknown.
	IngressQdisc *bool
	// Problem is set when tc could not show the device (missing tool or
	// device, unparsable output); the device is then inconclusive.
	Problem string
	// Window is how far back, from the last sample, a rule's last use
	// ("used N sec") counts as traffic of the observation. It is only read
	// when there is a single sample; 0 means a single sample is never enough.
	Window time.Duration
	// Span is the time from the first sample to the last, as measured; a
	// rule absent from the first sample counts as new only when its age
	// fits it. 0: unknown, Window is used instead (and no rule's age is
	// checked against the span to tell the samples apart: pairTC).
	Span time.Duration
	// Blocks is what is known of the shared blocks the device's rules are
	// on (ParseBlocks; CheckTC reads them when a rule is on one); a rule on
	// a block that is not here is checked only against the highest
	// in_hw_count of the block's other rules.
	Blocks map[uint32]TCBlock
}

type tcDeviceState int

const (
	tcEmpty          tcDeviceState = iota // no rule of the guest pair: neutral
	tcSoftware                            // rules of the pair, not in hardware
	tcOffloaded                           // rules in hardware, hardware counters growing
	tcOffloadedInner                      // the same, but every such rule is a decap rule matched by inner destination only
	tcUnsure                              // contradictory or unreadable
	tcIdle                                // only the one-way flow's return direction, idle (OneWay): neutral, never proof
)

// JudgeTC decides the TC check from the observations of every device
// (representor and tunnel device) and the guests' MACs.
//
// Per device it judges pipelines (pipeline.go): every chain-0 rule is
// followed through the chain its "goto chain N" names (OVS's ct(..),recirc(N))
// to the rule that outputs (mirred); a pipeline is the guest pair's when the
// exact src_mac and dst_mac of its rules together are two different guests
// (post-conntrack rules often match no MAC at all, a firewall's first rule
// only the source), or, for a decap pipeline (enc_* keys), when its inner
// dst_mac alone is a guest, or its src_mac is and dst_mac matches at most
// the multicast bit ("dst_mac 00:00:00:00:00:00/01:00:00:00:00:00": OVN
// without port security). A guest's pipelines to multicast/broadcast
// addresses are exception traffic, listed but not judged; every other
// filter is unrelated and only counted by kind.
//
// Per direction of the pair (judgeDirection): a rule not in hardware
// (not_in_hw, skip_hw) that counted packets is software, also next to an
// in_hw first stage (the NIC misses there and hands every packet to the
// kernel); offloaded needs a pipeline from its chain-0 rule to the rule
// that outputs with every rule in hardware (in_hw / in_hw_count > 0) and
// its hardware packets grown between the first and last sample. Growth is
// counted in packets (TC offload byte counters leave out the Ethernet
// header), read so that what cannot wrap decides: software packets only
// when the software bytes grew, hardware packets as the total's growth
// less the software's (iproute2 before 6.15 prints the hardware packets in
// 32 bits: TCFilter.growth); a rule absent from the first sample counts
// only when its "installed" age fits the sampling span (Span, else
// Window), and a rule replaced under its place since the first sample
// (pairTC) on its own counters. Over two samples an in-hardware rule whose
// software packets exceed SoftwareTolerance of its packets is mixed or
// software, and one on a shared block in fewer devices' hardware than the
// block has ports is mixed (blockPorts). Two samples whose rules are not
// the same device's are refused as a pair (pairTC). A single
// sample counts a rule's packets only when it was last used inside Window
// (tc prints whole seconds rounded down, so "used N sec" counts only when
// N+1 s fits), and then no software packet may sit on a hardware rule. An
// in-hardware first stage whose later stage is not visible, static
// hardware counters, more software than hardware packets, rules without
// in_hw information, or (with one sample) in- and not-in-hardware rules
// side by side are inconclusive; with two samples an idle not_in_hw rule
// beside the pipeline that carried the flow is listed, not judged. Per device, one direction offloaded and the other in
// software is inconclusive ("mixed").
//
// Overall: any inconclusive device makes the check inconclusive; offloaded
// and software devices together are inconclusive; at least one offloaded
// device and otherwise neutral ones are offloaded — but only when some
// device's offloaded pipelines include one with both guests' MACs: a decap
// rule matched by inner destination alone could carry a third host's
// traffic to the guest, so on its own it cannot prove the pair; all
// neutral or software is software. An offloaded verdict must have judged
// both directions of the pair across the devices (pairView in
// pipeline.go): one without a pipeline while a flower rule outside the
// pair's pipelines that admits it counted packets makes it inconclusive.
func JudgeTC(obs []TCObservation, macs []string) (results.Verdict, string) {
	v, why, _ := JudgeTCBasis(obs, macs)
	return v, why
}

// JudgeTCBasis is JudgeTC with the verdict's basis: one line per device
// and direction naming the rules of each pipeline (chain, pref, handle),
// what the direction read as and over which samples.
func JudgeTCBasis(obs []TCObservation, macs []string) (results.Verdict, string, []string) {
	return JudgeTCNetwork(obs, macs, "")
}

// JudgeTCNetwork is JudgeTCBasis on a network whose type is known
// (network.type: "vxlan", "geneve", "vlan", "flat"; "" unknown): a
// pipeline of the pair whose rules name another tunnel (tunnelshape.go:
// Geneve option TLVs, genev_sys_/vxlan_sys_ devices, the types' default
// UDP ports) and that counted packets makes its direction inconclusive;
// one that counted nothing is named and left out.
func JudgeTCNetwork(obs []TCObservation, macs []string, network string) (results.Verdict, string, []string) {
	return JudgeTCFlow(obs, macs, network, nil)
}

// JudgeTCFlow is JudgeTCNetwork for a flow whose measured traffic goes one
// way only (oneWay, nil for both ways: see OneWay): the pair's pipelines of
// its return direction that counted nothing are named idle, as expected,
// not "did not grow"; a device whose only pipelines are those is neutral,
// and a check with nothing else is inconclusive. The return direction's
// pipelines that counted packets are judged as any.
func JudgeTCFlow(obs []TCObservation, macs []string, network string, oneWay *OneWay) (results.Verdict, string, []string) {
	set, err := newMACSet(macs)
	if err != nil {
		return results.VerdictInconclusive, "bad guest MAC: " + err.Error(), nil
	}
	if len(obs) == 0 {
		return results.VerdictInconclusive, "no device was examined", nil
	}
	var reasons, basis []string
	count := map[tcDeviceState]int{}
	var pv pairView // both directions across the devices (pipeline.go)
	for _, o := range obs {
		st, why, b := judgeTCDevice(o, set, network, oneWay, &pv)
		count[st]++
		reasons = append(reasons, o.Device+": "+why)
		if len(b) == 0 {
			b = []string{o.Device + ": " + tcStateName[st]}
		}
		basis = append(basis, b...)
	}
	v, why := tcOverall(count, strings.Join(reasons, "; "))
	v, why = pv.requireBoth(v, why, set)
	return v, why, basis
}

var tcStateName = map[tcDeviceState]string{
	tcEmpty: "no pipeline of the guest pair", tcSoftware: "software", tcOffloaded: "offloaded",
	tcOffloadedInner: "offloaded (decap by inner destination only)", tcUnsure: "inconclusive",
	tcIdle: "only the one-way flow's return direction, idle",
}

func tcOverall(count map[tcDeviceState]int, reason string) (results.Verdict, string) {
	switch {
	case count[tcUnsure] > 0:
		return results.VerdictInconclusive, reason
	case count[tcOffloaded]+count[tcOffloadedInner] > 0 && count[tcSoftware] > 0:
		return results.VerdictInconclusive, "some devices offload the guests' flows and others do not: " + reason
	case count[tcOffloaded] > 0:
		return results.VerdictOffloaded, reason
	case count[tcOffloadedInner] > 0:
		return results.VerdictInconclusive, "only decap rules matched by one inner MAC alone (the destination, or the source with at most the destination's multicast bit) are in hardware, no rule with both guests' MACs (a third host's traffic to the guest, or the guest's to a third, would look the same): " + reason
	case count[tcIdle] > 0:
		return results.VerdictInconclusive, "the guest pair's only pipelines are the one-way flow's return direction, which carried nothing: no pipeline of the measured traffic was seen: " + reason
	default:
		return results.VerdictSoftware, reason
	}
}

// judgeTCDevice follows the pipelines of one device (see pipeline.go):
// every chain-0 rule through the chains its goto names, the pair's
// directions from the MACs of each pipeline's rules together.
func judgeTCDevice(o TCObservation, set macSet, network string, oneWay *OneWay, pv *pairView) (tcDeviceState, string, []string) {
	if o.Problem != "" {
		return tcUnsure, o.Problem, nil
	}
	if len(o.Samples) == 0 {
		return tcUnsure, "no tc sample", nil
	}
	last := o.Samples[len(o.Samples)-1]
	pairing := pairTC(o.Samples[0], last, o.Span)
	if len(o.Samples) > 1 && len(pairing.refused) > 0 {
		return tcUnsure, "the first and the last sample are not samples of the same rules (another device or hypervisor?), refused as a pair: " + capList(pairing.refused), nil
	}
	stages, opts := tcStages(o, pairing)
	opts.tunnel, opts.oneWay, opts.pair = network, oneWay, set
	paths, truncated := buildPaths(stages, set)
	dirs, exc := directions(paths, set, opts)
	pv.add(stages, dirs, exc, func(i int) bool {
		f := last.Filters[i] // OVS's datapath flows are flower rules; ARP carries no IP
		return f.Kind == "flower" && !strings.EqualFold(f.Protocol, "arp")
	})
	inPair := map[*stage]bool{}
	for _, d := range dirs {
		for _, p := range d.paths {
			for _, s := range p.stages {
				inPair[s] = true
			}
		}
	}
	note := ""
	if len(exc) > 0 {
		ex := make([]string, 0, len(exc))
		for _, p := range exc {
			for _, s := range p.stages {
				inPair[s] = true
			}
			ex = append(ex, p.describe())
		}
		sort.Strings(ex)
		note = "; exception traffic (multicast/broadcast), not judged: " + capList(ex)
	}
	unrelated := map[string]int{}
	for i, f := range last.Filters {
		if !inPair[stages[i]] {
			unrelated[f.Kind]++
		}
	}
	if truncated {
		return tcUnsure, fmt.Sprintf("more than %d pipelines through the chains: not judged", maxPaths), nil
	}
	if len(dirs) == 0 {
		if o.IngressQdisc != nil && !*o.IngressQdisc {
			return tcEmpty, "no ingress qdisc: OVS has not attached TC offload to this port" + note, nil
		}
		return tcEmpty, "no rule of the guest pair; " + unrelatedSummary(unrelated) + note, nil
	}
	basis := basisLines(o.Device+": ", dirs, opts.span)
	st, innerOnly, why := combineDirections(dirs)
	why += fmt.Sprintf(" [%s; %d rules on the device", opts.span, len(last.Filters))
	if len(unrelated) > 0 {
		why += ", " + unrelatedSummary(unrelated)
	}
	why += "]" + note
	switch {
	case st == dirUnsure:
		return tcUnsure, why, basis
	case st == dirIdle:
		return tcIdle, why, basis
	case st == dirSoftware:
		return tcSoftware, why, basis
	case innerOnly:
		return tcOffloadedInner, why, basis
	}
	return tcOffloaded, why, basis
}

// tcStages turns the last sample's filters into pipeline stages, in the
// order of the dump, with what each counted: growth since the first sample
// or, with one sample, its packets when it was used inside Window.
//
// A rule absent from the first sample counts its packets as growth only
// when its own age ("installed N sec", rounded down, so N+1 s) fits the
// sampling span (Span, else Window): tc dumps are not atomic, and an older
// rule is one the first dump missed, whose counters say nothing about the
// span.
func tcStages(o TCObservation, pairing tcPairing) ([]*stage, judgeOpts) {
	last := o.Samples[len(o.Samples)-1]
	one := len(o.Samples) == 1
	span := o.Span
	if span <= 0 {
		span = o.Window
	}
	// An idle not_in_hw rule beside the pipeline that carried the flow
	// (a conntrack +trk+new branch, another protocol's rule) counted no
	// packet between two samples: tc's software counters are exact, so it
	// carried none. Seen once, idle only means "not used inside the
	// window", which is weaker: then it spoils the verdict.
	opts := judgeOpts{strictMix: one, oneSample: one}
	switch {
	case one && o.Window <= 0:
		opts.span = "in one sample (one sample proves nothing: no window to judge the rules' last use)"
	case one:
		opts.span = fmt.Sprintf("in one sample, counted only when used inside the window %s", o.Window)
	default:
		opts.span = fmt.Sprintf("over %d samples", len(o.Samples))
		if o.Span > 0 {
			opts.span += " in " + o.Span.String()
		}
	}
	stages := make([]*stage, len(last.Filters))
	for i, f := range last.Filters {
		s := &stage{table: fmt.Sprint(f.Chain), decap: f.isDecap(), output: f.outputs()}
		if f.Kind == "flower" {
			s.setMACs(f.Keys["src_mac"], f.Keys["dst_mac"])
		}
		if c, ok := f.next(); ok {
			s.next, s.nextName = fmt.Sprint(c), fmt.Sprintf("chain %d", c)
		}
		switch {
		case f.NotInHW || f.SkipHW || f.InHWCount == 0:
			s.where = whereSW
		case f.InHW || f.InHWCount > 0:
			s.where = whereHW
		}
		var notes []string
		own := func() {
			c := f.counts()
			s.hw, s.sw = c.hw, c.sw
			if c.wrapped {
				notes = append(notes, wrapNote)
			}
		}
		switch m := pairing.matches[i]; {
		case one:
			used, known := f.lastUsed()
			switch {
			case !known:
				notes = append(notes, "tc printed no last-use time")
			case o.Window <= 0 || used+1 > uint64(o.Window/time.Second):
				notes = append(notes, fmt.Sprintf("last used %d s ago, not inside the window %s", used, o.Window))
			default:
				own()
			}
		case m.prev != nil:
			var note string
			s.hw, s.sw, note = f.growth(*m.prev)
			notes = append(notes, note)
		case m.replaced != "":
			own()
			notes = append(notes, m.replaced)
		default:
			notes = append(notes, m.note)
			age, known := f.installedAgo()
			switch {
			case !known:
				notes = append(notes, "absent from the first sample and tc printed no installed time: not counted as growth")
			case span <= 0 || age+1 > uint64(span/time.Second):
				notes = append(notes, fmt.Sprintf("absent from the first sample but installed %d s ago, before the sampling span %s: a rule the first dump missed, its packets not counted as growth", age, span))
			default:
				own()
				notes = append(notes, fmt.Sprintf("new since the first sample, installed %d s ago", age))
			}
		}
		if !one {
			notes = append(notes, softwareShare(s))
		}
		notes = append(notes, blockPorts(f, last, o.Blocks, s))
		s.note = joinNotes(notes)
		s.tunnel, s.tunnelWhy = tunnelShape(f.tunnelHints(o.Device))
		s.label = f.stageLabel()
		s.id = fmt.Sprintf("chain %d pref %d handle %s", f.Chain, f.Pref, f.Handle)
		stages[i] = s
	}
	return stages, opts
}

// stageLabel names a filter as a pipeline stage.
func (f TCFilter) stageLabel() string {
	l := fmt.Sprintf("chain %d %s %s", f.Chain, f.describe(), tcHWState(f))
	if c, ok := f.next(); ok {
		l += fmt.Sprintf(" goto chain %d", c)
	}
	for _, a := range f.Actions {
		if tk := a.Tunnel; tk != nil && tk.Mode == "set" {
			l += " tunnel_key set"
			if tk.KeyID != "" {
				l += " key_id " + tk.KeyID
			}
			if tk.DstPort != 0 {
				l += fmt.Sprintf(" dst_port %d", tk.DstPort)
			}
			if tk.GeneveOpts != "" {
				l += " geneve_opts " + tk.GeneveOpts
			}
			break
		}
	}
	if f.outputs() {
		for _, a := range f.Actions {
			if a.Kind == "mirred" && a.ToDev != "" {
				l += " mirred to " + a.ToDev
				break
			}
		}
	}
	return l
}

// tcHWState is a filter's hardware flags as tc prints them.
func tcHWState(f TCFilter) string {
	switch {
	case f.NotInHW || f.SkipHW || f.InHWCount == 0:
		return "not_in_hw"
	case f.InHW || f.InHWCount > 0:
		return "in_hw"
	}
	return "(no in_hw information)"
}

// unrelatedSummary counts filters by kind: "3 unrelated rules (2 flower, 1
// u32)".
func unrelatedSummary(byKind map[string]int) string {
	total := 0
	kinds := make([]string, 0, len(byKind))
	for k, n := range byKind {
		total += n
		kinds = append(kinds, k)
	}
	if total == 0 {
		return "no filter on the device"
	}
	sort.Strings(kinds)
	parts := make([]string, 0, len(kinds))
	for _, k := range kinds {
		name := k
		if name == "" {
			name = "unknown kind"
		}
		parts = append(parts, fmt.Sprintf("%d %s", byKind[k], name))
	}
	noun := "rules"
	if total == 1 {
		noun = "rule"
	}
	return fmt.Sprintf("%d unrelated %s (%s)", total, noun, strings.Join(parts, ", "))
}

func sub(a, b uint64) uint64 {
	if a > b {
		return a - b
	}
	return 0
}

// SoftwareTolerance is the share of an in-hardware rule's packets over the
// sampling span that may have gone through the kernel's copy of it (tc's
// software counters, exact) without making the rule software: 0.1 %, a few
// stragglers of a flow of millions. Above it the rule is mixed (hardware
// packets grew too: some eswitch or path misses it, e.g. one port of a
// VF-LAG bond whose eswitch lacks the rule) or software (no hardware growth),
// whatever the hardware growth beside it; every reason states the share and
// this tolerance. A single sample keeps its stricter rule: no software
// packet at all.
const SoftwareTolerance = 0.001

// softwareShare applies SoftwareTolerance to an in-hardware stage seen over
// two samples: it turns the stage mixed (wherePartial) or software and
// says why, or names a share within the tolerance.
func softwareShare(s *stage) string {
	if s.where != whereHW || s.sw == 0 {
		return ""
	}
	share := float64(s.sw) / (float64(s.hw) + float64(s.sw))
	tol := fmt.Sprintf("the tolerance of %.1f %%", 100*SoftwareTolerance)
	if share <= SoftwareTolerance {
		return fmt.Sprintf("software packets %d of %d, within %s", s.sw, s.hw+s.sw, tol)
	}
	what := fmt.Sprintf("software packets %.1f %% of the rule's packets in the span, above %s", 100*share, tol)
	if s.sw > s.hw {
		what = "software packets grew more than hardware packets: " + what
	}
	if s.hw == 0 {
		s.where = whereSW
		return what + ": the kernel forwarded them all"
	}
	s.where = wherePartial
	return "mixed: " + what + ": the NIC missed them (an eswitch or port without the rule?)"
}

// blockPorts checks an in-hardware rule on a shared block against the
// block's ports: in_hw_count is how many of the block's devices hold the
// rule in hardware, and fewer than its ports means traffic arriving on the
// others is forwarded by the kernel (half a VF-LAG bond in hardware). The
// ports come from known (TCObservation.Blocks), else only another rule of the same
// block in more devices' hardware bounds them. A rule short of them makes
// its stage mixed (wherePartial).
func blockPorts(f TCFilter, d TCDump, known map[uint32]TCBlock, s *stage) string {
	if f.Block == 0 || f.InHWCount <= 0 {
		return ""
	}
	b, ok := known[f.Block]
	need, from := len(b.Ports), b.From
	if ok {
		from = fmt.Sprintf("%s: %s", from, strings.Join(b.Ports, ", "))
	}
	for _, g := range d.Filters {
		if g.Block == f.Block && g.InHWCount > need {
			need, from = g.InHWCount, fmt.Sprintf("another rule of the block, %s, is in_hw_count %d", g.describe(), g.InHWCount)
		}
	}
	switch {
	case f.InHWCount >= need && !ok:
		return fmt.Sprintf("the ports of block %d are not known: its in_hw_count %d is not checked against them", f.Block, f.InHWCount)
	case f.InHWCount >= need:
		return ""
	}
	if s.where == whereHW {
		s.where = wherePartial
	}
	return fmt.Sprintf("in_hw_count %d, but block %d has %d ports (%s): the rule is not in every port's hardware, and what arrives on the others is forwarded by the kernel", f.InHWCount, f.Block, need, from)
}

// joinNotes joins the notes that say something.
func joinNotes(notes []string) string {
	return strings.Join(slices.DeleteFunc(notes, func(n string) bool { return n == "" }), "; ")
}
