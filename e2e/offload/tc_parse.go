package offload

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// TCDump is one `tc -s filter show dev DEV ingress` output, JSON or text.
type TCDump struct {
	Format  string     `json:"format"` // "json" or "text"
	Filters []TCFilter `json:"filters"`
}

// TCFilter is one filter (a classifier instance with a handle). The chain
// head lines tc prints without a handle are not filters and are skipped, and
// so are u32 hash tables ("fh 800: ht divisor 1"): they hold nodes, they
// match nothing themselves.
type TCFilter struct {
	Protocol string `json:"protocol,omitempty"`
	Pref     uint32 `json:"pref"`
	Kind     string `json:"kind"` // "flower", "matchall", "bpf", "u32", ...
	Chain    uint32 `json:"chain"`
	// Block is the shared block the filter is on ("filter block N ...":
	// tc prints it instead of the device for a device bound to a shared
	// block, as OVS binds a LAG and its members); 0 when none.
	Block uint32 `json:"block,omitempty"`
	// Handle as tc prints it: "0x1" (flower text), "1" (JSON), or u32's
	// "fh" node id such as "800::800".
	Handle  string            `json:"handle"`
	Keys    map[string]string `json:"keys,omitempty"` // flower match keys: dst_mac, src_mac, eth_type, enc_key_id, enc_dst_ip, ...
	SkipSW  bool              `json:"skip_sw,omitempty"`
	SkipHW  bool              `json:"skip_hw,omitempty"`
	InHW    bool              `json:"in_hw,omitempty"`
	NotInHW bool              `json:"not_in_hw,omitempty"`
	// InHWCount is how many hardware devices hold the rule; -1 when tc did not print it.
	InHWCount int        `json:"in_hw_count"`
	Actions   []TCAction `json:"actions,omitempty"`
}

// TCAction is one action of a filter with its statistics. Hardware and
// software counters are only printed by tc when non-zero, so absent means 0.
type TCAction struct {
	Order     int    `json:"order"`
	Kind      string `json:"kind"`             // "mirred", "tunnel_key", "gact", ...
	ToDev     string `json:"to_dev,omitempty"` // mirred target device
	Bytes     uint64 `json:"bytes"`            // total (software + hardware)
	Packets   uint64 `json:"packets"`
	SWBytes   uint64 `json:"sw_bytes"`
	SWPackets uint64 `json:"sw_packets"`
	HWBytes   uint64 `json:"hw_bytes"`
	HWPackets uint64 `json:"hw_packets"`
	HasStats  bool   `json:"has_stats"` // tc printed statistics for this action (-s)
	// LastUsed is how long ago the action was last hit, in whole seconds
	// rounded down, as tc prints it with -s ("used N sec" in text,
	// "last_used" in JSON; iproute2 tc/tc_util.c print_tm). HasLastUsed is
	// false when tc printed no time (it omits a zero kernel value). iproute2
	// before 5.7 printed the JSON times in clock ticks, which only makes a
	// use look older than it was.
	LastUsed    uint64 `json:"last_used,omitempty"`
	HasLastUsed bool   `json:"has_last_used,omitempty"`
	// Installed is how long ago the action was installed, in whole seconds
	// rounded down ("installed N sec" in text, "installed" in JSON; the
	// same print_tm); HasInstalled is false when tc printed none.
	Installed    uint64 `json:"installed,omitempty"`
	HasInstalled bool   `json:"has_installed,omitempty"`
	// FirstUsed is how long ago the action was first hit ("firstused N
	// sec", JSON "first_used"); HasFirstUsed is false when tc printed none.
	FirstUsed    uint64 `json:"first_used,omitempty"`
	HasFirstUsed bool   `json:"has_first_used,omitempty"`
	// GotoChain is the chain the action continues in ("goto chain N" as
	// its control action: gact after OVS's ct, i.e. a recirculation in
	// lib/netdev-offload-tc.c); nil when it does not jump.
	GotoChain *uint32 `json:"goto_chain,omitempty"`
	// Tunnel is a tunnel_key action's metadata; nil for other kinds.
	Tunnel *TCTunnelKey `json:"tunnel,omitempty"`
}

