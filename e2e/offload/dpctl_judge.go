package offload

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// dpctlRole is what a flow is to the guest pair.
type dpctlRole int

const (
	dpctlUnrelated dpctlRole = iota
	dpctlPair                // IP, eth src and dst two different guests
	dpctlException           // IP, from a guest to a multicast/broadcast address
)

// role places a flow: an IP flow whose eth src and dst are two different
// guest MACs is the pair's; an IP flow from a guest to a group address
// (multicast, broadcast) is exception traffic; the rest is unrelated. An
// empty set means any MAC.
func (f DpctlFlow) role(set macSet) dpctlRole {
	if !f.isIP() {
		return dpctlUnrelated
	}
	src, okSrc := fullMaskMAC(f.EthSrc)
	dst, okDst := fullMaskMAC(f.EthDst)
	if !okSrc || !okDst || isGroupMAC(src) || !set.has(src) {
		return dpctlUnrelated
	}
	switch {
	case isGroupMAC(dst):
		return dpctlException
	case dst != src && set.has(dst):
		return dpctlPair
	}
	return dpctlUnrelated
}

// usedAgo reads the "used:" field: "0.260s" is 260 ms ago; "never", a
// negative or unreadable value is no use.
func (f DpctlFlow) usedAgo() (time.Duration, bool) {
	v, ok := strings.CutSuffix(f.Used, "s")
	if !ok {
		return 0, false
	}
	sec, err := strconv.ParseFloat(v, 64)
	if err != nil || !(sec >= 0 && sec < 1e9) { // also rejects NaN
		return 0, false
	}
	return time.Duration(sec * float64(time.Second)), true
}

// Where a flow is forwarded, from OVS's fields (lib/dpctl.c
// format_dpif_flow, lib/netdev-offload-tc.c parse_tc_flower_to_attrs).
const (
	flowHW         = "yes"         // offloaded:yes: OVS's claim of hardware
	flowPartial    = "partial"     // offloaded:partial: the software datapath still forwards
	flowTCSoftware = "tc-software" // dp:tc without offloaded:yes: a TC rule in software
	flowSoftware   = "no"          // dp:ovs, dp:dpdk, offloaded:no, or no fields
)

// flowHardware tells where a flow is forwarded. OVS prints offloaded:yes
// when tc reports the rule in hardware and also when tc reports no offload
// state, so "yes" is OVS's own claim; dp:tc without offloaded:yes is a TC
// rule tc reported not in hardware (software). A flow with neither field is
// hardware only when it came from a type=offloaded dump (the filter OVS
// applied is the same claim).
func flowHardware(f DpctlFlow, offloadedDump bool) string {
	switch {
	case f.Offloaded == "yes":
		return flowHW
	case f.Offloaded == "partial":
		return flowPartial
	case f.Offloaded == "no":
		return flowSoftware
	case f.DP == "tc":
		return flowTCSoftware
	case f.DP != "":
		return flowSoftware
	case offloadedDump:
		return flowHW
	}
	return flowSoftware
}

// DpctlSamples is what the dpctl check saw: dumps in time order.
type DpctlSamples struct {
	// Offloaded are samples of `dpctl/dump-flows -m type=offloaded`, oldest first.
	Offloaded [][]DpctlFlow
	// All are optional samples of `dpctl/dump-flows -m` (every flow), oldest
	// first: software flows between the guests whose counters grow there
	// contradict an offloaded verdict and explain a software one.
	All [][]DpctlFlow
	// OffloadedIsTyped says the Offloaded samples came from a type=offloaded
	// dump, so flows without offloaded:/dp: fields are hardware flows.
	OffloadedIsTyped bool
	// Window is how far back, from the last sample, a flow's "used:" counts
	// as traffic of the observation. It is only read when the hardware
	// flows were seen in a single sample; 0 means one sample is never enough.
	Window time.Duration
}

// dpctlPairFlow is a flow of the guest pair in the last sample of a series.
type dpctlPairFlow struct {
	f        DpctlFlow
	where    string // flowHardware
	growth   uint64 // packets since the series' first sample (measured) or all packets
	measured bool   // the series had two or more samples
}

