package offload

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Which tunnel a stage carries the pair's packets over. ML2/OVS tunnels
// VXLAN (vxlan_sys_<port>, UDP 4789 unless dst_port says otherwise: MOSK
// 4790); ML2/OVN tunnels Geneve (genev_sys_<port>, UDP 6081) and puts
// its logical ports in a Geneve option TLV (class 0x102, type 0x80), which
// tc prints as geneve_opts and OVS as geneve({class=0x102,...}). A stage's
// own words name its tunnel: the option TLVs, the tunnel device it
// decapsulates on or sends to, and the outer UDP port when it is the
// type's default. A run whose network type is known (network.type vxlan
// or geneve) must not take a pipeline over the other tunnel as proof: it
// would say "offloaded" of a path the run did not set out to prove.

// Tunnel shapes a stage can have besides TunnelVXLAN and TunnelGeneve.
const (
	// tunnelConflict: the stage's words name both types (geneve_opts on a
	// rule that sends to vxlan_sys_4789).
	tunnelConflict = "conflicting"
)

// tunnelHint is one word of a stage naming a tunnel type.
type tunnelHint struct {
	typ, why string
}

// tunnelShape is the type the hints agree on ("" without any hint,
// tunnelConflict when they disagree) and the hints as words.
func tunnelShape(hints []tunnelHint) (typ, why string) {
	if len(hints) == 0 {
		return "", ""
	}
	types := map[string]bool{}
	words := make([]string, 0, len(hints))
	for _, h := range hints {
		types[h.typ] = true
		words = append(words, h.why)
	}
	sort.Strings(words)
	why = strings.Join(words, ", ")
	if len(types) > 1 {
		return tunnelConflict, why
	}
	return hints[0].typ, why
}

// deviceTunnel is the type of OVS's kernel tunnel device dev
// (TunnelDeviceName), "" for another device.
func deviceTunnel(dev string) string {
	switch {
	case strings.HasPrefix(dev, "vxlan_sys_"):
		return TunnelVXLAN
	case strings.HasPrefix(dev, "genev_sys_"):
		return TunnelGeneve
	}
	return ""
}

// portTunnel is the type whose default UDP port is port (4789 VXLAN, 6081
// Geneve); "" for any other port, which says nothing by itself.
func portTunnel(port string) string {
	p, err := strconv.Atoi(strings.TrimSpace(port))
	if err != nil {
		return ""
	}
	switch p {
	case DefaultVXLANPort:
		return TunnelVXLAN
	case DefaultGenevePort:
		return TunnelGeneve
	}
	return ""
}

// tunnelTypeName names a shape in a reason: "VXLAN", "Geneve", or
// "conflicting tunnel types".
func tunnelTypeName(typ string) string {
	switch typ {
	case TunnelVXLAN, TunnelGeneve:
		return typeName(typ)
	case tunnelConflict:
		return "conflicting tunnel types"
	}
	return typ
}

// contradicts reports whether a stage over tunnel got cannot be the
// pair's traffic on a network of type want (the run's network.type): a
// VXLAN network's traffic over Geneve and the other way round, a VLAN or
// flat network's over any tunnel, and a stage whose words disagree on
// any tunnelled network. Unknown on either side contradicts nothing.
func contradicts(want, got string) bool {
	if want == "" || got == "" {
		return false
	}
	switch want {
	case TunnelVXLAN, TunnelGeneve:
		return got != want
	case "vlan", "flat":
		return true
	}
	return false
}

// tcTunnelHints are the words of a tc rule on device dev naming a tunnel:
// flower's geneve_opts / vxlan_opts keys, a decap rule (enc_* keys) on a
// tunnel device, its enc_dst_port, a tunnel_key set with options or a
// default dst_port, and a mirred to a tunnel device.
func (f TCFilter) tunnelHints(dev string) []tunnelHint {
	var h []tunnelHint
	if _, ok := f.Keys["geneve_opts"]; ok {
		h = append(h, tunnelHint{TunnelGeneve, "geneve_opts"})
	}
	if _, ok := f.Keys["vxlan_opts"]; ok {
		h = append(h, tunnelHint{TunnelVXLAN, "vxlan_opts"})
	}
	if f.isDecap() {
		if t := deviceTunnel(dev); t != "" {
			h = append(h, tunnelHint{t, "decap on " + dev})
		}
		if p, ok := f.Keys["enc_dst_port"]; ok {
			if t := portTunnel(p); t != "" {
				h = append(h, tunnelHint{t, "enc_dst_port " + p})
			}
		}
	}
	for _, a := range f.Actions {
		if tk := a.Tunnel; tk != nil && tk.Mode == "set" {
			if tk.GeneveOpts != "" {
				h = append(h, tunnelHint{TunnelGeneve, "tunnel_key set geneve_opts " + tk.GeneveOpts})
			}
			if tk.VXLANOpts != "" {
				h = append(h, tunnelHint{TunnelVXLAN, "tunnel_key set vxlan_opts " + tk.VXLANOpts})
			}
			if t := portTunnel(strconv.Itoa(tk.DstPort)); t != "" {
				h = append(h, tunnelHint{t, fmt.Sprintf("tunnel_key set dst_port %d", tk.DstPort)})
			}
		}
		if a.Kind == "mirred" {
			if t := deviceTunnel(a.ToDev); t != "" {
				h = append(h, tunnelHint{t, "mirred to " + a.ToDev})
			}
		}
	}
	return h
}