// TCTunnelKey is what a tunnel_key action sets (encap: OVS's
// set(tunnel(..)) before the mirred to the tunnel device) or that it
// unsets (decap), as iproute2 tc/m_tunnel_key.c print_tunnel_key prints it:
//
//	action order 1: tunnel_key  set
//	src_ip 198.18.1.11
//	dst_ip 198.18.1.12
//	key_id 5
//	dst_port 6081
//	geneve_opts 0102:80:00010002
//	csum
//	ttl 64 pipe
//
// iproute2 5.7 printed the option line as "geneve_opt" (netdev, "tc:
// m_tunnel_key: fix geneve opt output", 2020); both are read.
type TCTunnelKey struct {
	Mode  string `json:"mode"` // "set" or "unset"
	SrcIP string `json:"src_ip,omitempty"`
	DstIP string `json:"dst_ip,omitempty"`
	KeyID string `json:"key_id,omitempty"`
	// DstPort is the outer UDP destination port; 0 when not printed.
	DstPort int `json:"dst_port,omitempty"`
	// GeneveOpts are the Geneve option TLVs in tc's text form,
	// "CLASS:TYPE:DATA" in hex, comma-separated ("0102:80:00010002").
	GeneveOpts string `json:"geneve_opts,omitempty"`
	// VXLANOpts is the VXLAN GBP option ("vxlan_opts 256").
	VXLANOpts string `json:"vxlan_opts,omitempty"`
}

// The packets of an action. tc prints a total ("Sent N bytes M pkt": the
// kernel's TCA_STATS_BASIC, its packets from the 64-bit TCA_STATS_PKT64
// once they pass 2^32) and the hardware share ("Sent hardware": the
// kernel's TCA_STATS_BASIC_HW); the software share is the rest. iproute2
// before 6.15 (commit e7638a02 "tc_util: Add support for 64-bit hardware
// packets counter", first in v6.15.0) prints the hardware packets as
// TCA_STATS_BASIC_HW's 32-bit value, and the software line from the 32-bit
// values of both, while every byte count is 64-bit: past 2^32 packets the
// printed hardware packets are the true count less a multiple of 2^32, and
// the total less them is not software. So the software share is read from
// what cannot wrap, the bytes (the total's less the hardware's), and the
// hardware packets are the total less the software packets whenever that
// agrees with the printed value modulo 2^32.

// hasHW reports whether tc printed hardware counters for the action (it
// prints them only when they are not zero).
func (a TCAction) hasHW() bool { return a.HWBytes > 0 || a.HWPackets > 0 }

// swBytes is the software share of the action's bytes: the total's less the
// hardware's (all of them when tc printed no hardware counters).
func (a TCAction) swBytes() uint64 { return sub(a.Bytes, a.HWBytes) }

// packets are the action's hardware and software packets (see above);
// wrapped reports that the printed hardware packets were short of hw by a
// multiple of 2^32 (a 32-bit printer).
func (a TCAction) packets() (hw, sw uint64, wrapped bool) {
	if !a.hasHW() {
		return 0, max(a.Packets, a.SWPackets), false
	}
	if a.Packets < a.HWPackets && a.HWPackets >= 1<<32 {
		return a.HWPackets, a.SWPackets, false // a total below a 64-bit hardware count: not a printer's wrap
	}
	d := a.Packets - a.HWPackets // modulo 2^64 when the total is below (both printed in 32 bits)
	switch {
	case a.swBytes() == 0:
		sw = 0
	case a.Packets >= a.HWPackets && (d < 1<<32 || d <= a.swBytes()):
		sw = d // fewer than 2^32, or as many as the software bytes allow
	default:
		sw = uint64(uint32(d)) // the 32-bit printer's difference
	}
	if a.Packets < sw || uint32(a.Packets-sw) != uint32(a.HWPackets) {
		return a.HWPackets, sw, false
	}
	hw = a.Packets - sw
	return hw, sw, hw != a.HWPackets
}

// counts are a filter's counters: the largest among its actions (tc
// reports the same flow stats on each action that has them).
type counts struct {
	hw, sw           uint64 // packets (packets())
	pkts, hwPrinted  uint64 // the total packets and the hardware packets as printed
	hwBytes, swBytes uint64
	bytes            uint64 // total
	wrapped          bool   // some action's hardware packets were printed in 32 bits
}

func (f TCFilter) counts() counts {
	var c counts
	for _, a := range f.Actions {
		hw, sw, w := a.packets()
		c.hw, c.sw, c.pkts, c.hwPrinted = max(c.hw, hw), max(c.sw, sw), max(c.pkts, a.Packets), max(c.hwPrinted, a.HWPackets)
		c.hwBytes, c.swBytes, c.bytes = max(c.hwBytes, a.HWBytes), max(c.swBytes, a.swBytes()), max(c.bytes, a.Bytes)
		c.wrapped = c.wrapped || w
	}
	return c
}

// HWPackets is the hardware packet count of the filter (see counts).
func (f TCFilter) HWPackets() uint64 { return f.counts().hw }

