package offload

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"
)

// Two samples of a device are compared rule by rule, and a rule is more
// than its place (kind, chain, pref, handle, protocol): its match, what its
// actions do (the device it redirects to, the tunnel it encapsulates into)
// and its age are part of it too. OVS modifies a datapath flow by deleting
// its tc rule and adding a new one (lib/netdev-offload-tc.c
// netdev_tc_flow_put, "updating old handle"), and the kernel gives the new
// one the lowest free handle, often the old one's: a rule younger than
// itself in the first sample, or whose counters went down, is that new
// rule, and all it counted, it counted since the first sample. A rule whose
// place held another match, whose actions changed while its age did not, or
// that is older than the sampling span allows, is no rule of that device's
// history: the two samples are then refused as a pair, naming what differs
// (a file of another hypervisor handed to tools/evidence, a dump of the
// wrong host). So are two samples whose local tunnel endpoints (decap
// enc_dst_ip, encap tunnel_key src_ip: the host's own VTEP) or shared
// blocks have nothing in common.

// tcAgeSlack is what a rule's age may exceed the sampling span by and still
// be younger than it: tc prints ages in whole seconds rounded down, and the
// span the harness measures already runs from the first dump's start to the
// last dump's end.
const tcAgeSlack = 2 * time.Second

// tcMatch is how one rule of the last sample stands to the first sample.
type tcMatch struct {
	// prev is the same rule in the first sample; nil when it is not there.
	prev *TCFilter
	// replaced says why the rule is a new one at the place of a rule of
	// the first sample: everything it counted, it counted since then.
	replaced string
	// note names another rule that held its place in the first sample.
	note string
}

// tcPairing is the last sample's rules matched to the first's, or why the
// two are not samples of the same rules.
type tcPairing struct {
	matches []tcMatch // one per filter of the last sample
	refused []string
}

// pairTC matches the last sample's rules to the first's. span is the
// measured time between them (0: unknown, and then no age is checked
// against it).
func pairTC(first, last TCDump, span time.Duration) tcPairing {
	p := tcPairing{matches: make([]tcMatch, len(last.Filters))}
	p.refused = append(p.refused, disjoint("local tunnel endpoint", localEndpoints(first), localEndpoints(last))...)
	p.refused = append(p.refused, disjoint("shared block", blocks(first), blocks(last))...)
	keys, _ := keyedFilters(last)
	_, byKey := keyedFilters(first)
	spanKnown := span > 0
	for i, f := range last.Filters {
		was, ok := byKey[keys[i]]
		switch {
		case !ok:
			continue
		case f.Handle == "":
			// Without a handle rules pair up by their order in the
			// dump, which churn shifts: no place to compare them by.
			p.matches[i].prev = &was
			continue
		}
		place := fmt.Sprintf("chain %d pref %d handle %s", f.Chain, f.Pref, f.Handle)
		n1, ok1 := was.installedAgo()
		n2, ok2 := f.installedAgo()
		younger := ok1 && ok2 && n2 < n1
		tooOld := spanKnown && ok2 && time.Duration(n2)*time.Second > span+tcAgeSlack
		age := func() string {
			if !ok2 {
				return "tc printed no installed time"
			}
			s := fmt.Sprintf("installed %d s ago", n2)
			if ok1 {
				s = fmt.Sprintf("installed %d s ago in the first sample and %d s ago in the last", n1, n2)
			}
			if spanKnown {
				s += fmt.Sprintf(", %s apart", span.Round(100*time.Millisecond))
			}
			return s
		}
		m, a := matchText(was), matchText(f)
		w1, w2 := actionText(was), actionText(f)
		switch {
		case m != a && tooOld:
			p.refused = append(p.refused, fmt.Sprintf("%s matches %s in the first sample and %s in the last, %s: older than the span, so not a rule added since", place, m, a, age()))
		case m != a:
			p.matches[i].note = fmt.Sprintf("another rule (%s) held this place in the first sample", m)
		case w1 != w2 && (younger || (spanKnown && ok2 && !tooOld)):
			p.matches[i].replaced = fmt.Sprintf("replaced since the first sample (%s; its actions were %s): its own counters counted", age(), w1)
		case w1 != w2:
			p.refused = append(p.refused, fmt.Sprintf("%s (%s) does %s in the first sample and %s in the last, %s: not the same rule, and not one added since", place, a, w1, w2, age()))
		case younger:
			p.matches[i].replaced = fmt.Sprintf("replaced since the first sample (%s; its counters restarted): its own counters counted", age())
		case f.restarted(was) && tooOld:
			p.refused = append(p.refused, fmt.Sprintf("%s (%s): its counters went down, yet it is %s: older than the span, so neither the same rule nor one added since", place, a, age()))
		case f.restarted(was):
			p.matches[i].replaced = fmt.Sprintf("replaced since the first sample (its counters went down; %s): its own counters counted", age())
		default:
			p.matches[i].prev = &was
		}
	}
	return p
}

