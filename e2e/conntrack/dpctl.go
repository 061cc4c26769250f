package conntrack

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// DPCtlCommand prints OVS's own view of the conntrack table: on the
// userspace datapath (netdev, the lab's) the table itself, which the
// kernel's /proc/net/nf_conntrack does not hold.
const DPCtlCommand = "ovs-appctl dpctl/dump-conntrack"

// ParseDPCtl reads `ovs-appctl dpctl/dump-conntrack` (with or without -m):
//
//	tcp,orig=(src=198.18.212.1,dst=198.18.212.2,sport=44142,dport=5201),reply=(src=198.18.212.2,dst=198.18.212.1,sport=5201,dport=44142),zone=1,protoinfo=(state=ESTABLISHED)
//
// OVS prints no offload status here (lib/ct-dpif.h's CT_DPIF_STATUS_FLAGS
// end at UNTRACKED), so every entry is OffloadNone: read it for the
// userspace datapath, whose conntrack is software by construction; on the
// kernel datapath read ReadCommand, whose flags say what the kernel knows.
// A TCP entry's State is protoinfo's state, or state_orig when both
// directions agree (-m). Every bad line is named, all at once.
func ParseDPCtl(data []byte) ([]Entry, error) {
	return parseLines(data, "dpctl/dump-conntrack", func(string) bool { return false }, parseDPCtlLine)
}

// splitTop splits s at the commas outside parentheses.
func splitTop(s string) ([]string, error) {
	var parts []string
	depth, start := 0, 0
	for i, r := range s {
		switch r {
		case '(':
			depth++
		case ')':
			depth--
			if depth < 0 {
				return nil, errors.New("unbalanced parentheses")
			}
		case ',':
			if depth == 0 {
				parts = append(parts, s[start:i])
				start = i + 1
			}
		}
	}
	if depth != 0 {
		return nil, errors.New("unbalanced parentheses")
	}
	return append(parts, s[start:]), nil
}

// dpctlProtos maps OVS's protocol names to IP protocol numbers.
var dpctlProtos = map[string]int{"tcp": 6, "udp": 17, "icmp": 1, "icmpv6": 58, "sctp": 132, "udplite": 136}

func parseDPCtlLine(line string) (Entry, error) {
	e := Entry{Timeout: -1, Offload: OffloadNone}
	parts, err := splitTop(line)
	if err != nil {
		return e, err
	}
	n, ok := dpctlProtos[parts[0]]
	if !ok {
		if n, err = strconv.Atoi(parts[0]); err != nil {
			return e, fmt.Errorf("want a protocol, got %q", parts[0])
		}
	}
	e.Proto, e.ProtoNum = parts[0], n
	var stateOrig, stateReply string
	tuples := 0
	for _, p := range parts[1:] {
		k, v, ok := strings.Cut(p, "=")
		if !ok {
			return e, fmt.Errorf("unexpected %q", p)
		}
		switch k {
		case "orig", "reply":
			t, err := parseDPCtlTuple(v)
			if err != nil {
				return e, fmt.Errorf("%s: %w", k, err)
			}
			tuples++
			if k == "orig" {
				e.Orig = t
			} else {
				e.Reply = t
			}
		case "zone":
			z, err := strconv.Atoi(v)
			if err != nil {
				return e, fmt.Errorf("zone %q", v)
			}
			e.Zone = z
		case "mark":
			m, err := strconv.ParseUint(v, 0, 64)
			if err != nil {
				return e, fmt.Errorf("mark %q", v)
			}
			e.Mark = m
		case "timeout":
			t, err := strconv.Atoi(v)
			if err != nil {
				return e, fmt.Errorf("timeout %q", v)
			}
			e.Timeout = t
		case "protoinfo":
			inner, err := splitTop(strings.TrimSuffix(strings.TrimPrefix(v, "("), ")"))
			if err != nil {
				return e, err
			}
			for _, kv := range inner {
				ik, iv, _ := strings.Cut(kv, "=")
				switch ik {
				case "state":
					e.State = iv
				case "state_orig":
					stateOrig = iv
				case "state_reply":
					stateReply = iv
				}
			}
		default: // id, status, labels, helper, ...: not needed
		}
	}
	if e.State == "" && stateOrig != "" && stateOrig == stateReply {
		e.State = stateOrig
	}
	if tuples != 2 || !e.Orig.Src.IsValid() || !e.Reply.Src.IsValid() {
		return e, errors.New("want an orig and a reply tuple with addresses")
	}
	return e, nil
}

func parseDPCtlTuple(v string) (Tuple, error) {
	var t Tuple
	if !strings.HasPrefix(v, "(") || !strings.HasSuffix(v, ")") {
		return t, fmt.Errorf("want (...), got %q", v)
	}
	for _, kv := range strings.Split(v[1:len(v)-1], ",") {
		k, val, ok := strings.Cut(kv, "=")
		if !ok {
			return t, fmt.Errorf("unexpected %q", kv)
		}
		switch k {
		case "src":
			a, err := netip.ParseAddr(val)
			if err != nil {
				return t, fmt.Errorf("src %q: %w", val, err)
			}
			t.Src = a
		case "dst", "sport", "dport", "type", "code", "id", "packets", "bytes":
			if err := setField(&t, k, val); err != nil {
				return t, err
			}
		}
	}
	if !t.Src.IsValid() || !t.Dst.IsValid() {
		return t, errors.New("a tuple without src or dst")
	}
	return t, nil
}