// SWPackets is the software packet count of the filter (see counts).
func (f TCFilter) SWPackets() uint64 { return f.counts().sw }

// wrapNote names a hardware packet count printed in 32 bits.
const wrapNote = "hardware packets printed in 32 bits (iproute2 before 6.15): counted from the 64-bit total less the software packets"

// growth is what the filter counted since prev, the same rule in an
// earlier sample, on the premise that fewer than 2^32 packets of it went
// by in between (43 s at 100 Mpps). Software packets count only when the
// software bytes grew (the bytes are 64-bit and exact, so a hardware count
// printed in 32 bits never reads as software), or when neither sample has
// any byte count (counters built without them); hardware packets are the
// total's growth less the software's, which agrees with the printed
// hardware packets modulo 2^32 whichever iproute2 printed them. Counters
// that do not agree so (not tc's output) fall back on the printed hardware
// packets.
func (f TCFilter) growth(prev TCFilter) (hw, sw uint64, note string) {
	now, was := f.counts(), prev.counts()
	switch {
	case now.swBytes > was.swBytes:
		sw = max(modDiff(now.sw, was.sw), 1) // the bytes grew: at least one packet
	case now.bytes == 0 && was.bytes == 0:
		sw = sub(now.sw, was.sw) // no byte count at all (not tc's output): the packets alone
	}
	total := modDiff(now.pkts, was.pkts)
	if now.pkts < was.pkts && now.bytes <= was.bytes {
		total = 0
	}
	printed := modDiff(now.hwPrinted, was.hwPrinted)
	switch {
	case total >= sw && uint32(total-sw) == uint32(printed):
		hw = total - sw
	case now.hwPrinted >= was.hwPrinted:
		hw = now.hwPrinted - was.hwPrinted
	case now.hwBytes > was.hwBytes:
		hw = printed
	}
	if now.wrapped || was.wrapped || (now.hwPrinted < was.hwPrinted && hw > 0) {
		note = wrapNote
	}
	return hw, sw, note
}

// modDiff is a - b for a counter that grew, modulo 2^32 when it went down
// (printed in 32 bits, it wrapped).
func modDiff(a, b uint64) uint64 {
	if a >= b {
		return a - b
	}
	return uint64(uint32(a - b))
}

// restarted reports whether the filter's counters are below prev's: a rule
// never counts down, so it is another one.
func (f TCFilter) restarted(prev TCFilter) bool {
	now, was := f.counts(), prev.counts()
	return now.bytes < was.bytes || now.hwBytes < was.hwBytes || now.swBytes < was.swBytes
}

// lastUsed is the most recent use of the filter among its actions (each
// action keeps its own time; the hardware counters update only some of
// them), and whether any action printed one.
func (f TCFilter) lastUsed() (uint64, bool) {
	var best uint64
	found := false
	for _, a := range f.Actions {
		if a.HasLastUsed && (!found || a.LastUsed < best) {
			best, found = a.LastUsed, true
		}
	}
	return best, found
}

// installedAgo is the age of the filter: the oldest "installed" among its
// actions (an action shared with an older rule only makes the rule look
// older), and whether any action printed one.
func (f TCFilter) installedAgo() (uint64, bool) {
	var oldest uint64
	found := false
	for _, a := range f.Actions {
		if a.HasInstalled && (!found || a.Installed > oldest) {
			oldest, found = a.Installed, true
		}
	}
	return oldest, found
}

// next is the chain the filter sends its packets on to (the last "goto
// chain" among its actions), and whether it does.
func (f TCFilter) next() (uint32, bool) {
	var c uint32
	found := false
	for _, a := range f.Actions {
		if a.GotoChain != nil {
			c, found = *a.GotoChain, true
		}
	}
	return c, found
}

// outputs reports whether the filter sends the packet out of the pipeline
// (a mirred action: redirect or mirror to a device, after tunnel_key set
// for an encap rule or tunnel_key unset for a decap rule).
func (f TCFilter) outputs() bool {
	for _, a := range f.Actions {
		if a.Kind == "mirred" {
			return true
		}
	}
	return false
}

// normHandle is a handle in one form ("0x1" and "1" are the same).
func normHandle(h string) string {
	if n, err := strconv.ParseUint(h, 0, 32); err == nil {
		return strconv.FormatUint(n, 10)
	}
	return h
}

// ParseTC parses either form of `tc -s filter show dev DEV ingress`: JSON
// when the output starts with '[' (tc -j), the text form otherwise.
func ParseTC(data []byte) (TCDump, error) {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) > 0 && trimmed[0] == '[' {
		return ParseTCJSON(data)
	}
	return ParseTCText(data)
}