// keyedFlows gives every flow a key stable across samples: its ufid (or
// match) plus how many flows with the same key came before it.
func keyedFlows(flows []DpctlFlow) ([]string, map[string]DpctlFlow) {
	keys := make([]string, len(flows))
	byKey := make(map[string]DpctlFlow, len(flows))
	seen := map[string]int{}
	for i, f := range flows {
		k := f.key()
		keys[i] = fmt.Sprintf("%s#%d", k, seen[k])
		seen[k]++
		byKey[keys[i]] = f
	}
	return keys, byKey
}

// JudgeDpctl decides the dpctl check from the IP flows of the guest pair
// (eth src and dst two different guest MACs) in the last sample of the
// offloaded dumps and of the full dumps (a flow in both counts once, as seen
// in the offloaded dumps). A guest's flows to multicast/broadcast addresses
// are exception traffic: listed, not judged. Growth is counted in packets
// only (TC offload byte counters leave out the Ethernet header).
//
// Offloaded: flows OVS claims offloaded (offloaded:yes, or a type=offloaded
// dump) whose packets grew between the first and last sample, with no TC
// software or other software flow of the pair growing; with a single sample,
// instead, a claimed flow with packets whose used: is inside Window. This is
// OVS's claim only; tc's in_hw is the ground truth. Software: no claimed
// flow, and software flows (dp:ovs, or dp:tc without offloaded:yes) of the
// pair, or no flow at all when only offloaded dumps were taken. Inconclusive:
// partial offload; claimed flows next to growing TC-software flows ("mixed:",
// one direction in hardware and the other not); claimed flows that did not
// grow or, seen once, were not used inside Window; claimed flows next to
// growing software flows; or — when full dumps were sampled — no flow of the
// pair anywhere (the traffic was not flowing, so an empty offloaded dump
// proves nothing).
func JudgeDpctl(s DpctlSamples, macs []string) (results.Verdict, string) {
	set, err := newMACSet(macs)
	if err != nil {
		return results.VerdictInconclusive, "bad guest MAC: " + err.Error()
	}
	if len(s.Offloaded) == 0 {
		return results.VerdictInconclusive, "no dpctl sample"
	}
	var flows []dpctlPairFlow
	var exceptions []DpctlFlow
	seen := map[string]bool{}
	collect := func(series [][]DpctlFlow, typed bool) {
		if len(series) == 0 {
			return
		}
		_, first := keyedFlows(series[0])
		lastFlows := series[len(series)-1]
		keys, _ := keyedFlows(lastFlows)
		for i, f := range lastFlows {
			if seen[keys[i]] {
				continue
			}
			switch f.role(set) {
			case dpctlException:
				seen[keys[i]] = true
				exceptions = append(exceptions, f)
			case dpctlPair:
				seen[keys[i]] = true
				pf := dpctlPairFlow{f: f, where: flowHardware(f, typed), growth: f.Packets}
				if len(series) > 1 {
					pf.measured = true
					pf.growth = sub(f.Packets, first[keys[i]].Packets)
				}
				flows = append(flows, pf)
			}
		}
	}
	collect(s.Offloaded, s.OffloadedIsTyped)
	collect(s.All, false)

	by := map[string][]dpctlPairFlow{}
	for _, pf := range flows {
		by[pf.where] = append(by[pf.where], pf)
	}
	hw, partial, tcSW := by[flowHW], by[flowPartial], by[flowTCSoftware]
	sw := append(append([]dpctlPairFlow{}, tcSW...), by[flowSoftware]...)
	growth := func(fs []dpctlPairFlow) (sum uint64) {
		for _, pf := range fs {
			sum += pf.growth
		}
		return sum
	}
	what := fmt.Sprintf("IP flows between %s", set)
	note := ""
	if len(exceptions) > 0 {
		note = "; exception traffic (multicast/broadcast), not judged: " + describeFlows(exceptions)
	}
	switch {
	case len(partial) > 0:
		return results.VerdictInconclusive, fmt.Sprintf("%d %s only partially offloaded (the software datapath still forwards them): %s", len(partial), what, describePairFlows(partial)) + note
	case len(hw) == 0 && len(sw) > 0:
		var packets uint64
		for _, pf := range sw {
			packets += pf.f.Packets
		}
		tcNote := ""
		if len(tcSW) > 0 {
			tcNote = fmt.Sprintf(", %d of them TC rules in software (dp:tc without offloaded:yes)", len(tcSW))
		}
		return results.VerdictSoftware, fmt.Sprintf("no offloaded %s; %d software flows (%d packets)%s: %s", what, len(sw), packets, tcNote, describePairFlows(sw)) + note
	case len(hw) == 0 && len(s.All) > 0:
		// The full dumps were taken and hold no flow between the guests
		// either: nothing carried the guests' traffic while we looked (the
		// flow did not run), which proves neither path.
		return results.VerdictInconclusive, fmt.Sprintf("no %s in the offloaded dump nor in the full dump (%d and %d flows): the guests' traffic was not flowing", what, len(s.Offloaded[len(s.Offloaded)-1]), len(s.All[len(s.All)-1])) + note
	case len(hw) == 0:
		return results.VerdictSoftware, fmt.Sprintf("no offloaded %s (%d flows in the offloaded dump)", what, len(s.Offloaded[len(s.Offloaded)-1])) + note
	}
	var growingTC []dpctlPairFlow
	for _, pf := range tcSW {
		if pf.growth > 0 {
			growingTC = append(growingTC, pf)
		}
	}
	if len(growingTC) > 0 {
		return results.VerdictInconclusive, fmt.Sprintf("mixed: %s in TC software (dp:tc without offloaded:yes, +%d packets), while OVS claims offloaded:yes for %s", describePairFlows(growingTC), growth(growingTC), describePairFlows(hw)) + note
	}
	const claim = "tc's in_hw is the ground truth (OVS also says yes when tc reports no offload state)"
	measured := false
	for _, pf := range hw {
		measured = measured || pf.measured
	}
	var how string
	if measured {
		var delta uint64
		for _, pf := range hw {
			if pf.measured {
				delta += pf.growth
			}
		}
		if delta == 0 {
			return results.VerdictInconclusive, fmt.Sprintf("%d offloaded %s but their packet counters did not grow over %d samples (is the flow running?): %s", len(hw), what, len(s.Offloaded), describePairFlows(hw)) + note
		}
		how = fmt.Sprintf("packets +%d over %d samples", delta, len(s.Offloaded))
	} else {
		ok, why := dpctlOneSample(hw, s.Window)
		if !ok {
			return results.VerdictInconclusive, fmt.Sprintf("%d offloaded %s %s: %s", len(hw), what, why, describePairFlows(hw)) + note
		}
		how = why
	}
	if g := growth(by[flowSoftware]); g > 0 {
		return results.VerdictInconclusive, fmt.Sprintf("%d offloaded %s, but software flows between the guests also counted +%d packets: %s", len(hw), what, g, describePairFlows(sw)) + note
	}
	return results.VerdictOffloaded, fmt.Sprintf("%d %s offloaded by OVS's own claim (offloaded:yes), %s; %s: %s", len(hw), what, how, claim, describePairFlows(hw)) + note
}

