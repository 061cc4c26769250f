package offload

import (
	"fmt"
	"strings"

	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// The fragment profile (issue 38 item 5): UDP datagrams above the path MTU
// reach the datapath as IP fragments. OVS matches them with
// ipv4(..,frag=first) (the first fragment, which still carries the UDP
// header) and ipv4(..,frag=later) (the rest, no L4 header); in tc flower
// these are `ip_flags frag/firstfrag` and `ip_flags frag/nofirstfrag`, and
// an unfragmented packet is `ip_flags nofrag` (OVS lib/netdev-offload-tc.c,
// iproute2 tc/f_flower.c flower_print_ip_flags). mlx5 refuses both
// fragment matches ("Match on frag first/later is not supported"), so these
// flows stay in software by the NIC's design: a verdict that failed the
// node for them would be wrong, and so would one that read "offloaded" off
// the unfragmented flows of the same window alone. The judges below split
// the pair's flows by their fragment match: the fragment flows are labelled
// (FragmentLabel) and never judged, the others are judged as usual.
//
// Recorded on a private OVS 3.1 (userspace datapath) by
// testdata/record-aging-frag.sh:
//
//	...,eth(src=02:00:c6:12:27:01,dst=02:00:c6:12:27:02),eth_type(0x0800),
//	ipv4(src=198.18.39.1/0.0.0.0,dst=198.18.39.2/0.0.0.0,proto=17,tos=0/0,ttl=64/0,frag=first),
//	udp(src=40001,dst=5201), packets:1883, ..., dp:ovs, actions:o38f-pb
//	...,ipv4(src=198.18.39.1/0.0.0.0,dst=198.18.39.2/0.0.0.0,proto=17,tos=0/0,ttl=64/0,frag=later),
//	packets:3767, ..., dp:ovs, actions:o38f-pb

// FragmentLabel is what the fragment profile says of the fragment flows
// when they are in software, as the NIC's design wants them.
const FragmentLabel = "fragmented traffic: software by the NIC's design (mlx5 cannot match frag first/later)"

// Fragment matches of a flow or rule.
const (
	FragNo    = "no"    // matches unfragmented packets only (frag=no, ip_flags nofrag)
	FragFirst = "first" // the first fragment (frag=first, ip_flags frag/firstfrag)
	FragLater = "later" // later fragments (frag=later, ip_flags frag/nofirstfrag)
	FragAny   = "any"   // any fragment, first or later (ip_flags frag)
)

// IsFragmentMatch reports whether a fragment match (Frag's value) selects
// IP fragments only: the matches mlx5 cannot offload.
func IsFragmentMatch(frag string) bool {
	return frag == FragFirst || frag == FragLater || frag == FragAny
}

// Frag is the flow's IP fragment match: FragNo, FragFirst, FragLater, ""
// when it matches none (no ipv4()/ipv6() key, or frag wildcarded), or the
// value as printed when it is none of these. The match may sit under VLAN
// tags (encap(..ipv4(..)..)).
func (f DpctlFlow) Frag() string {
	for _, m := range f.l3Fields() {
		if m.Key != "ipv4" && m.Key != "ipv6" {
			continue
		}
		for _, kv := range strings.Split(m.Value, ",") {
			k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
			if !ok || k != "frag" {
				continue
			}
			// A masked match prints value/mask; OVS prints frag exactly or
			// not at all, a mask is kept as printed.
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// l3Fields are the flow's match fields under its VLAN tags (innermost).
func (f DpctlFlow) l3Fields() []MatchField {
	fields, _, _ := f.innermost()
	return fields
}

// Frag is the rule's flower ip_flags as a fragment match: "nofrag" is
// FragNo, "frag/firstfrag" FragFirst, "frag/nofirstfrag" FragLater,
// "frag" FragAny; "" without ip_flags; other values as printed.
func (f TCFilter) Frag() string {
	v, ok := f.Keys["ip_flags"]
	if !ok {
		return ""
	}
	frag, first := "", ""
	for _, fl := range strings.Split(strings.TrimSpace(v), "/") {
		switch fl {
		case "frag", "nofrag":
			frag = fl
		case "firstfrag", "nofirstfrag":
			first = fl
		}
	}
	switch {
	case frag == "nofrag":
		return FragNo
	case frag == "frag" && first == "firstfrag":
		return FragFirst
	case frag == "frag" && first == "nofirstfrag":
		return FragLater
	case frag == "frag" && first == "":
		return FragAny
	}
	return strings.TrimSpace(v)
}

// FragmentFinding is the fragment profile's judgement of one check (dpctl
// or tc) on one hypervisor.
type FragmentFinding struct {
	// Fragmented: a flow (rule) of the pair matching fragments only counted
	// packets in the window.
	Fragmented bool `json:"fragmented"`
	// FragFlows are the pair's fragment flows (rules) in the last sample,
	// FragPackets what they counted in the window.
	FragFlows   int    `json:"frag_flows"`
	FragPackets uint64 `json:"frag_packets"`
	// FragInHardware are the fragment flows that counted packets and are
	// claimed in hardware (offloaded:yes, in_hw): not what mlx5 can do.
	FragInHardware int `json:"frag_in_hardware"`
	// Labelled: the fragment flows are in software and carry FragmentLabel.
	Labelled bool `json:"labelled"`
	// NoRules (tc only): no sample of the window held a tc rule at all on
	// the devices read, so tc could tell nothing of fragments (a datapath
	// that installs none: the userspace one, hardware offload off; or rules
	// the dump did not reach); said instead of "the datagrams did not
	// fragment", which the dpctl check decides. Summary only: the verdict
	// on the rest is JudgeTCFlow's, which judges an empty dump as it always has.
	NoRules bool `json:"no_rules,omitempty"`
	// Verdict and Reason are the pair's other flows (frag=no, or no
	// fragment match), judged as usual; inconclusive when the fragment
	// flows contradict the NIC's design.
	Verdict results.Verdict `json:"verdict"`
	Reason  string          `json:"reason"`
}

// Summary is the finding in one sentence: the label (or why none), then
// the verdict on the unfragmented flows.
func (f FragmentFinding) Summary() string {
	head := "not labelled"
	switch {
	case f.Labelled:
		head = FragmentLabel
	case !f.Fragmented && f.NoRules:
		head = "tc held no rule in the window on the devices read (a datapath that installs none, or rules held elsewhere: a shared block, the tunnel device): nothing tells fragments from the rest there; the dpctl check decides whether they fragmented; not labelled"
	case !f.Fragmented:
		head = "the datagrams did not fragment: no flow of the guest pair matching frag=first/later counted packets (is the path MTU larger than the datagram?); not labelled"
	case f.FragInHardware > 0:
		head = fmt.Sprintf("%d fragment flows of the pair claimed in hardware: mlx5 cannot match frag first/later, so the claim contradicts the NIC's design; not labelled", f.FragInHardware)
	}
	return fmt.Sprintf("%s; %d fragment flows, +%d packets; unfragmented flows: %s: %s", head, f.FragFlows, f.FragPackets, f.Verdict, f.Reason)
}

// splitFragments splits every sample of a series into the pair's flows
// matching fragments and the rest.
//
// A fragment flow that matches no exact MAC pair (a stage after conntrack,
// eth wildcarded) is left out of both: it is no proof of the pair's
// fragments, and in the rest it would be a stage that admits the pair's
// directions and counted packets, which makes a direction inconclusive.
func splitFragments(series [][]DpctlFlow, set macSet) (frag, rest [][]DpctlFlow) {
	for _, sample := range series {
		var fs, rs []DpctlFlow
		for _, f := range sample {
			switch fragRole(f.Frag(), f.EthSrc, f.EthDst, set) {
			case fragOfPair:
				fs = append(fs, f)
			case fragOther:
				rs = append(rs, f)
			}
		}
		frag, rest = append(frag, fs), append(rest, rs)
	}
	return frag, rest
}

// Where a flow or rule goes when the fragment judges split a sample.
const (
	fragOther  = iota // not a fragment match, or another pair's: judged with the rest
	fragOfPair        // the pair's fragments: counted, labelled
	fragLeft          // a fragment match with no exact MAC: left out of both
)

// A fragment match is the pair's when every MAC it matches exactly is a
// guest's (both, different, or one alone: a port-security pipeline's first
// stage matches the source only, the stage after conntrack the
// destination; in the profile's window the guests' fragments are the
// pair's); with no exact MAC it is left out; with another host's MAC it
// is another pair's, judged with the rest.
func fragRole(frag, src, dst string, set macSet) int {
	if !IsFragmentMatch(frag) {
		return fragOther
	}
	s, errS := normalizeMAC(src)
	d, errD := normalizeMAC(dst)
	switch {
	case errS != nil && errD != nil:
		return fragLeft
	case errS == nil && !set[s], errD == nil && !set[d], errS == nil && errD == nil && s == d:
		return fragOther
	}
	return fragOfPair
}

// JudgeDpctlFragments judges dpctl samples of the fragment profile: the
// pair's flows matching frag=first/later (by their exact eth src and dst:
// the guests, either way) are taken out and counted — growth between the
// first and the last sample of each series, or with one sample the packets
// of a flow used inside the window — and the rest is judged by
// JudgeDpctlBasis as in any window, so a frag=no flow in software beside
// them is still software. Labelled when fragment flows counted packets and
// none of those is claimed in hardware; a claim of hardware is
// inconclusive (mlx5 cannot; tc's in_hw decides); no fragment flow that
// counted is "did not fragment", never labelled.
func JudgeDpctlFragments(s DpctlSamples, macs []string) FragmentFinding {
	set, err := newMACSet(macs)
	if err != nil {
		return FragmentFinding{Verdict: results.VerdictInconclusive, Reason: "bad guest MAC: " + err.Error()}
	}
	fragOff, restOff := splitFragments(s.Offloaded, set)
	fragAll, restAll := splitFragments(s.All, set)
	rest := s
	rest.Offloaded, rest.All = restOff, restAll
	var f FragmentFinding
	if len(rest.Offloaded) == 0 {
		f.Verdict, f.Reason = results.VerdictInconclusive, "no dpctl sample"
		return f
	}
	f.Verdict, f.Reason, _ = JudgeDpctlBasis(rest, macs)

	seen := map[string]bool{}
	count := func(fl DpctlFlow, typed bool, first map[string]DpctlFlow, key string, one bool) {
		f.FragFlows++
		var grew uint64
		if one {
			if ago, ok := fl.usedAgo(); ok && s.Window > 0 && ago <= s.Window {
				grew = fl.Packets
			}
		} else if p, ok := first[key]; ok {
			grew = sub(fl.Packets, p.Packets)
		}
		f.FragPackets += grew
		if grew > 0 && flowHardware(fl, typed) == flowHW {
			f.FragInHardware++
		}
	}
	lastFlows(fragOff, s.OffloadedIsTyped, seen, count)
	lastFlows(fragAll, false, seen, count)
	f.Fragmented = f.FragPackets > 0
	return finishFragments(f)
}

func finishFragments(f FragmentFinding) FragmentFinding {
	f.Labelled = f.Fragmented && f.FragInHardware == 0
	if f.Fragmented && f.FragInHardware > 0 {
		f.Verdict = results.VerdictInconclusive
	}
	return f
}

// JudgeTCFragments is JudgeDpctlFragments for tc: the pair's flower rules
// matching ip_flags frag (first, later or any) are taken out of every dump
// and counted (growth of their actions' packets between the first and the
// last sample; with one sample a rule used inside the window), the rest is
// judged by JudgeTCFlow. A fragment rule in_hw that counted packets
// contradicts the NIC's design: inconclusive.
func JudgeTCFragments(obs []TCObservation, macs []string, network string, oneWay *OneWay) FragmentFinding {
	set, err := newMACSet(macs)
	if err != nil {
		return FragmentFinding{Verdict: results.VerdictInconclusive, Reason: "bad guest MAC: " + err.Error()}
	}
	var f FragmentFinding
	sampled, rules := false, false
	rest := make([]TCObservation, len(obs))
	for i, o := range obs {
		rest[i] = o
		rest[i].Samples = nil
		var frags []TCDump
		for _, d := range o.Samples {
			sampled = true
			rules = rules || len(d.Filters) > 0
			var keep, fr TCDump
			keep.Format, fr.Format = d.Format, d.Format
			for _, r := range d.Filters {
				switch fragRole(r.Frag(), r.Keys["src_mac"], r.Keys["dst_mac"], set) {
				case fragOfPair:
					fr.Filters = append(fr.Filters, r)
				case fragOther:
					keep.Filters = append(keep.Filters, r)
				}
			}
			rest[i].Samples = append(rest[i].Samples, keep)
			frags = append(frags, fr)
		}
		if len(frags) == 0 {
			continue
		}
		_, first := keyedFilters(frags[0])
		last := frags[len(frags)-1]
		keys, _ := keyedFilters(last)
		for j, r := range last.Filters {
			f.FragFlows++
			var grew uint64
			if len(frags) == 1 {
				if used, ok := tcLastUsed(r); ok && o.Window > 0 && used <= o.Window.Seconds() {
					grew = tcPackets(r)
				}
			} else if p, ok := first[keys[j]]; ok {
				grew = sub(tcPackets(r), tcPackets(p))
			}
			f.FragPackets += grew
			if grew > 0 && r.InHW {
				f.FragInHardware++
			}
		}
	}
	f.Verdict, f.Reason, _ = JudgeTCFlow(rest, macs, network, oneWay)
	f.Fragmented = f.FragPackets > 0
	f.NoRules = sampled && !rules
	return finishFragments(f)
}

// tcPackets is the most packets any action of the rule counted (the
// actions of one rule count the same packets).
func tcPackets(r TCFilter) uint64 {
	var n uint64
	for _, a := range r.Actions {
		n = max(n, a.Packets, a.HWPackets+a.SWPackets)
	}
	return n
}

// tcLastUsed is the most recent use among the rule's actions, in seconds.
func tcLastUsed(r TCFilter) (float64, bool) {
	best, ok := 0.0, false
	for _, a := range r.Actions {
		if !a.HasLastUsed {
			continue
		}
		if v := float64(a.LastUsed); !ok || v < best {
			best, ok = v, true
		}
	}
	return best, ok
}