type tcJSONFilter struct {
	Protocol string         `json:"protocol"`
	Pref     uint32         `json:"pref"`
	Kind     string         `json:"kind"`
	Chain    uint32         `json:"chain"`
	Block    uint32         `json:"block"`
	Options  *tcJSONOptions `json:"options"`
}

type tcJSONOptions struct {
	Handle    json.RawMessage            `json:"handle"`
	FH        json.RawMessage            `json:"fh"`         // u32 node or hash table id
	HTDivisor json.RawMessage            `json:"ht_divisor"` // set on u32 hash tables only
	Keys      map[string]json.RawMessage `json:"keys"`
	SkipSW    bool                       `json:"skip_sw"`
	SkipHW    bool                       `json:"skip_hw"`
	InHW      bool                       `json:"in_hw"`
	NotInHW   bool                       `json:"not_in_hw"`
	InHWCount *int                       `json:"in_hw_count"`
	Actions   []tcJSONAction             `json:"actions"`
}

type tcJSONAction struct {
	Order     int     `json:"order"`
	Kind      string  `json:"kind"`
	ToDev     string  `json:"to_dev"`
	LastUsed  *uint64 `json:"last_used"`
	Installed *uint64 `json:"installed"`
	FirstUsed *uint64 `json:"first_used"`
	// tunnel_key (tc/m_tunnel_key.c): "mode", the addresses, "key_id",
	// "dst_port", and the options as arrays of objects.
	Mode       string          `json:"mode"`
	SrcIP      string          `json:"src_ip"`
	DstIP      string          `json:"dst_ip"`
	KeyID      *uint64         `json:"key_id"`
	DstPort    *uint64         `json:"dst_port"`
	GeneveOpts []tcJSONGeneve  `json:"geneve_opts"`
	VXLANOpts  []tcJSONVXLANOp `json:"vxlan_opts"`
	// Control is print_action_control's object: {"type":"goto","chain":N}.
	Control *struct {
		Type  string  `json:"type"`
		Chain *uint32 `json:"chain"`
	} `json:"control_action"`
	Stats *struct {
		Bytes     uint64 `json:"bytes"`
		Packets   uint64 `json:"packets"`
		SWBytes   uint64 `json:"sw_bytes"`
		SWPackets uint64 `json:"sw_packets"`
		HWBytes   uint64 `json:"hw_bytes"`
		HWPackets uint64 `json:"hw_packets"`
	} `json:"stats"`
}

// tcJSONGeneve is one Geneve option TLV as iproute2 prints it in JSON (the
// flower keys geneve_opt_key / geneve_opt_mask and tunnel_key's
// geneve_opts): {"class":258,"type":128,"data":[0,1,0,2]}.
type tcJSONGeneve struct {
	Class uint   `json:"class"`
	Type  uint   `json:"type"`
	Data  []uint `json:"data"`
}

