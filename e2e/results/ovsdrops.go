package results

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// OVSDrops is what one hypervisor's ovs-vswitchd counted as dropped during
// one measured window: the growth of its drop coverage counters
// (drop_action_*, datapath_drop_*, netdev_*_drops) between a reading just
// before the window's clients started and one just after they returned.
// Drops is empty when nothing grew; Error says why there is no number (a
// reading failed, or ovs-vswitchd restarted between the two). Only OVS's
// userspace counts here: a drop in the kernel datapath or the NIC is not
// in it.
type OVSDrops struct {
	Hypervisor string            `json:"hypervisor"`
	Drops      map[string]uint64 `json:"drops,omitempty"`
	Error      string            `json:"error,omitempty"`
}

// DropsLine is the sentence for a window's OVS drops, "" when every
// hypervisor was read and none dropped: "OVS counted drops during the
// window: compute2 drop_action_of_pipeline 3" (the largest counts first),
// and, for a hypervisor not read, "OVS drop counters not read on compute1
// (<error>)".
func DropsLine(ds []OVSDrops) string {
	var parts, unread []string
	for _, d := range ds {
		switch {
		case d.Error != "":
			unread = append(unread, fmt.Sprintf("%s (%s)", d.Hypervisor, d.Error))
		case len(d.Drops) > 0:
			names := slices.Sorted(maps.Keys(d.Drops))
			slices.SortStableFunc(names, func(a, b string) int {
				switch x, y := d.Drops[a], d.Drops[b]; {
				case x > y:
					return -1
				case x < y:
					return 1
				}
				return 0
			})
			cs := make([]string, len(names))
			for i, n := range names {
				cs[i] = fmt.Sprintf("%s %d", n, d.Drops[n])
			}
			parts = append(parts, d.Hypervisor+" "+strings.Join(cs, ", "))
		}
	}
	var out []string
	if len(parts) > 0 {
		out = append(out, "OVS counted drops during the window: "+strings.Join(parts, "; "))
	}
	if len(unread) > 0 {
		out = append(out, "OVS drop counters not read on "+strings.Join(unread, ", "))
	}
	return strings.Join(out, "; ")
}
