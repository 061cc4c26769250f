package offload

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// OVS's own view of its datapath flow table, for the rule-scale profile
// (issue 38 item 3): how many datapath flows exist, the dynamic flow limit
// the revalidators enforce, and how long their last dump took. The format
// is the same in OVS 2.17 and 3.x (ofproto/ofproto-dpif-upcall.c,
// upcall_unixctl_show, identical in v2.17.12 and v3.3.0; see
// testdata/scale/README.md).

// UpcallCommand reads `ovs-appctl upcall/show`; ovs-appctl waits at most
// appctlSecs. It starts with ovs-appctl, so hypervisors.ovs_command_prefix
// (or the OVS pod) applies.
func UpcallCommand(appctlSecs int) string {
	return fmt.Sprintf("ovs-appctl --timeout=%d -t ovs-vswitchd upcall/show", appctlSecs)
}

// UpcallDatapath is one datapath's block of `ovs-appctl upcall/show`.
type UpcallDatapath struct {
	// Name is the datapath, "system@ovs-system" (kernel) or
	// "netdev@ovs-netdev" (userspace).
	Name string
	// Current, Avg and Max are the datapath flow counts: now, the
	// revalidators' running average and the highest they saw.
	Current, Avg, Max uint64
	// Limit is the dynamic flow limit: other_config:flow-limit at most
	// (default 200000), cut when a dump takes over 1.3 s, and at least 1000
	// unless flow-limit is lower. New flows are refused while Current ≥ Limit.
	Limit uint64
	// Offloaded is "offloaded flows : N", which OVS prints only when the
	// datapath counts its offloaded flows (HasOffloaded); OVS after 3.5
	// prints it only when N > 0.
	Offloaded    uint64
	HasOffloaded bool
	// DumpDuration is the revalidators' last dump of the flow table.
	DumpDuration time.Duration
	UFID         bool
	// Revalidators are the "<id>: (keys <n>)" lines: each revalidator
	// thread's id and the flow keys (ukeys) it owns.
	Revalidators []UpcallRevalidator
}

// UpcallRevalidator is one "<id>: (keys <n>)" line.
type UpcallRevalidator struct {
	ID   int
	Keys uint64
}

// AtLimit says whether the datapath is at its dynamic flow limit: new
// flows are then handled in userspace and not installed.
func (d UpcallDatapath) AtLimit() bool { return d.Limit > 0 && d.Current >= d.Limit }

// Keys is the flow keys of all revalidators: the flows OVS tracks.
func (d UpcallDatapath) Keys() uint64 {
	var n uint64
	for _, r := range d.Revalidators {
		n += r.Keys
	}
	return n
}

// ParseUpcallShow reads upcall/show, one block per datapath:
//
//	netdev@ovs-netdev:
//	  flows         : (current 2000) (avg 1999) (max 2000) (limit 35000)
//	  dump duration : 4ms
//	  ufid enabled : true
//
//	  5: (keys 2000)
//
// (a kernel datapath with offload adds "  offloaded flows : N" after the
// flows line). Each block needs its flows, dump duration and ufid lines; a
// field given twice, a line outside a block and a line it does not know
// are errors, all named at once with their line numbers. An output with
// no datapath (no bridge yet, or cut short) is an error too: the profile
// needs one.
func ParseUpcallShow(out string) ([]UpcallDatapath, error) {
	var dps []UpcallDatapath
	var bad []string
	seen := map[string]bool{}
	finish := func() {
		if len(dps) == 0 {
			return
		}
		d := dps[len(dps)-1]
		for _, f := range []string{"flows", "dump duration", "ufid enabled"} {
			if !seen[f] {
				bad = append(bad, fmt.Sprintf("datapath %s: no %q line", d.Name, f))
			}
		}
	}
	for i, line := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		n := i + 1
		t := strings.TrimSpace(line)
		if t == "" {
			continue
		}
		if !strings.HasPrefix(line, " ") && strings.HasSuffix(t, ":") {
			name := strings.TrimSuffix(t, ":")
			if !strings.Contains(name, "@") || strings.ContainsAny(name, " \t") {
				bad = append(bad, fmt.Sprintf("line %d: %q is not \"<type>@<datapath>:\"", n, clip(line)))
				continue
			}
			finish()
			dps = append(dps, UpcallDatapath{Name: name})
			seen = map[string]bool{}
			continue
		}
		if len(dps) == 0 {
			bad = append(bad, fmt.Sprintf("line %d: %q before any \"<datapath>:\" line", n, clip(line)))
			continue
		}
		d := &dps[len(dps)-1]
		field, err := upcallLine(t, d)
		switch {
		case err != nil:
			bad = append(bad, fmt.Sprintf("line %d: %q: %v", n, clip(line), err))
		case field == "revalidator":
		case seen[field]:
			bad = append(bad, fmt.Sprintf("line %d: datapath %s: %q given twice", n, d.Name, field))
		default:
			seen[field] = true
		}
	}
	finish()
	if len(dps) == 0 && len(bad) == 0 {
		bad = append(bad, fmt.Sprintf("no datapath in %q (no bridge yet, or the output was cut short)", clip(out)))
	}
	if len(bad) > 0 {
		return nil, fmt.Errorf("ovs-appctl upcall/show: %s", strings.Join(bad, "; "))
	}
	return dps, nil
}

