package offload

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// TCDump is one `tc -s filter show dev DEV ingress` output, JSON or text.
type TCDump struct {
	Format  string     `json:"format"` // "json" or "text"
	Filters []TCFilter `json:"filters"`
}

// TCFilter is one filter (a classifier instance with a handle). The chain
// head lines tc prints without a handle are not filters and are skipped.
type TCFilter struct {
	Protocol string            `json:"protocol,omitempty"`
	Pref     uint32            `json:"pref"`
	Kind     string            `json:"kind"` // "flower", "matchall", "bpf", ...
	Chain    uint32            `json:"chain"`
	Handle   string            `json:"handle"`         // as tc prints it: "0x1" (text) or "1" (JSON)
	Keys     map[string]string `json:"keys,omitempty"` // flower match keys: dst_mac, src_mac, eth_type, enc_key_id, enc_dst_ip, ...
	SkipSW   bool              `json:"skip_sw,omitempty"`
	SkipHW   bool              `json:"skip_hw,omitempty"`
	InHW     bool              `json:"in_hw,omitempty"`
	NotInHW  bool              `json:"not_in_hw,omitempty"`
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
}

// HWPackets is the hardware packet count of the filter: the largest among its
// actions (tc reports the same flow stats on each action that has them).
func (f TCFilter) HWPackets() uint64 {
	var m uint64
	for _, a := range f.Actions {
		m = max(m, a.HWPackets)
	}
	return m
}

// SWPackets is the software-only packet count of the filter: packets minus
// hardware packets, largest among actions.
func (f TCFilter) SWPackets() uint64 {
	var m uint64
	for _, a := range f.Actions {
		sw := a.SWPackets
		if sw == 0 && a.Packets > a.HWPackets {
			sw = a.Packets - a.HWPackets
		}
		m = max(m, sw)
	}
	return m
}

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

func normHandle(h string) string {
	if n, err := strconv.ParseUint(h, 0, 32); err == nil {
		return strconv.FormatUint(n, 10)
	}
	return h
}

// MatchesMACs reports whether a flower filter matches one of the MACs as
// source or destination (an empty set matches every flower filter that has
// any MAC key).
func (f TCFilter) matchesMACs(set macSet) bool {
	if f.Kind != "flower" {
		return false
	}
	src, hasSrc := f.Keys["src_mac"]
	dst, hasDst := f.Keys["dst_mac"]
	if !hasSrc && !hasDst {
		return false
	}
	return (hasSrc && set.has(src)) || (hasDst && set.has(dst))
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
	Options  *tcJSONOptions `json:"options"`
}

type tcJSONOptions struct {
	Handle    json.RawMessage            `json:"handle"`
	Keys      map[string]json.RawMessage `json:"keys"`
	SkipSW    bool                       `json:"skip_sw"`
	SkipHW    bool                       `json:"skip_hw"`
	InHW      bool                       `json:"in_hw"`
	NotInHW   bool                       `json:"not_in_hw"`
	InHWCount *int                       `json:"in_hw_count"`
	Actions   []tcJSONAction             `json:"actions"`
}

type tcJSONAction struct {
	Order int    `json:"order"`
	Kind  string `json:"kind"`
	ToDev string `json:"to_dev"`
	Stats *struct {
		Bytes     uint64 `json:"bytes"`
		Packets   uint64 `json:"packets"`
		SWBytes   uint64 `json:"sw_bytes"`
		SWPackets uint64 `json:"sw_packets"`
		HWBytes   uint64 `json:"hw_bytes"`
		HWPackets uint64 `json:"hw_packets"`
	} `json:"stats"`
}