// text is the option in tc's text form: "0102:80:00010002".
func (g tcJSONGeneve) text() (string, error) {
	if g.Class > 0xffff || g.Type > 0xff {
		return "", fmt.Errorf("geneve option class %d / type %d out of range", g.Class, g.Type)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%04x:%02x:", g.Class, g.Type)
	for _, d := range g.Data {
		if d > 0xff {
			return "", fmt.Errorf("geneve option data byte %d out of range", d)
		}
		fmt.Fprintf(&b, "%02x", d)
	}
	return b.String(), nil
}

// tcJSONVXLANOp is a VXLAN GBP option: {"gbp":256}.
type tcJSONVXLANOp struct {
	GBP uint64 `json:"gbp"`
}

// tcJSONOptKeys are the JSON keys of flower's tunnel option matches
// (tc/f_flower.c flower_print_enc_opts: Geneve TLVs, VXLAN GBP); the text
// form prints each pair as one "geneve_opts KEY/MASK[,KEY/MASK...]" (or
// "vxlan_opts") line, and ParseTCJSON keeps them the same way.
var tcJSONOptKeys = []struct{ key, mask, text string }{
	{"geneve_opt_key", "geneve_opt_mask", "geneve_opts"},
	{"vxlan_opt_key", "vxlan_opt_mask", "vxlan_opts"},
}

// jsonEncOpts replaces the JSON option arrays of keys by the text form's
// single key ("geneve_opts 0102:80:00010002/ffff:ff:7fffffff").
func jsonEncOpts(keys map[string]json.RawMessage, out map[string]string) error {
	for _, k := range tcJSONOptKeys {
		rawKey, ok := keys[k.key]
		if !ok {
			continue
		}
		delete(out, k.key)
		delete(out, k.mask)
		texts := func(raw json.RawMessage) ([]string, error) {
			if raw == nil {
				return nil, nil
			}
			if k.text == "vxlan_opts" {
				var v []tcJSONVXLANOp
				if err := json.Unmarshal(raw, &v); err != nil {
					return nil, fmt.Errorf("%s: %w", k.key, err)
				}
				s := make([]string, len(v))
				for i, o := range v {
					s[i] = strconv.FormatUint(o.GBP, 10)
				}
				return s, nil
			}
			var v []tcJSONGeneve
			if err := json.Unmarshal(raw, &v); err != nil {
				return nil, fmt.Errorf("%s: %w", k.key, err)
			}
			s := make([]string, len(v))
			for i, o := range v {
				t, err := o.text()
				if err != nil {
					return nil, fmt.Errorf("%s: %w", k.key, err)
				}
				s[i] = t
			}
			return s, nil
		}
		ks, err := texts(rawKey)
		if err != nil {
			return err
		}
		ms, err := texts(keys[k.mask])
		if err != nil {
			return err
		}
		parts := make([]string, len(ks))
		for i, kt := range ks {
			parts[i] = kt
			if i < len(ms) {
				parts[i] += "/" + ms[i]
			}
		}
		out[k.text] = strings.Join(parts, ",")
	}
	return nil
}

// ParseTCJSON parses `tc -s -j filter show dev DEV ingress` (iproute2's JSON:
// an array of {protocol, pref, kind, chain, options{handle, keys, skip_sw,
// in_hw, in_hw_count, not_in_hw, actions[{order, kind, last_used,
// stats{bytes, packets, sw_bytes, sw_packets, hw_bytes, hw_packets}}]}}; u32
// has "fh" instead of "handle", and its hash tables carry "ht_divisor" and
// are skipped). "[]" is an empty dump.
func ParseTCJSON(data []byte) (TCDump, error) {
	dump := TCDump{Format: "json", Filters: []TCFilter{}}
	var raw []tcJSONFilter
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&raw); err != nil {
		return dump, fmt.Errorf("tc JSON: %w", err)
	}
	if _, err := dec.Token(); err == nil {
		return dump, errors.New("tc JSON: unexpected data after the filter array")
	}
	for i, r := range raw {
		if r.Options == nil {
			continue // chain head: "filter protocol ip pref 2 flower chain 0"
		}
		if len(r.Options.HTDivisor) > 0 {
			continue // u32 hash table: holds nodes, matches nothing itself
		}
		f := TCFilter{
			Protocol: r.Protocol, Pref: r.Pref, Kind: r.Kind, Chain: r.Chain, Block: r.Block,
			SkipSW: r.Options.SkipSW, SkipHW: r.Options.SkipHW,
			InHW: r.Options.InHW, NotInHW: r.Options.NotInHW, InHWCount: -1,
		}
		if r.Options.InHWCount != nil {
			f.InHWCount = *r.Options.InHWCount
		}
		handle := r.Options.Handle
		if len(handle) == 0 {
			handle = r.Options.FH
		}
		if len(handle) > 0 {
			var s string
			if err := json.Unmarshal(handle, &s); err == nil {
				f.Handle = s
			} else {
				var n uint64
				if err := json.Unmarshal(handle, &n); err != nil {
					return dump, fmt.Errorf("tc JSON: filter %d (pref %d): handle %s: not a number or string", i, r.Pref, handle)
				}
				f.Handle = strconv.FormatUint(n, 10)
			}
		}
		if len(r.Options.Keys) > 0 {
			f.Keys = map[string]string{}
			for k, v := range r.Options.Keys {
				var s string
				if err := json.Unmarshal(v, &s); err == nil {
					f.Keys[k] = s
				} else {
					f.Keys[k] = string(bytes.TrimSpace(v))
				}
			}
			if err := jsonEncOpts(r.Options.Keys, f.Keys); err != nil {
				return dump, fmt.Errorf("tc JSON: filter %d (pref %d): keys: %w", i, r.Pref, err)
			}
		}
		for _, a := range r.Options.Actions {
			act := TCAction{Order: a.Order, Kind: a.Kind, ToDev: a.ToDev}
			if a.Kind == "tunnel_key" {
				tk, err := a.tunnelKey()
				if err != nil {
					return dump, fmt.Errorf("tc JSON: filter %d (pref %d): action %d: %w", i, r.Pref, a.Order, err)
				}
				act.Tunnel = tk
			}
			if a.LastUsed != nil {
				act.LastUsed, act.HasLastUsed = *a.LastUsed, true
			}
			if a.Installed != nil {
				act.Installed, act.HasInstalled = *a.Installed, true
			}
			if a.FirstUsed != nil {
				act.FirstUsed, act.HasFirstUsed = *a.FirstUsed, true
			}
			if a.Control != nil && a.Control.Type == "goto" && a.Control.Chain != nil {
				c := *a.Control.Chain
				act.GotoChain = &c
			}
			if a.Stats != nil {
				act.HasStats = true
				act.Bytes, act.Packets = a.Stats.Bytes, a.Stats.Packets
				act.SWBytes, act.SWPackets = a.Stats.SWBytes, a.Stats.SWPackets
				act.HWBytes, act.HWPackets = a.Stats.HWBytes, a.Stats.HWPackets
			}
			f.Actions = append(f.Actions, act)
		}
		dump.Filters = append(dump.Filters, f)
	}
	return dump, nil
}

