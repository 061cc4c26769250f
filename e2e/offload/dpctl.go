package offload

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// DpctlFlow is one datapath flow of `ovs-appctl dpctl/dump-flows [-m]
// [type=offloaded]`:
//
//	ufid:91cc45de-..., skb_priority(0/0),...,recirc_id(0),in_port(5b45c61b307e_h),
//	eth(src=00:00:00:c5:6d:4e,dst=00:00:00:e7:16:ce),eth_type(0x0800),ipv4(...),
//	packets:941539, bytes:62142230, used:0.260s, offloaded:yes, dp:tc, actions:54235e5753b8_h
type DpctlFlow struct {
	UFID string `json:"ufid,omitempty"`
	// Match is every match field in order ("recirc_id" -> "0", "eth" ->
	// "src=..,dst=..", "tunnel" -> "tun_id=0x..,src=..,...").
	Match    []MatchField `json:"match"`
	RecircID string       `json:"recirc_id,omitempty"`
	InPort   string       `json:"in_port,omitempty"`
	EthSrc   string       `json:"eth_src,omitempty"`
	EthDst   string       `json:"eth_dst,omitempty"`
	EthType  string       `json:"eth_type,omitempty"`
	IPv4     string       `json:"ipv4,omitempty"`
	Tunnel   string       `json:"tunnel,omitempty"`
	Packets  uint64       `json:"packets"`
	Bytes    uint64       `json:"bytes"`
	Used     string       `json:"used,omitempty"` // "0.260s", "never"
	Flags    string       `json:"flags,omitempty"`
	// Offloaded is the "offloaded:" field ("yes", "partial", "no"), empty when
	// not printed (plain dump-flows without -m, or a software flow).
	Offloaded string `json:"offloaded,omitempty"`
	DP        string `json:"dp,omitempty"` // "tc", "ovs", "dpdk"; empty without -m
	Actions   string `json:"actions"`
	// DPExtraInfo is the userspace datapath's "dp-extra-info:" after the actions.
	DPExtraInfo string `json:"dp_extra_info,omitempty"`
}

// MatchField is one key(value) of a flow's match.
type MatchField struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// Field returns the value of a match key and whether it is present.
func (f DpctlFlow) Field(key string) (string, bool) {
	for _, m := range f.Match {
		if m.Key == key {
			return m.Value, true
		}
	}
	return "", false
}

// isIP reports whether the flow matches IPv4 or IPv6 traffic.
func (f DpctlFlow) isIP() bool {
	t := strings.ToLower(f.EthType)
	return strings.HasPrefix(t, "0x0800") || strings.HasPrefix(t, "0x86dd")
}

// key identifies a flow across samples: the ufid when printed, else the match.
func (f DpctlFlow) key() string {
	if f.UFID != "" {
		return f.UFID
	}
	var s []string
	for _, m := range f.Match {
		s = append(s, m.Key+"("+m.Value+")")
	}
	return strings.Join(s, ",")
}

func (f DpctlFlow) describe() string {
	s := fmt.Sprintf("eth(src=%s,dst=%s) in_port(%s) packets:%d", f.EthSrc, f.EthDst, f.InPort, f.Packets)
	if f.Offloaded != "" {
		s += " offloaded:" + f.Offloaded
	}
	if f.DP != "" {
		s += " dp:" + f.DP
	}
	return s
}

// ParseDpctl parses the output of `ovs-appctl dpctl/dump-flows` with or
// without -m and type=. Empty output is no flow. Lines of the userspace
// datapath such as "flow-dump from the main thread:" or "flow-dump from pmd on
// cpu core: 2" are skipped.
func ParseDpctl(data []byte) ([]DpctlFlow, error) {
	flows := []DpctlFlow{}
	for n, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "flow-dump from ") {
			continue
		}
		f, err := parseDpctlLine(line)
		if err != nil {
			show := line
			if len(show) > 120 {
				show = show[:120] + "..."
			}
			return flows, fmt.Errorf("dpctl flows: line %d %q: %w", n+1, show, err)
		}
		flows = append(flows, f)
	}
	return flows, nil
}

