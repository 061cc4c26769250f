package offload

import (
	"fmt"
	"net"
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
	for _, k := range []string{"src_mac", "dst_mac", "eth_type", "ip_proto", "enc_key_id", "enc_src_ip", "enc_dst_ip"} {
		if v, ok := f.Keys[k]; ok {
			keys = append(keys, k+" "+v)
		}
	}
	return fmt.Sprintf("%s pref %d handle %s [%s]", f.Kind, f.Pref, f.Handle, strings.Join(keys, ", "))
}

// tcRole is what a filter is to the guest pair.
type tcRole int

const (
	tcUnrelated tcRole = iota // not the pair's traffic
	tcPair                    // src_mac and dst_mac are two different guests
	tcPairInner               // decap rule: inner dst_mac is a guest, no src_mac
	tcException               // from a guest to a multicast/broadcast address
)

// role places a filter. Only flower rules with exact MAC keys count: a rule
// is the pair's when its src_mac and dst_mac are two different guests. A
// decap rule (enc_* keys: it matches the tunnel, typically on the VXLAN
// device) may match the inner dst_mac alone; with no src_mac and a guest as
// dst_mac it is the pair's "by inner destination only". A rule from a guest
// to a group address (multicast, broadcast) is exception traffic. Anything
// else, a rule with one MAC key included, is unrelated. An empty set means
// any MAC.
func (f TCFilter) role(set macSet) tcRole {
	if f.Kind != "flower" {
		return tcUnrelated
	}
	dstKey, hasDst := f.Keys["dst_mac"]
	dst, ok := fullMaskMAC(dstKey)
	if !hasDst || !ok {
		return tcUnrelated
	}
	srcKey, hasSrc := f.Keys["src_mac"]
	if !hasSrc {
		if f.isDecap() && !isGroupMAC(dst) && set.has(dst) {
			return tcPairInner
		}
		return tcUnrelated
	}
	src, ok := fullMaskMAC(srcKey)
	if !ok || isGroupMAC(src) || !set.has(src) {
		return tcUnrelated
	}
	switch {
	case isGroupMAC(dst):
		return tcException
	case dst != src && set.has(dst):
		return tcPair
	}
	return tcUnrelated
}