// matchText is a filter's match keys in one stable line.
func matchText(f TCFilter) string {
	if len(f.Keys) == 0 {
		return "no key"
	}
	ks := slices.Sorted(maps.Keys(f.Keys))
	parts := make([]string, len(ks))
	for i, k := range ks {
		parts[i] = k + " " + f.Keys[k]
	}
	return strings.Join(parts, ", ")
}

// actionText is what a filter's actions do, in one stable line: kinds,
// redirect targets, tunnel metadata and gotos (not counters or times).
func actionText(f TCFilter) string {
	parts := make([]string, 0, len(f.Actions))
	for _, a := range f.Actions {
		x := a.Kind
		if a.ToDev != "" {
			x += " to " + a.ToDev
		}
		if tk := a.Tunnel; tk != nil {
			x += fmt.Sprintf(" %s src_ip %s dst_ip %s key_id %s dst_port %d", tk.Mode, tk.SrcIP, tk.DstIP, tk.KeyID, tk.DstPort)
			if tk.GeneveOpts != "" {
				x += " geneve_opts " + tk.GeneveOpts
			}
		}
		if a.GotoChain != nil {
			x += fmt.Sprintf(" goto chain %d", *a.GotoChain)
		}
		parts = append(parts, x)
	}
	if len(parts) == 0 {
		return "no action"
	}
	return strings.Join(parts, ", ")
}

// localEndpoints are the host's own tunnel addresses a dump names: the
// outer destination a decap rule matches (enc_dst_ip) and the outer source
// an encap rule sets (tunnel_key set src_ip).
func localEndpoints(d TCDump) map[string]bool {
	out := map[string]bool{}
	for _, f := range d.Filters {
		if ip := f.Keys["enc_dst_ip"]; ip != "" {
			out[ip] = true
		}
		for _, a := range f.Actions {
			if a.Tunnel != nil && a.Tunnel.Mode == "set" && a.Tunnel.SrcIP != "" {
				out[a.Tunnel.SrcIP] = true
			}
		}
	}
	return out
}

// blocks are the shared blocks a dump's filters are on.
func blocks(d TCDump) map[string]bool {
	out := map[string]bool{}
	for _, f := range d.Filters {
		if f.Block != 0 {
			out[fmt.Sprint(f.Block)] = true
		}
	}
	return out
}

// disjoint names two non-empty sets with nothing in common.
func disjoint(what string, first, last map[string]bool) []string {
	if len(first) == 0 || len(last) == 0 {
		return nil
	}
	for k := range first {
		if last[k] {
			return nil
		}
	}
	list := func(m map[string]bool) string {
		s := slices.Collect(maps.Keys(m))
		sort.Strings(s)
		return strings.Join(s, ", ")
	}
	return []string{fmt.Sprintf("%s %s in the first sample, %s in the last", what, list(first), list(last))}
}