// ParseTCJSON parses `tc -s -j filter show dev DEV ingress` (iproute2's JSON:
// an array of {protocol, pref, kind, chain, options{handle, keys, skip_sw,
// in_hw, in_hw_count, not_in_hw, actions[{order, kind, stats{bytes, packets,
// sw_bytes, sw_packets, hw_bytes, hw_packets}}]}}). "[]" is an empty dump.
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
		f := TCFilter{
			Protocol: r.Protocol, Pref: r.Pref, Kind: r.Kind, Chain: r.Chain,
			SkipSW: r.Options.SkipSW, SkipHW: r.Options.SkipHW,
			InHW: r.Options.InHW, NotInHW: r.Options.NotInHW, InHWCount: -1,
		}
		if r.Options.InHWCount != nil {
			f.InHWCount = *r.Options.InHWCount
		}
		if len(r.Options.Handle) > 0 {
			var s string
			if err := json.Unmarshal(r.Options.Handle, &s); err == nil {
				f.Handle = s
			} else {
				var n uint64
				if err := json.Unmarshal(r.Options.Handle, &n); err != nil {
					return dump, fmt.Errorf("tc JSON: filter %d (pref %d): handle %s: not a number or string", i, r.Pref, r.Options.Handle)
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
		}
		for _, a := range r.Options.Actions {
			act := TCAction{Order: a.Order, Kind: a.Kind, ToDev: a.ToDev}
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

// ParseTCText parses the text form of `tc -s filter show dev DEV ingress`:
//
//	filter protocol ip pref 4 flower chain 0
//	filter protocol ip pref 4 flower chain 0 handle 0x1
//	  dst_mac ca:2e:a7:3f:f5:0f
//	  enc_key_id 98
//	  in_hw in_hw_count 1
//	        action order 1: mirred (Egress Redirect to device enp8s0f0_1) stolen
//	        Sent 129936 bytes 1082 pkt (dropped 0, overlimits 0 requeues 0)
//	        Sent software 0 bytes 0 pkt
//	        Sent hardware 129936 bytes 1082 pkt
//
// Empty output is an empty dump (no filters, or no ingress qdisc).
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
			cur.Actions = append(cur.Actions, a)
			act = &cur.Actions[len(cur.Actions)-1]
		case fields[0] == "Sent" && act != nil:
			if err := parseTCSent(fields, act); err != nil {
				return dump, fmt.Errorf("tc text: line %d %q: %w", lineNo, strings.TrimSpace(line), err)
			}
		case act == nil:
			parseTCKeyLine(fields, cur)
		}
	}
	flush()
	return dump, nil
}

// parseTCFilterLine reads "filter [parent ffff:|block N|root] protocol ip pref 4
// flower chain 0 [handle 0x1] [flags...]". isHead is true for the line without
// a handle (the chain/prio head).
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
		switch tok {
		case "parent", "block", "hw_tc", "classid", "flowid":
			if _, err := next(); err != nil {
				return f, false, err
			}
		case "protocol":
			if f.Protocol, err = next(); err != nil {
				return f, false, err
			}
		case "pref":
			v, err := next()
			if err != nil {
				return f, false, err
			}
			p, err := strconv.ParseUint(v, 10, 32)
			if err != nil {
				return f, false, fmt.Errorf("pref %q: %w", v, err)
			}
			f.Pref = uint32(p)
		case "chain":
			v, err := next()
			if err != nil {
				return f, false, err
			}
			c, err := strconv.ParseUint(v, 10, 32)
			if err != nil {
				return f, false, fmt.Errorf("chain %q: %w", v, err)
			}
			f.Chain = uint32(c)
		case "handle":
			if f.Handle, err = next(); err != nil {
				return f, false, err
			}
			hasHandle = true
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
}

type tcDeviceState int

const (
	tcEmpty     tcDeviceState = iota // no rule for the guests' MACs: neutral
	tcSoftware                       // rules for the guests' MACs, not in hardware
	tcOffloaded                      // rules in hardware, hardware counters growing
	tcUnsure                         // contradictory or unreadable
)

// JudgeTC decides the TC check from the observations of every device
// (representor and VXLAN device) and the guests' MACs.
//
// Per device: a tool problem is inconclusive; no flower rule for the guests'
// MACs is neutral (an absent ingress qdisc means OVS never attached TC offload
// to the port); matching rules all not in hardware (not_in_hw, skip_hw) are
// software; matching rules all in hardware (in_hw / in_hw_count > 0) whose
// hardware packet counters grew between the first and last sample (or, with
// one sample, are non-zero) are offloaded; in hardware but with static
// counters, more software than hardware packets, rules without in_hw
// information, or a mix of in- and not-in-hardware rules are inconclusive.
//
// Overall: any inconclusive device makes the check inconclusive; offloaded
// and software devices together are inconclusive; at least one offloaded
// device and otherwise neutral ones are offloaded; all neutral or software is
// software.
func JudgeTC(obs []TCObservation, macs []string) (Verdict, string) {
	set, err := newMACSet(macs)
	if err != nil {
		return Inconclusive, "bad guest MAC: " + err.Error()
	}
	if len(obs) == 0 {
		return Inconclusive, "no device was examined"
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
		return Inconclusive, reason
	case count[tcOffloaded] > 0 && count[tcSoftware] > 0:
		return Inconclusive, "some devices offload the guests' flows and others do not: " + reason
	case count[tcOffloaded] > 0:
		return Offloaded, reason
	default:
		return Software, reason
	}
}