// tunnelKey is a JSON tunnel_key action's metadata.
func (a tcJSONAction) tunnelKey() (*TCTunnelKey, error) {
	tk := &TCTunnelKey{Mode: a.Mode, SrcIP: a.SrcIP, DstIP: a.DstIP}
	if a.KeyID != nil {
		tk.KeyID = strconv.FormatUint(*a.KeyID, 10)
	}
	if a.DstPort != nil {
		if *a.DstPort > 65535 {
			return nil, fmt.Errorf("tunnel_key dst_port %d is not a UDP port", *a.DstPort)
		}
		tk.DstPort = int(*a.DstPort)
	}
	var opts []string
	for _, g := range a.GeneveOpts {
		t, err := g.text()
		if err != nil {
			return nil, fmt.Errorf("tunnel_key geneve_opts: %w", err)
		}
		opts = append(opts, t)
	}
	tk.GeneveOpts = strings.Join(opts, ",")
	if len(a.VXLANOpts) > 0 {
		tk.VXLANOpts = strconv.FormatUint(a.VXLANOpts[0].GBP, 10)
	}
	return tk, nil
}

// ParseTCText parses the text form of `tc -s filter show dev DEV ingress`:
//
//	filter protocol ip pref 4 flower chain 0
//	filter protocol ip pref 4 flower chain 0 handle 0x1
//	  dst_mac ca:2e:a7:3f:f5:0f
//	  enc_key_id 98
//	  in_hw in_hw_count 1
//	        action order 1: mirred (Egress Redirect to device enp8s0f0_1) stolen
//	        index 4 ref 1 bind 1 installed 434 sec used 0 sec
//	        Sent 129936 bytes 1082 pkt (dropped 0, overlimits 0 requeues 0)
//	        Sent software 0 bytes 0 pkt
//	        Sent hardware 129936 bytes 1082 pkt
//
// u32 prints its node id as "fh 800::800" on the filter line, which is read
// as the handle; its hash tables ("fh 800: ht divisor 1") are skipped like
// chain heads. Empty output is an empty dump (no filters, or no ingress
// qdisc).
func ParseTCText(data []byte) (TCDump, error) {
	dump := TCDump{Format: "text", Filters: []TCFilter{}}
	var cur *TCFilter
	var act *TCAction
	sawFilter := false
	flush := func() {
		if cur != nil {
			dump.Filters = append(dump.Filters, *cur)
		}
		cur, act = nil, nil
	}
	for n, line := range strings.Split(string(data), "\n") {
		lineNo := n + 1
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		if fields[0] == "filter" {
			sawFilter = true
			flush()
			f, isHead, err := parseTCFilterLine(fields)
			if err != nil {
				return dump, fmt.Errorf("tc text: line %d %q: %w", lineNo, strings.TrimSpace(line), err)
			}
			if !isHead {
				cur = &f
			}
			continue
		}
		if cur == nil {
			if !sawFilter {
				return dump, fmt.Errorf("tc text: line %d %q: not a tc filter line", lineNo, strings.TrimSpace(line))
			}
			continue // lines under a chain head: tc prints none, tolerate
		}
		switch {
		case fields[0] == "action" && len(fields) >= 3 && fields[1] == "order":
			order, err := strconv.Atoi(strings.TrimSuffix(fields[2], ":"))
			if err != nil {
				return dump, fmt.Errorf("tc text: line %d %q: action order %q: %w", lineNo, strings.TrimSpace(line), fields[2], err)
			}
			a := TCAction{Order: order}
			if len(fields) >= 4 {
				a.Kind = fields[3]
			}
			if i := strings.Index(line, "to device "); i >= 0 {
				rest := line[i+len("to device "):]
				if j := strings.IndexAny(rest, ") "); j >= 0 {
					rest = rest[:j]
				}
				a.ToDev = rest
			}
			a.GotoChain = gotoChain(fields)
			if a.Kind == "tunnel_key" {
				a.Tunnel = &TCTunnelKey{}
				if len(fields) >= 5 {
					a.Tunnel.Mode = fields[4]
				}
			}
			cur.Actions = append(cur.Actions, a)
			act = &cur.Actions[len(cur.Actions)-1]
		case fields[0] == "Sent" && act != nil:
			if err := parseTCSent(fields, act); err != nil {
				return dump, fmt.Errorf("tc text: line %d %q: %w", lineNo, strings.TrimSpace(line), err)
			}
		case act == nil:
			parseTCKeyLine(fields, cur)
		case act.Tunnel != nil && tunnelKeyFields[fields[0]]:
			if err := parseTunnelKeyLine(fields, act.Tunnel); err != nil {
				return dump, fmt.Errorf("tc text: line %d %q: %w", lineNo, strings.TrimSpace(line), err)
			}
		default:
			parseTCTimes(fields, act)
		}
	}
	flush()
	return dump, nil
}