func parseDpctlLine(line string) (DpctlFlow, error) {
	var f DpctlFlow
	// actions: is last and may contain commas at any depth.
	i := strings.Index(line, "actions:")
	if i < 0 {
		return f, errors.New("no actions: field")
	}
	f.Actions = strings.TrimSpace(line[i+len("actions:"):])
	// The userspace datapath appends ", dp-extra-info:miniflow_bits(5,1)".
	if a, extra, ok := strings.Cut(f.Actions, ", dp-extra-info:"); ok {
		f.Actions, f.DPExtraInfo = a, extra
	}
	head := strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(line[:i]), ","))
	tokens, err := splitTopLevel(head)
	if err != nil {
		return f, err
	}
	sawPackets := false
	for _, tok := range tokens {
		tok = strings.TrimSpace(tok)
		if tok == "" {
			continue
		}
		name, val, isStat := strings.Cut(tok, ":")
		if isStat && !strings.Contains(name, "(") {
			switch name {
			case "ufid":
				f.UFID = val
			case "packets":
				n, err := strconv.ParseUint(val, 10, 64)
				if err != nil {
					return f, fmt.Errorf("packets %q: %w", val, err)
				}
				f.Packets, sawPackets = n, true
			case "bytes":
				n, err := strconv.ParseUint(val, 10, 64)
				if err != nil {
					return f, fmt.Errorf("bytes %q: %w", val, err)
				}
				f.Bytes = n
			case "used":
				f.Used = val
			case "flags":
				f.Flags = val
			case "offloaded":
				f.Offloaded = val
			case "dp":
				f.DP = val
			}
			// other name:value statistics (e.g. "dp-extra-info:") are kept out of the match
			continue
		}
		open := strings.IndexByte(tok, '(')
		if open <= 0 || !strings.HasSuffix(tok, ")") {
			return f, fmt.Errorf("match field %q: want key(value)", tok)
		}
		m := MatchField{Key: tok[:open], Value: tok[open+1 : len(tok)-1]}
		f.Match = append(f.Match, m)
		switch m.Key {
		case "recirc_id":
			f.RecircID = m.Value
		case "in_port":
			f.InPort = m.Value
		case "eth_type":
			f.EthType = m.Value
		case "ipv4":
			f.IPv4 = m.Value
		case "tunnel":
			f.Tunnel = m.Value
		case "eth":
			for _, kv := range strings.Split(m.Value, ",") {
				k, v, _ := strings.Cut(kv, "=")
				switch k {
				case "src":
					f.EthSrc = v
				case "dst":
					f.EthDst = v
				}
			}
		}
	}
	if !sawPackets {
		return f, errors.New("no packets: field")
	}
	if len(f.Match) == 0 {
		return f, errors.New("no match fields")
	}
	return f, nil
}

