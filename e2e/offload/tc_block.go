package offload

import (
	"encoding/json"
	"fmt"
)

// TCBlock is what is known of a shared tc block: the ports whose hardware
// must hold each of its rules, and how they were learned.
type TCBlock struct {
	Ports []string `json:"ports"`
	From  string   `json:"from"`
}

// LinkDetailsCommand lists every link with its kind and master: what
// ParseBlocks reads.
const LinkDetailsCommand = "ip -j -d link show"

// ParseBlocks reads `ip -j -d link show` for the shared blocks OVS makes:
// a LAG (bond or team) attached to OVS gets an ingress block named after
// its ifindex (lib/netdev-linux.c netdev_linux_get_block_id) and OVS binds
// its members to the same block (netdev_linux_update_lag), so each
// member's driver holds the block's rules, and a rule in all of them has
// in_hw_count = the number of members. Only such LAGs are returned; a
// block that is no LAG's stays unknown.
//
//	[{"ifindex":9,"ifname":"bond0","master":"ovs-system","linkinfo":{"info_kind":"bond",...}},
//	 {"ifindex":4,"ifname":"enp8s0f0np0","master":"bond0","linkinfo":{"info_slave_kind":"bond",...}}, ...]
func ParseBlocks(data []byte) (map[uint32]TCBlock, error) {
	var links []struct {
		Ifindex  uint32 `json:"ifindex"`
		Ifname   string `json:"ifname"`
		Master   string `json:"master"`
		Linkinfo *struct {
			Kind string `json:"info_kind"`
		} `json:"linkinfo"`
	}
	if err := json.Unmarshal(data, &links); err != nil {
		return nil, fmt.Errorf("ip -j -d link: %w", err)
	}
	members := map[string][]string{}
	for _, l := range links {
		if l.Master != "" {
			members[l.Master] = append(members[l.Master], l.Ifname)
		}
	}
	out := map[uint32]TCBlock{}
	for _, l := range links {
		if l.Linkinfo == nil || (l.Linkinfo.Kind != "bond" && l.Linkinfo.Kind != "team") || len(members[l.Ifname]) == 0 || l.Ifindex == 0 {
			continue
		}
		out[l.Ifindex] = TCBlock{Ports: members[l.Ifname],
			From: fmt.Sprintf("the members of %s %s (ifindex %d: OVS names a LAG's block after it), from ip -d link", l.Linkinfo.Kind, l.Ifname, l.Ifindex)}
	}
	return out, nil
}