// tunnelKeyFields are the lines tunnel_key prints under its action line.
var tunnelKeyFields = map[string]bool{"src_ip": true, "dst_ip": true, "key_id": true, "dst_port": true, "geneve_opts": true, "geneve_opt": true, "vxlan_opts": true}

// parseTunnelKeyLine reads one "name value" line of a tunnel_key action
// ("ttl 64 pipe" and the flags are not kept).
func parseTunnelKeyLine(fields []string, tk *TCTunnelKey) error {
	if len(fields) < 2 {
		return fmt.Errorf("tunnel_key %s without a value", fields[0])
	}
	v := fields[1]
	switch fields[0] {
	case "src_ip":
		tk.SrcIP = v
	case "dst_ip":
		tk.DstIP = v
	case "key_id":
		tk.KeyID = v
	case "dst_port":
		p, err := strconv.Atoi(v)
		if err != nil || p < 0 || p > 65535 {
			return fmt.Errorf("tunnel_key dst_port %q is not a UDP port", v)
		}
		tk.DstPort = p
	case "geneve_opts", "geneve_opt":
		tk.GeneveOpts = v
	case "vxlan_opts":
		tk.VXLANOpts = v
	}
	return nil
}

// parseTCFilterLine reads "filter [parent ffff:|block N|root] protocol ip pref 4
// flower chain 0 [handle 0x1 | fh 800::800] [flags...]". isHead is true for
// the line without a handle (the chain/prio head) and for a u32 hash table.
func parseTCFilterLine(fields []string) (f TCFilter, isHead bool, err error) {
	f.InHWCount = -1
	hasHandle := false
	for i := 1; i < len(fields); i++ {
		tok := fields[i]
		next := func() (string, error) {
			if i+1 >= len(fields) {
				return "", fmt.Errorf("%q without a value", tok)
			}
			i++
			return fields[i], nil
		}
		// nextU32 reads the value of a numeric field (block, pref, chain).
		nextU32 := func() (uint32, error) {
			v, err := next()
			if err != nil {
				return 0, err
			}
			n, err := strconv.ParseUint(v, 10, 32)
			if err != nil {
				return 0, fmt.Errorf("%s %q: %w", tok, v, err)
			}
			return uint32(n), nil
		}
		switch tok {
		case "block":
			if f.Block, err = nextU32(); err != nil {
				return f, false, err
			}
		case "parent", "hw_tc", "classid", "flowid":
			if _, err := next(); err != nil {
				return f, false, err
			}
		case "protocol":
			if f.Protocol, err = next(); err != nil {
				return f, false, err
			}
		case "pref":
			if f.Pref, err = nextU32(); err != nil {
				return f, false, err
			}
		case "chain":
			if f.Chain, err = nextU32(); err != nil {
				return f, false, err
			}
		case "handle":
			if f.Handle, err = next(); err != nil {
				return f, false, err
			}
			hasHandle = true
		case "fh":
			// u32: "fh 800::800" is a node (a rule); "fh 800:" (no node
			// part) is a hash table, reported like a chain head.
			if f.Handle, err = next(); err != nil {
				return f, false, err
			}
			hasHandle = !strings.HasSuffix(f.Handle, ":")
		case "in_hw", "not_in_hw", "skip_sw", "skip_hw", "in_hw_count":
			if tok == "in_hw_count" {
				v, err := next()
				if err != nil {
					return f, false, err
				}
				c, err := strconv.Atoi(v)
				if err != nil {
					return f, false, fmt.Errorf("in_hw_count %q: %w", v, err)
				}
				f.InHWCount = c
				continue
			}
			setTCFlag(&f, tok)
		case "root", "ingress", "egress":
		default:
			if f.Kind == "" && f.Pref != 0 {
				f.Kind = tok
			}
		}
	}
	if f.Kind == "" {
		return f, false, errors.New("no classifier kind after pref")
	}
	return f, !hasHandle, nil
}

