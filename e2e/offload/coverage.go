package offload

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// OVS's own drop counters around a measured window. ovs-vswitchd counts
// the packets it drops, by reason, in its coverage counters
// (`ovs-appctl coverage/show`): drop_action_* for a datapath flow whose
// translation ended in a drop (an OpenFlow drop, and also a tunnel output
// whose next hop is not resolved yet: OVS sends its ARP request and drops
// the packet), datapath_drop_* for the userspace datapath's own failures
// (an upcall that failed, a tunnel header it could not push or pop), and
// *_drops of the netdev layer. The harness reads them on the pair's
// hypervisors just before a window's clients start and just after they
// return (e2e/harness drops.go), never during it, so a failed window can
// say which hypervisor's OVS dropped packets, and why. A kernel-datapath
// or hardware drop is not counted here: zero means OVS's userspace saw no
// drop, not that no packet was lost.

// CoverageCommand reads the coverage counters; ovs-appctl waits at most
// appctlSecs. It starts with ovs-appctl, so hypervisors.ovs_command_prefix
// (or the OVS pod) applies.
func CoverageCommand(appctlSecs int) string {
	return fmt.Sprintf("ovs-appctl --timeout=%d -t ovs-vswitchd coverage/show", appctlSecs)
}

// Coverage is one reading of `ovs-appctl coverage/show`: each counter's
// total since ovs-vswitchd started. A counter it lists as never hit is
// absent (zero).
type Coverage struct {
	Totals map[string]uint64
	// NeverHit is the count of counters the reading says were never hit.
	NeverHit int
}

// ParseCoverage reads coverage/show's output:
//
//	Event coverage, avg rate over last: 5 seconds, last minute, last hour,  hash=204c9e3b:
//	drop_action_of_pipeline    0.0/sec     0.333/sec        0.0056/sec   total: 20
//	98 events never hit
//
// The header and the "never hit" line are required (an output cut short
// has no last line); every line it does not know is an error, all named at
// once.
func ParseCoverage(out string) (Coverage, error) {
	c := Coverage{Totals: map[string]uint64{}}
	var bad []string
	header, never := false, false
	for i, line := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		t := strings.TrimSpace(line)
		switch {
		case t == "" && i > 0:
		case strings.HasPrefix(t, "Event coverage"):
			header = true
		case strings.HasSuffix(t, " events never hit"):
			n, err := strconv.Atoi(strings.TrimSuffix(t, " events never hit"))
			if err != nil || n < 0 {
				bad = append(bad, fmt.Sprintf("line %d: %q: not a count of counters never hit", i+1, clip(line)))
				continue
			}
			c.NeverHit, never = n, true
		default:
			name, total, err := coverageLine(t)
			if err != nil {
				bad = append(bad, fmt.Sprintf("line %d: %q: %v", i+1, clip(line), err))
				continue
			}
			if _, dup := c.Totals[name]; dup {
				bad = append(bad, fmt.Sprintf("line %d: counter %s listed twice", i+1, name))
				continue
			}
			c.Totals[name] = total
		}
	}
	if !header {
		bad = append(bad, fmt.Sprintf("no \"Event coverage\" header in %q", clip(out)))
	}
	if !never {
		bad = append(bad, "no \"events never hit\" line (the output was cut short)")
	}
	if len(bad) > 0 {
		return Coverage{}, fmt.Errorf("ovs-appctl coverage/show: %s", strings.Join(bad, "; "))
	}
	return c, nil
}

// coverageLine reads "<name> <r>/sec <r>/sec <r>/sec total: <n>".
func coverageLine(t string) (string, uint64, error) {
	f := strings.Fields(t)
	if len(f) != 6 || f[4] != "total:" {
		return "", 0, fmt.Errorf("want <counter> <rate>/sec <rate>/sec <rate>/sec total: <count>")
	}
	for _, r := range f[1:4] {
		if _, err := strconv.ParseFloat(strings.TrimSuffix(r, "/sec"), 64); err != nil || !strings.HasSuffix(r, "/sec") {
			return "", 0, fmt.Errorf("rate %q is not <number>/sec", r)
		}
	}
	if !validCounterName(f[0]) {
		return "", 0, fmt.Errorf("counter name %q is not [a-z0-9_]", f[0])
	}
	n, err := strconv.ParseUint(f[5], 10, 64)
	if err != nil {
		return "", 0, fmt.Errorf("total %q is not a count", f[5])
	}
	return f[0], n, nil
}

func validCounterName(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_') {
			return false
		}
	}
	return true
}

// IsDropCounter tells the counters that count dropped packets: OVS's
// drop_action_* (a flow's translation ended in a drop, with its reason)
// and datapath_drop_* (the userspace datapath's failures), and the netdev
// layer's *_drops (netdev_push_header_drops, netdev_send_prepare_drops,
// netdev_soft_seg_drops).
func IsDropCounter(name string) bool {
	return strings.HasPrefix(name, "drop_action_") || strings.HasPrefix(name, "datapath_drop_") ||
		strings.HasPrefix(name, "netdev_") && strings.HasSuffix(name, "_drops")
}

// DropsBetween is how much each drop counter grew from before to after:
// the counters that grew only (nil when none did), as results.OVSDrops
// keeps them. A drop counter that shrank means ovs-vswitchd restarted
// between the readings (its counters start again at zero): that is an
// error naming it, since the growth is then unknown.
func DropsBetween(before, after Coverage) (map[string]uint64, error) {
	var out map[string]uint64
	var shrank []string
	names := slices.Sorted(maps.Keys(after.Totals))
	for n := range before.Totals {
		if _, ok := after.Totals[n]; !ok {
			names = append(names, n)
		}
	}
	for _, n := range names {
		if !IsDropCounter(n) {
			continue
		}
		b, a := before.Totals[n], after.Totals[n]
		switch {
		case a < b:
			shrank = append(shrank, fmt.Sprintf("%s %d → %d", n, b, a))
		case a > b:
			if out == nil {
				out = map[string]uint64{}
			}
			out[n] = a - b
		}
	}
	if len(shrank) > 0 {
		slices.Sort(shrank)
		return nil, fmt.Errorf("OVS drop counters went down between the readings (ovs-vswitchd restarted?): %s", strings.Join(shrank, ", "))
	}
	return out, nil
}