// upcallLine reads one line inside a datapath's block into d and names
// the field it set ("revalidator" for a "<id>: (keys <n>)" line, which
// may repeat).
func upcallLine(t string, d *UpcallDatapath) (string, error) {
	key, val, ok := strings.Cut(t, ":")
	if !ok {
		return "", fmt.Errorf("not \"<field> : <value>\"")
	}
	key, val = strings.TrimSpace(key), strings.TrimSpace(val)
	switch key {
	case "flows":
		v, err := parenFields(val, "current", "avg", "max", "limit")
		if err != nil {
			return "", err
		}
		d.Current, d.Avg, d.Max, d.Limit = v[0], v[1], v[2], v[3]
		return key, nil
	case "offloaded flows":
		v, err := strconv.ParseUint(val, 10, 64)
		if err != nil {
			return "", fmt.Errorf("offloaded flows %q is not a count", val)
		}
		d.Offloaded, d.HasOffloaded = v, true
		return key, nil
	case "dump duration":
		ms, ok := strings.CutSuffix(val, "ms")
		v, err := strconv.ParseInt(ms, 10, 64)
		if !ok || err != nil || v < 0 || v > int64(24*time.Hour/time.Millisecond) {
			return "", fmt.Errorf("dump duration %q is not <milliseconds>ms", val)
		}
		d.DumpDuration = time.Duration(v) * time.Millisecond
		return key, nil
	case "ufid enabled":
		switch val {
		case "true":
			d.UFID = true
		case "false":
			d.UFID = false
		default:
			return "", fmt.Errorf("ufid enabled %q is not true or false", val)
		}
		return key, nil
	}
	id, err := strconv.Atoi(key)
	if err != nil || id < 0 {
		return "", fmt.Errorf("unknown field %q", key)
	}
	v, err := parenFields(val, "keys")
	if err != nil {
		return "", err
	}
	for _, r := range d.Revalidators {
		if r.ID == id {
			return "", fmt.Errorf("revalidator %d listed twice", id)
		}
	}
	d.Revalidators = append(d.Revalidators, UpcallRevalidator{ID: id, Keys: v[0]})
	return "revalidator", nil
}

// parenFields reads "(<name0> <n>) (<name1> <n>) ..." with exactly the
// names given, in that order.
func parenFields(s string, names ...string) ([]uint64, error) {
	want := "(" + strings.Join(names, " <n>) (") + " <n>)"
	out := make([]uint64, 0, len(names))
	rest := strings.TrimSpace(s)
	for _, name := range names {
		inner, after, ok := strings.Cut(strings.TrimPrefix(rest, "("), ")")
		f := strings.Fields(inner)
		if !strings.HasPrefix(rest, "(") || !ok || len(f) != 2 || f[0] != name {
			return nil, fmt.Errorf("want %s", want)
		}
		v, err := strconv.ParseUint(f[1], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%s %q is not a count", name, f[1])
		}
		out = append(out, v)
		rest = strings.TrimSpace(after)
	}
	if rest != "" {
		return nil, fmt.Errorf("want %s, then nothing; got %q after it", want, rest)
	}
	return out, nil
}