// dpctlOneSample judges claimed flows seen in one sample only: counters
// seen once may be left over from earlier traffic, so it takes a flow with
// packets whose used: is inside the window.
func dpctlOneSample(hw []dpctlPairFlow, window time.Duration) (bool, string) {
	if window <= 0 {
		return false, "(one sample proves nothing: no window to judge the flows' used: time)"
	}
	newest, found := time.Duration(0), false
	for _, pf := range hw {
		if pf.f.Packets == 0 {
			continue
		}
		if ago, ok := pf.f.usedAgo(); ok && (!found || ago < newest) {
			newest, found = ago, true
		}
	}
	switch {
	case !found:
		return false, "(one sample, no flow with packets and a used: time)"
	case newest > window:
		return false, fmt.Sprintf("(one sample, last used %.3fs ago, not inside the window %s)", newest.Seconds(), window)
	}
	return true, fmt.Sprintf("one sample, used %.3fs ago, inside the window %s", newest.Seconds(), window)
}

func describePairFlows(fs []dpctlPairFlow) string {
	flows := make([]DpctlFlow, len(fs))
	for i, pf := range fs {
		flows[i] = pf.f
	}
	return describeFlows(flows)
}

func describeFlows(fs []DpctlFlow) string {
	d := make([]string, 0, len(fs))
	for _, f := range fs {
		d = append(d, f.describe())
	}
	sort.Strings(d)
	if len(d) > 6 {
		d = append(d[:6], fmt.Sprintf("... %d more", len(d)-6))
	}
	return strings.Join(d, "; ")
}