// dpctlTunnelHints are the words of a datapath flow naming a tunnel: its
// tunnel(...) match (a geneve(...) or vxlan(...) option, a default tp_dst),
// an in_port that is a tunnel device, a set(tunnel(...)) action (the same
// words), a tnl_push header (udp dst, geneve(...) / vxlan(...)) and an
// output to a tunnel device.
func (f DpctlFlow) tunnelHints() []tunnelHint {
	var h []tunnelHint
	if f.Tunnel != "" {
		h = append(h, tunnelAttrHints("tunnel", f.Tunnel)...)
	}
	if t := deviceTunnel(f.InPort); t != "" {
		h = append(h, tunnelHint{t, "in_port(" + f.InPort + ")"})
	}
	h = append(h, actionTunnelHints(f.Actions, 0)...)
	return h
}

// tunnelAttrHints reads a tunnel(...) value: "tun_id=0x5,src=..,
// tp_dst=6081,geneve({class=0x102,type=0x80,len=4,0x10002}),flags(+key)".
func tunnelAttrHints(where, v string) []tunnelHint {
	toks, err := splitTopLevel(v)
	if err != nil {
		return nil
	}
	var h []tunnelHint
	for _, t := range toks {
		t = strings.TrimSpace(t)
		switch {
		case strings.HasPrefix(t, "geneve("):
			h = append(h, tunnelHint{TunnelGeneve, where + "(.." + t + "..)"})
		case strings.HasPrefix(t, "vxlan("):
			h = append(h, tunnelHint{TunnelVXLAN, where + "(.." + t + "..)"})
		case strings.HasPrefix(t, "tp_dst="):
			p, mask, masked := strings.Cut(strings.TrimPrefix(t, "tp_dst="), "/")
			if m, err := strconv.ParseUint(mask, 0, 16); masked && (err != nil || m == 0) {
				continue // tp_dst=4790/0: the port is not matched
			}
			if typ := portTunnel(p); typ != "" {
				h = append(h, tunnelHint{typ, where + "(..tp_dst=" + p + "..)"})
			}
		}
	}
	return h
}

// actionTunnelHints reads the actions: set(tunnel(..)), tnl_push(..), and
// outputs to a tunnel device, also inside clone(..).
func actionTunnelHints(actions string, depth int) []tunnelHint {
	toks, err := splitTopLevel(actions)
	if err != nil || depth > 4 {
		return nil
	}
	var h []tunnelHint
	for _, t := range toks {
		t = strings.TrimSpace(t)
		switch {
		case strings.HasPrefix(t, "set(tunnel(") && strings.HasSuffix(t, "))"):
			h = append(h, tunnelAttrHints("set(tunnel", t[len("set(tunnel("):len(t)-2])...)
		case strings.HasPrefix(t, "tnl_push(") && strings.HasSuffix(t, ")"):
			h = append(h, tnlPushHints(t[len("tnl_push("):len(t)-1])...)
		case strings.HasPrefix(t, "clone(") && strings.HasSuffix(t, ")"):
			h = append(h, actionTunnelHints(t[len("clone("):len(t)-1], depth+1)...)
		case !strings.ContainsAny(t, "()=:"):
			if typ := deviceTunnel(t); typ != "" {
				h = append(h, tunnelHint{typ, "output to " + t})
			}
		}
	}
	return h
}

// tnlPushHints reads tnl_push's header: "tnl_port(6081),header(size=58,
// type=5,eth(..),ipv4(..),udp(src=0,dst=6081,csum=0x0),geneve(vni=0x7b,
// options(..))),out_port(100)" (lib/odp-util.c format_odp_tnl_push_header).
func tnlPushHints(v string) []tunnelHint {
	toks, err := splitTopLevel(v)
	if err != nil {
		return nil
	}
	var h []tunnelHint
	for _, t := range toks {
		t = strings.TrimSpace(t)
		if !strings.HasPrefix(t, "header(") || !strings.HasSuffix(t, ")") {
			continue
		}
		parts, err := splitTopLevel(t[len("header(") : len(t)-1])
		if err != nil {
			return h
		}
		for _, p := range parts {
			p = strings.TrimSpace(p)
			switch {
			case strings.HasPrefix(p, "geneve("):
				h = append(h, tunnelHint{TunnelGeneve, "tnl_push(..geneve(..)..)"})
			case strings.HasPrefix(p, "vxlan("):
				h = append(h, tunnelHint{TunnelVXLAN, "tnl_push(..vxlan(..)..)"})
			case strings.HasPrefix(p, "udp(") && strings.HasSuffix(p, ")"):
				for _, kv := range strings.Split(p[len("udp("):len(p)-1], ",") {
					if port, ok := strings.CutPrefix(kv, "dst="); ok {
						if typ := portTunnel(port); typ != "" {
							h = append(h, tunnelHint{typ, "tnl_push(..udp(dst=" + port + ")..)"})
						}
					}
				}
			}
		}
	}
	return h
}