func setTCFlag(f *TCFilter, tok string) {
	switch tok {
	case "in_hw":
		f.InHW = true
	case "not_in_hw":
		f.NotInHW = true
	case "skip_sw":
		f.SkipSW = true
	case "skip_hw":
		f.SkipHW = true
	}
}

// parseTCKeyLine reads a filter-level line before the first action: flags
// ("skip_sw", "in_hw in_hw_count 1", "not_in_hw") or a flower key "name value".
func parseTCKeyLine(fields []string, f *TCFilter) {
	isFlag := func(s string) bool {
		return s == "in_hw" || s == "not_in_hw" || s == "skip_sw" || s == "skip_hw" || s == "in_hw_count" || s == "verbose"
	}
	if isFlag(fields[0]) {
		for i := 0; i < len(fields); i++ {
			if fields[i] == "in_hw_count" && i+1 < len(fields) {
				if c, err := strconv.Atoi(fields[i+1]); err == nil {
					f.InHWCount = c
				}
				i++
				continue
			}
			setTCFlag(f, fields[i])
		}
		return
	}
	if f.Kind != "flower" || len(fields) < 2 {
		return
	}
	if f.Keys == nil {
		f.Keys = map[string]string{}
	}
	f.Keys[fields[0]] = strings.Join(fields[1:], " ")
}

// gotoChain reads "goto chain N" from an action line ("action order 2:
// gact action goto chain 2", or any action whose control is a goto, e.g.
// "ct zone 5 goto chain 2"); nil when there is none or N is not a number.
func gotoChain(fields []string) *uint32 {
	for i := 0; i+2 < len(fields); i++ {
		if fields[i] != "goto" || fields[i+1] != "chain" {
			continue
		}
		if n, err := strconv.ParseUint(fields[i+2], 10, 32); err == nil {
			c := uint32(n)
			return &c
		}
		return nil
	}
	return nil
}

// parseTCTimes reads the action's time line printed with -s, e.g.
// "index 4 ref 1 bind 1 installed 434 sec used 0 sec [firstused 430 sec]",
// keeping "installed N sec", "used N sec" and "firstused N sec". A value that is not a number
// is left unknown. A "goto chain N" control printed on a line of its own
// (gact prints its control after the kind) is read too.
func parseTCTimes(fields []string, a *TCAction) {
	if a.GotoChain == nil {
		a.GotoChain = gotoChain(fields)
	}
	for i := 0; i+2 < len(fields); i++ {
		if fields[i+2] != "sec" {
			continue
		}
		n, err := strconv.ParseUint(fields[i+1], 10, 64)
		if err != nil {
			continue
		}
		switch fields[i] {
		case "used":
			a.LastUsed, a.HasLastUsed = n, true
		case "installed":
			a.Installed, a.HasInstalled = n, true
		case "firstused":
			a.FirstUsed, a.HasFirstUsed = n, true
		}
	}
}

// parseTCSent reads "Sent N bytes M pkt (...)", "Sent software N bytes M pkt"
// and "Sent hardware N bytes M pkt".
func parseTCSent(fields []string, a *TCAction) error {
	kind := ""
	rest := fields[1:]
	if len(rest) > 0 && (rest[0] == "software" || rest[0] == "hardware") {
		kind, rest = rest[0], rest[1:]
	}
	if len(rest) < 4 || rest[1] != "bytes" || (rest[3] != "pkt" && rest[3] != "pkts") {
		return errors.New("want \"Sent [software|hardware] N bytes M pkt\"")
	}
	b, err := strconv.ParseUint(rest[0], 10, 64)
	if err != nil {
		return fmt.Errorf("bytes %q: %w", rest[0], err)
	}
	p, err := strconv.ParseUint(rest[2], 10, 64)
	if err != nil {
		return fmt.Errorf("packets %q: %w", rest[2], err)
	}
	switch kind {
	case "":
		a.Bytes, a.Packets, a.HasStats = b, p, true
	case "software":
		a.SWBytes, a.SWPackets = b, p
	case "hardware":
		a.HWBytes, a.HWPackets = b, p
	}
	return nil
}