// splitTopLevel splits s at commas outside parentheses.
func splitTopLevel(s string) ([]string, error) {
	var out []string
	depth, start := 0, 0
	for i, r := range s {
		switch r {
		case '(':
			depth++
		case ')':
			depth--
			if depth < 0 {
				return nil, fmt.Errorf("unbalanced ')' at byte %d", i)
			}
		case ',':
			if depth == 0 {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	if depth != 0 {
		return nil, errors.New("unbalanced '('")
	}
	return append(out, s[start:]), nil
}

// guestFlows returns the IP flows whose eth src and dst are both guest MACs
// (with no MACs given: every IP flow).
func guestFlows(flows []DpctlFlow, set macSet) []DpctlFlow {
	var out []DpctlFlow
	for _, f := range flows {
		if !f.isIP() {
			continue
		}
		if len(set) > 0 && (f.EthSrc == "" || f.EthDst == "" || !set.has(f.EthSrc) || !set.has(f.EthDst)) {
			continue
		}
		out = append(out, f)
	}
	return out
}

// flowHardware tells whether a flow is in hardware: "yes" or dp:tc means
// yes, "partial" is partial, dp:ovs or "no" is software. A flow with neither
// field is in hardware only when it came from a type=offloaded dump.
func flowHardware(f DpctlFlow, offloadedDump bool) string {
	switch {
	case f.Offloaded == "yes":
		return "yes"
	case f.Offloaded == "partial":
		return "partial"
	case f.Offloaded == "no":
		return "no"
	case f.DP == "tc":
		return "yes"
	case f.DP != "":
		return "no"
	case offloadedDump:
		return "yes"
	}
	return "no"
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
}

// JudgeDpctl decides the dpctl check. Offloaded: IP flows between the guests'
// MACs are in hardware (offloaded:yes or dp:tc) and their packet counters
// grew between the first and last sample (one sample: non-zero). Software: no
// such hardware flow (an empty type=offloaded dump during a sustained flow is
// the software path). Inconclusive: hardware flows whose counters did not
// grow, partial offload, hardware and growing software flows together, or —
// when full dumps were sampled — no flow between the guests anywhere (the
// traffic was not flowing, so an empty offloaded dump proves nothing).
func JudgeDpctl(s DpctlSamples, macs []string) (Verdict, string) {
	set, err := newMACSet(macs)
	if err != nil {
		return Inconclusive, "bad guest MAC: " + err.Error()
	}
	if len(s.Offloaded) == 0 {
		return Inconclusive, "no dpctl sample"
	}
	first := s.Offloaded[0]
	last := s.Offloaded[len(s.Offloaded)-1]
	prev := map[string]DpctlFlow{}
	for _, f := range guestFlows(first, set) {
		prev[f.key()] = f
	}
	var hw, partial, sw []DpctlFlow
	var hwDelta, hwTotal uint64
	for _, f := range guestFlows(last, set) {
		switch flowHardware(f, s.OffloadedIsTyped) {
		case "yes":
			hw = append(hw, f)
			hwTotal += f.Packets
			if len(s.Offloaded) > 1 {
				hwDelta += sub(f.Packets, prev[f.key()].Packets)
			}
		case "partial":
			partial = append(partial, f)
		default:
			sw = append(sw, f)
		}
	}
	// Software flows between the guests in the full dumps: their growth.
	var swAll []DpctlFlow
	var swGrowth uint64
	if len(s.All) > 0 {
		before := map[string]DpctlFlow{}
		for _, f := range guestFlows(s.All[0], set) {
			before[f.key()] = f
		}
		for _, f := range guestFlows(s.All[len(s.All)-1], set) {
			if flowHardware(f, false) != "no" {
				continue
			}
			swAll = append(swAll, f)
			if len(s.All) > 1 {
				swGrowth += sub(f.Packets, before[f.key()].Packets)
			} else {
				swGrowth += f.Packets
			}
		}
	}
	sw = append(sw, swAll...)
	desc := func(fs []DpctlFlow) string {
		var d []string
		for _, f := range fs {
			d = append(d, f.describe())
		}
		sort.Strings(d)
		if len(d) > 6 {
			d = append(d[:6], fmt.Sprintf("... %d more", len(d)-6))
		}
		return strings.Join(d, "; ")
	}
	what := fmt.Sprintf("IP flows between %s", set)
	var swPackets uint64
	for _, f := range sw {
		swPackets += f.Packets
	}
	switch {
	case len(partial) > 0:
		return Inconclusive, fmt.Sprintf("%d %s only partially offloaded (the software datapath still forwards them): %s", len(partial), what, desc(partial))
	case len(hw) == 0 && len(sw) > 0:
		return Software, fmt.Sprintf("no offloaded %s; %d software flows (%d packets): %s", what, len(sw), swPackets, desc(sw))
	case len(hw) == 0 && len(s.All) > 0:
		// The full dumps were taken and hold no flow between the guests
		// either: nothing carried the guests' traffic while we looked (the
		// flow did not run), which proves neither path.
		return Inconclusive, fmt.Sprintf("no %s in the offloaded dump nor in the full dump (%d and %d flows): the guests' traffic was not flowing", what, len(last), len(s.All[len(s.All)-1]))
	case len(hw) == 0:
		return Software, fmt.Sprintf("no offloaded %s (%d flows in the offloaded dump)", what, len(last))
	case len(s.Offloaded) == 1 && hwTotal == 0:
		return Inconclusive, fmt.Sprintf("%d offloaded %s but no packets counted: %s", len(hw), what, desc(hw))
	case len(s.Offloaded) > 1 && hwDelta == 0:
		return Inconclusive, fmt.Sprintf("%d offloaded %s but their counters did not grow over %d samples (is the flow running?): %s", len(hw), what, len(s.Offloaded), desc(hw))
	case swGrowth > 0:
		return Inconclusive, fmt.Sprintf("%d offloaded %s, but software flows between the guests also counted +%d packets: %s", len(hw), what, swGrowth, desc(sw))
	case len(s.Offloaded) == 1:
		return Offloaded, fmt.Sprintf("%d offloaded %s, %d packets (one sample: growth not verified): %s", len(hw), what, hwTotal, desc(hw))
	}
	return Offloaded, fmt.Sprintf("%d offloaded %s, packets +%d over %d samples: %s", len(hw), what, hwDelta, len(s.Offloaded), desc(hw))
}
