package offload

import (
	"errors"
	"fmt"
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

// isIP reports whether the flow matches IPv4 or IPv6 traffic, under its
// VLAN tags if it has any.
func (f DpctlFlow) isIP() bool {
	t, _ := f.ipEthType()
	return isIPEthType(t)
}

// isIPEthType reports whether an ethertype as OVS prints it is IPv4 or IPv6.
func isIPEthType(t string) bool {
	t = strings.ToLower(t)
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

// splitTopLevel splits s at commas outside parentheses and braces (Geneve
// options print as geneve({class=0x102,type=0x80,len=4,0x10002}{...})).
func splitTopLevel(s string) ([]string, error) {
	var out []string
	var open []rune // the brackets open at this point, innermost last
	start := 0
	for i, r := range s {
		switch r {
		case '(', '{':
			open = append(open, r)
		case ')', '}':
			want := '('
			if r == '}' {
				want = '{'
			}
			if len(open) == 0 || open[len(open)-1] != want {
				return nil, fmt.Errorf("unbalanced '%c' at byte %d", r, i)
			}
			open = open[:len(open)-1]
		case ',':
			if len(open) == 0 {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	if len(open) != 0 {
		return nil, fmt.Errorf("unbalanced '%c'", open[len(open)-1])
	}
	return append(out, s[start:]), nil
}

// ipEthType is the ethertype the flow matches under its VLAN tags: OVS
// prints a tagged match as eth_type(0x8100),vlan(vid=..),encap(eth_type(..),..)
// (802.1ad: eth_type(0x88a8),vlan(..),encap(eth_type(0x8100),vlan(..),encap(..))),
// so the payload's ethertype is inside the innermost encap(). tagged is
// true when at least one tag was unwrapped.
func (f DpctlFlow) ipEthType() (ethType string, tagged bool) {
	_, ethType, tagged = f.innermost()
	return ethType, tagged
}

// innermost is the flow's match under its VLAN tags: the fields of the
// innermost encap() (the flow's own when untagged), their ethertype, and
// whether a tag was unwrapped. The fragment and 5-tuple matches
// (ipv4(..), udp(..)) of a tagged flow are there.
func (f DpctlFlow) innermost() (fields []MatchField, ethType string, tagged bool) {
	ethType = f.EthType
	fields = f.Match
	for depth := 0; depth < 4 && isVLANEthType(ethType); depth++ {
		inner := ""
		for _, m := range fields {
			if m.Key == "encap" {
				inner = m.Value
			}
		}
		toks, err := splitTopLevel(inner)
		if inner == "" || err != nil {
			return fields, ethType, tagged
		}
		fields, ethType, tagged = nil, "", true
		for _, t := range toks {
			t = strings.TrimSpace(t)
			open := strings.IndexByte(t, '(')
			if open <= 0 || !strings.HasSuffix(t, ")") {
				continue
			}
			m := MatchField{Key: t[:open], Value: t[open+1 : len(t)-1]}
			fields = append(fields, m)
			if m.Key == "eth_type" {
				ethType = m.Value
			}
		}
	}
	return fields, ethType, tagged
}

func isVLANEthType(t string) bool {
	t = strings.ToLower(t)
	return strings.HasPrefix(t, "0x8100") || strings.HasPrefix(t, "0x88a8")
}

// recircTo is the recirculation id the flow's actions continue in, as
// printed ("ct(zone=5),recirc(0x2)": OVS's conntrack stage, tc's goto
// chain), and whether they do.
func (f DpctlFlow) recircTo() (string, bool) {
	toks, err := splitTopLevel(f.Actions)
	if err != nil {
		return "", false
	}
	id, found := "", false
	for _, t := range toks {
		if v, ok := strings.CutPrefix(strings.TrimSpace(t), "recirc("); ok {
			id, found = strings.TrimSuffix(v, ")"), true
		}
	}
	return id, found
}

// outputs reports whether the flow's actions send the packet to a port: a
// bare port name or number at the top level or inside clone(...) (the
// datapath prints output(N) as N), or the userspace datapath's tnl_push()
// and lb_output(); not drop, ct(), recirc(), set(), push_vlan(), tnl_pop()
// (the decapsulated packet is a new pipeline on the tunnel port) or
// userspace() (a packet to ovs-vswitchd is not forwarded).
func (f DpctlFlow) outputs() bool {
	return actionsOutput(f.Actions, 0)
}

func actionsOutput(actions string, depth int) bool {
	toks, err := splitTopLevel(actions)
	if err != nil || depth > 4 {
		return false
	}
	for _, t := range toks {
		t = strings.TrimSpace(t)
		switch {
		case t == "" || t == "drop" || bareNonOutput[t]:
		case strings.HasPrefix(t, "tnl_push(") || strings.HasPrefix(t, "lb_output("):
			return true // the userspace datapath's tunnel and bond outputs
		case strings.HasPrefix(t, "clone(") && strings.HasSuffix(t, ")"):
			if actionsOutput(t[len("clone("):len(t)-1], depth+1) {
				return true
			}
		case !strings.ContainsAny(t, "()=:"):
			return true
		}
	}
	return false
}

// bareNonOutput are the datapath actions printed without parentheses that
// send nothing anywhere (lib/odp-util.c format_odp_action).
var bareNonOutput = map[string]bool{"ct_clear": true, "pop_vlan": true, "pop_eth": true, "pop_nsh": true, "dec_ttl": true}

// normRecirc writes a recirculation id in one form: "0x2a" and "42" are
// the same id; the datapath prints recirc_id(0x2a) in matches and
// recirc(0x2a) in actions. Unreadable ids are kept as printed.
func normRecirc(s string) string {
	s = strings.TrimSpace(s)
	if n, err := strconv.ParseUint(s, 0, 32); err == nil {
		return strconv.FormatUint(n, 10)
	}
	return s
}