// isDecap reports whether the rule matches tunnel metadata (enc_key_id,
// enc_dst_ip, enc_dst_port, ...), i.e. decapsulates.
func (f TCFilter) isDecap() bool {
	for k := range f.Keys {
		if strings.HasPrefix(k, "enc_") {
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
}

type tcDeviceState int

const (
	tcEmpty          tcDeviceState = iota // no rule of the guest pair: neutral
	tcSoftware                            // rules of the pair, not in hardware
	tcOffloaded                           // rules in hardware, hardware counters growing
	tcOffloadedInner                      // the same, but every such rule is a decap rule matched by inner destination only
	tcUnsure                              // contradictory or unreadable
)

// JudgeTC decides the TC check from the observations of every device
// (representor and VXLAN device) and the guests' MACs.
//
// Only rules of the guest pair are judged (see TCFilter.role: src_mac and
// dst_mac both guests, or a decap rule whose inner dst_mac is a guest and
// that has no src_mac); a guest's multicast/broadcast rules are exception
// traffic, listed but not judged; every other filter is unrelated and only
// counted by kind.
//
// Per device: a tool problem is inconclusive; no rule of the pair is neutral
// (an absent ingress qdisc means OVS never attached TC offload to the port);
// pair rules all not in hardware (not_in_hw, skip_hw) are software; pair
// rules all in hardware (in_hw / in_hw_count > 0) are offloaded when their
// hardware packet counters grew between the first and last sample. Growth is
// counted in packets only: TC offload byte counters leave out the Ethernet
// header. A single sample is offloaded only when a rule with hardware
// packets and no software packets was last used inside Window (tc prints
// whole seconds rounded down, so "used N sec" counts only when N+1 s fits in
// the window). Static hardware counters, more software than hardware
// packets, rules without in_hw information, or a mix of in- and
// not-in-hardware rules are inconclusive.
//
// Overall: any inconclusive device makes the check inconclusive; offloaded
// and software devices together are inconclusive; at least one offloaded
// device and otherwise neutral ones are offloaded — but only when some
// device's offloaded rules include one with both guests' MACs: a decap rule
// matched by inner destination alone could carry a third host's traffic to
// the guest, so on its own it cannot prove the pair; all neutral or software
// is software.
func JudgeTC(obs []TCObservation, macs []string) (results.Verdict, string) {
	set, err := newMACSet(macs)
	if err != nil {
		return results.VerdictInconclusive, "bad guest MAC: " + err.Error()
	}
	if len(obs) == 0 {
		return results.VerdictInconclusive, "no device was examined"
	}
	var reasons []string
	count := map[tcDeviceState]int{}
	for _, o := range obs {
		st, why := judgeTCDevice(o, set)
		count[st]++
		reasons = append(reasons, o.Device+": "+why)
	}
	reason := strings.Join(reasons, "; ")
	switch {
	case count[tcUnsure] > 0:
		return results.VerdictInconclusive, reason
	case count[tcOffloaded]+count[tcOffloadedInner] > 0 && count[tcSoftware] > 0:
		return results.VerdictInconclusive, "some devices offload the guests' flows and others do not: " + reason
	case count[tcOffloaded] > 0:
		return results.VerdictOffloaded, reason
	case count[tcOffloadedInner] > 0:
		return results.VerdictInconclusive, "only decap rules matched by the inner destination alone are in hardware, no rule with both guests' MACs (a third host's traffic to the guest would look the same): " + reason
	default:
		return results.VerdictSoftware, reason
	}
}

// tcRule is a rule of the guest pair in the last sample.
type tcRule struct {
	key   string
	f     TCFilter
	inner bool // matched by inner destination only
}

func (r tcRule) describe() string {
	if r.inner {
		return r.f.describe() + " (by inner destination only: decap rule without src_mac)"
	}
	return r.f.describe()
}

func describeTCRules(rs []tcRule) string {
	s := make([]string, 0, len(rs))
	for _, r := range rs {
		s = append(s, r.describe())
	}
	sort.Strings(s)
	return strings.Join(s, "; ")
}

func judgeTCDevice(o TCObservation, set macSet) (tcDeviceState, string) {
	if o.Problem != "" {
		return tcUnsure, o.Problem
	}
	if len(o.Samples) == 0 {
		return tcUnsure, "no tc sample"
	}
	lastKeys, _ := keyedFilters(o.Samples[len(o.Samples)-1])
	_, prev := keyedFilters(o.Samples[0])
	last := o.Samples[len(o.Samples)-1]
	var pair []tcRule
	var exceptions []string
	unrelated := map[string]int{}
	for i, f := range last.Filters {
		switch f.role(set) {
		case tcPair:
			pair = append(pair, tcRule{key: lastKeys[i], f: f})
		case tcPairInner:
			pair = append(pair, tcRule{key: lastKeys[i], f: f, inner: true})
		case tcException:
			exceptions = append(exceptions, f.describe()+" "+tcHWState(f))
		default:
			unrelated[f.Kind]++
		}
	}
	note := ""
	if len(exceptions) > 0 {
		sort.Strings(exceptions)
		note = "; exception traffic (multicast/broadcast), not judged: " + strings.Join(exceptions, "; ")
	}
	if len(pair) == 0 {
		if o.IngressQdisc != nil && !*o.IngressQdisc {
			return tcEmpty, "no ingress qdisc: OVS has not attached TC offload to this port" + note
		}
		return tcEmpty, "no rule of the guest pair; " + unrelatedSummary(unrelated) + note
	}

	var inHW, notInHW, unknown []tcRule
	for _, r := range pair {
		switch f := r.f; {
		case f.NotInHW || f.SkipHW || f.InHWCount == 0:
			notInHW = append(notInHW, r)
		case f.InHW || f.InHWCount > 0:
			inHW = append(inHW, r)
		default:
			unknown = append(unknown, r)
		}
	}
	switch {
	case len(unknown) > 0:
		return tcUnsure, fmt.Sprintf("%d matching flower rules without in_hw/not_in_hw information (tc or kernel too old?): %s", len(unknown), describeTCRules(unknown)) + note
	case len(inHW) > 0 && len(notInHW) > 0:
		return tcUnsure, fmt.Sprintf("mixed: %d matching rules in hardware, %d not in hardware: %s", len(inHW), len(notInHW), describeTCRules(notInHW)) + note
	case len(notInHW) > 0:
		return tcSoftware, fmt.Sprintf("%d matching flower rules, none in hardware (not_in_hw/skip_hw): %s", len(notInHW), describeTCRules(notInHW)) + note
	}

	desc := describeTCRules(inHW)
	// offloaded is this device's verdict when its rules prove offload: a full
	// pair rule among them, or only inner-destination decap rules.
	offloaded := tcOffloadedInner
	for _, r := range inHW {
		if !r.inner {
			offloaded = tcOffloaded
		}
	}
	if len(o.Samples) == 1 {
		st, why := judgeTCOneSample(inHW, o.Window)
		if st == tcOffloaded {
			st = offloaded
		}
		return st, why + ": " + desc + note
	}
	// Packets only: bytes of offloaded rules are not comparable (no L2 header).
	var hwDelta, swDelta, hwTotal uint64
	for _, r := range inHW {
		p := prev[r.key] // zero value when the rule appeared after the first sample
		hwTotal += r.f.HWPackets()
		hwDelta += sub(r.f.HWPackets(), p.HWPackets())
		swDelta += sub(r.f.SWPackets(), p.SWPackets())
	}
	switch {
	case hwDelta == 0:
		return tcUnsure, fmt.Sprintf("%d matching rules in hardware but hardware packet counters did not grow over %d samples (total %d): %s", len(inHW), len(o.Samples), hwTotal, desc) + note
	case swDelta > hwDelta:
		return tcUnsure, fmt.Sprintf("%d matching rules in hardware, but software packets grew more (+%d) than hardware packets (+%d): %s", len(inHW), swDelta, hwDelta, desc) + note
	}
	return offloaded, fmt.Sprintf("%d matching rules in hardware, hardware packets +%d over %d samples (software +%d): %s", len(inHW), hwDelta, len(o.Samples), swDelta, desc) + note
}

// judgeTCOneSample judges in-hardware rules seen once. Counters seen once
// may be left over from earlier traffic, so the sample counts only when a
// rule that has hardware packets and no software packets was last used
// inside the window: with no software packets, that use was the hardware.
func judgeTCOneSample(inHW []tcRule, window time.Duration) (tcDeviceState, string) {
	var hw, sw, newest uint64
	known := false
	for _, r := range inHW {
		hw += r.f.HWPackets()
		sw += r.f.SWPackets()
		if r.f.HWPackets() == 0 {
			continue
		}
		if sec, ok := r.f.lastUsed(); ok && (!known || sec < newest) {
			newest, known = sec, true
		}
	}
	head := fmt.Sprintf("%d matching rules in hardware, %d hardware packets", len(inHW), hw)
	// "used N sec" is rounded down: the use was less than N+1 s ago, which
	// must fit in the window.
	recent := known && window > 0 && newest < uint64(window/time.Second)
	switch {
	case hw == 0:
		return tcUnsure, head + ", one sample and no hardware packets"
	case window <= 0:
		return tcUnsure, head + " (one sample proves nothing: no window to judge the rules' last use)"
	case sw > 0:
		return tcUnsure, fmt.Sprintf("%s and %d software packets (one sample: a recent use may have been in software)", head, sw)
	case !known:
		return tcUnsure, head + " (one sample and tc printed no last-use time)"
	case !recent:
		return tcUnsure, fmt.Sprintf("%s, last used %d s ago, not inside the window %s (one sample)", head, newest, window)
	}
	return tcOffloaded, fmt.Sprintf("%s, last used less than %d s ago, inside the window %s (one sample, no software packets)", head, newest+1, window)
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