func judgeTCDevice(o TCObservation, set macSet) (tcDeviceState, string) {
	if o.Problem != "" {
		return tcUnsure, o.Problem
	}
	if len(o.Samples) == 0 {
		return tcUnsure, "no tc sample"
	}
	last := o.Samples[len(o.Samples)-1]
	first := o.Samples[0]
	var match []TCFilter
	flower := 0
	for _, f := range last.Filters {
		if f.Kind == "flower" {
			flower++
		}
		if f.matchesMACs(set) {
			match = append(match, f)
		}
	}
	if len(match) == 0 {
		switch {
		case o.IngressQdisc != nil && !*o.IngressQdisc:
			return tcEmpty, "no ingress qdisc: OVS has not attached TC offload to this port"
		case flower == 0:
			return tcEmpty, fmt.Sprintf("no flower rule (%d filters)", len(last.Filters))
		default:
			return tcEmpty, fmt.Sprintf("%d flower rules, none matches %s", flower, set)
		}
	}
	prev := map[string]TCFilter{}
	for _, f := range first.Filters {
		prev[f.id()] = f
	}
	var inHW, notInHW, unknown []TCFilter
	for _, f := range match {
		switch {
		case f.NotInHW || f.SkipHW || f.InHWCount == 0:
			notInHW = append(notInHW, f)
		case f.InHW || f.InHWCount > 0:
			inHW = append(inHW, f)
		default:
			unknown = append(unknown, f)
		}
	}
	var hwDelta, swDelta, hwTotal uint64
	for _, f := range match {
		p := prev[f.id()] // zero value when the rule appeared after the first sample
		hwTotal += f.HWPackets()
		if len(o.Samples) > 1 {
			hwDelta += sub(f.HWPackets(), p.HWPackets())
			swDelta += sub(f.SWPackets(), p.SWPackets())
		}
	}
	desc := func(fs []TCFilter) string {
		var s []string
		for _, f := range fs {
			s = append(s, f.describe())
		}
		sort.Strings(s)
		return strings.Join(s, "; ")
	}
	switch {
	case len(unknown) > 0:
		return tcUnsure, fmt.Sprintf("%d matching flower rules without in_hw/not_in_hw information (tc or kernel too old?): %s", len(unknown), desc(unknown))
	case len(inHW) > 0 && len(notInHW) > 0:
		return tcUnsure, fmt.Sprintf("mixed: %d matching rules in hardware, %d not in hardware: %s", len(inHW), len(notInHW), desc(notInHW))
	case len(notInHW) > 0:
		return tcSoftware, fmt.Sprintf("%d matching flower rules, none in hardware (not_in_hw/skip_hw): %s", len(notInHW), desc(notInHW))
	}
	if len(o.Samples) == 1 {
		if hwTotal > 0 {
			return tcOffloaded, fmt.Sprintf("%d matching rules in hardware, %d hardware packets (one sample: growth not verified): %s", len(inHW), hwTotal, desc(inHW))
		}
		return tcUnsure, fmt.Sprintf("%d matching rules in hardware but no hardware packets: %s", len(inHW), desc(inHW))
	}
	switch {
	case hwDelta == 0:
		return tcUnsure, fmt.Sprintf("%d matching rules in hardware but hardware packet counters did not grow over %d samples (total %d): %s", len(inHW), len(o.Samples), hwTotal, desc(inHW))
	case swDelta > hwDelta:
		return tcUnsure, fmt.Sprintf("%d matching rules in hardware, but software packets grew more (+%d) than hardware packets (+%d): %s", len(inHW), swDelta, hwDelta, desc(inHW))
	}
	return tcOffloaded, fmt.Sprintf("%d matching rules in hardware, hardware packets +%d over %d samples (software +%d): %s", len(inHW), hwDelta, len(o.Samples), swDelta, desc(inHW))
}

func sub(a, b uint64) uint64 {
	if a > b {
		return a - b
	}
	return 0
}
