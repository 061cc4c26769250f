package envinfo

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// IPLinkCommand lists every link of a host with its details, as JSON: the
// input of ParseLinks.
const IPLinkCommand = "ip -j -d link show"

// Link is one link of `ip -j -d link show`, what the fleet's drift reads
// of it. Input looks like this (one element of the array; the keys are
// iproute2's, ip/ipaddress.c and ip/iplink_bond.c; see testdata/README.md):
//
//	{"ifindex":3,"ifname":"veth0","flags":[...],"mtu":9000,"master":"br0",
//	 "operstate":"UP",...,"linkinfo":{"info_kind":"veth","info_slave_kind":"bridge",...},
//	 "phys_port_name":"pf0vf0","phys_switch_id":"3ac2e20003ba0c98",
//	 "parentbus":"pci","parentdev":"0000:03:00.0"}
type Link struct {
	Index     int
	Name      string
	MTU       int
	OperState string
	// Master is the link this one is enslaved to ("bond0", "ovs-system",
	// a bridge), "" when none.
	Master string
	// Kind is linkinfo.info_kind ("bond", "veth", "bridge", "openvswitch";
	// "" for a physical port), SlaveKind linkinfo.info_slave_kind (the
	// master's kind as the slave sees it).
	Kind, SlaveKind string
	// PhysPortName and PhysSwitchID name an eswitch port: a ConnectX
	// representor's "pf0vf1" or its uplink's "p0", on the switch id the
	// ports of one eswitch share. ParentBus and ParentDev are the device
	// the link belongs to ("pci", "0000:03:00.0").
	PhysPortName, PhysSwitchID string
	ParentBus, ParentDev       string
}

type rawLink struct {
	IfIndex   *int   `json:"ifindex"`
	IfName    string `json:"ifname"`
	MTU       *int   `json:"mtu"`
	OperState string `json:"operstate"`
	Master    string `json:"master"`
	LinkInfo  *struct {
		InfoKind      string `json:"info_kind"`
		InfoSlaveKind string `json:"info_slave_kind"`
	} `json:"linkinfo"`
	PhysPortName string `json:"phys_port_name"`
	PhysSwitchID string `json:"phys_switch_id"`
	ParentBus    string `json:"parentbus"`
	ParentDev    string `json:"parentdev"`
}

// ParseLinks parses `ip -j -d link show`. Output that is not a JSON array
// of links (ip's own error message, an older ip without -j) is an error
// quoting its start; a link without a name or an MTU, and a name twice,
// are errors, all of them at once.
func ParseLinks(data []byte) ([]Link, error) {
	trimmed := bytes.TrimSpace(data)
	var raw []rawLink
	if err := json.Unmarshal(trimmed, &raw); err != nil {
		return nil, fmt.Errorf("%s: not a JSON array of links (%v): %q", IPLinkCommand, err, head(trimmed, 120))
	}
	var probs []string
	var out []Link
	seen := map[string]int{}
	for i, r := range raw {
		where := fmt.Sprintf("link %d", i+1)
		if r.IfName != "" {
			where += " (" + r.IfName + ")"
		}
		ok := true
		if r.IfName == "" {
			probs = append(probs, where+": no ifname")
			ok = false
		} else if j, dup := seen[r.IfName]; dup {
			probs = append(probs, fmt.Sprintf("%s: name given again (first as link %d)", where, j))
			ok = false
		} else {
			seen[r.IfName] = i + 1
		}
		if r.MTU == nil || *r.MTU <= 0 {
			probs = append(probs, where+": no positive mtu")
			ok = false
		}
		if !ok {
			continue
		}
		l := Link{Name: r.IfName, MTU: *r.MTU, OperState: r.OperState, Master: r.Master,
			PhysPortName: r.PhysPortName, PhysSwitchID: r.PhysSwitchID, ParentBus: r.ParentBus, ParentDev: r.ParentDev}
		if r.IfIndex != nil {
			l.Index = *r.IfIndex
		}
		if r.LinkInfo != nil {
			l.Kind, l.SlaveKind = r.LinkInfo.InfoKind, r.LinkInfo.InfoSlaveKind
		}
		out = append(out, l)
	}
	if len(probs) > 0 {
		return nil, fmt.Errorf("%s: %s", IPLinkCommand, strings.Join(probs, "; "))
	}
	return out, nil
}

func head(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "..."
	}
	return string(b)
}

// LinkNamed is the link called name in links.
func LinkNamed(links []Link, name string) (Link, bool) {
	for _, l := range links {
		if l.Name == name {
			return l, true
		}
	}
	return Link{}, false
}

// ErrNotEswitchPort is UplinkOf's error for a representor that is no
// port of a NIC's eswitch (no phys_switch_id): a veth or tap, as on the
// lab's namespace hypervisors.
var ErrNotEswitchPort = errors.New("not an eswitch port")

// vfPortName is the phys_port_name of a VF or SF representor of PF n:
// "pf0vf3", "pf1sf88", and with a controller number "c1pf0vf0".
var vfPortName = regexp.MustCompile(`^(?:c\d+)?pf(\d+)(?:vf|sf)\d+$`)

// UplinkOf is the uplink of representor rep: the port of the same eswitch
// (equal phys_switch_id) whose phys_port_name is "p<n>" for rep's
// "pf<n>vf<m>" — how mlx5 names its uplink representor, the PF's netdev
// in switchdev mode. A representor without phys_switch_id is
// ErrNotEswitchPort; one whose uplink is not among links is an error
// naming what was looked for.
func UplinkOf(links []Link, rep string) (Link, error) {
	r, ok := LinkNamed(links, rep)
	if !ok {
		return Link{}, fmt.Errorf("no link %s in %s", rep, IPLinkCommand)
	}
	if r.PhysSwitchID == "" {
		return Link{}, fmt.Errorf("%s: %w (no phys_switch_id)", rep, ErrNotEswitchPort)
	}
	m := vfPortName.FindStringSubmatch(r.PhysPortName)
	if m == nil {
		return Link{}, fmt.Errorf("%s: phys_port_name %q is no VF or SF representor's (pf<n>vf<m>)", rep, r.PhysPortName)
	}
	want := "p" + m[1]
	for _, l := range links {
		if l.PhysSwitchID == r.PhysSwitchID && l.PhysPortName == want {
			return l, nil
		}
	}
	return Link{}, fmt.Errorf("%s (%s): no link on its eswitch %s has phys_port_name %s", rep, r.PhysPortName, r.PhysSwitchID, want)
}

// BondOf is the bond l is enslaved to, false when l's master is none or
// no bond.
func BondOf(links []Link, l Link) (Link, bool) {
	if l.Master == "" {
		return Link{}, false
	}
	m, ok := LinkNamed(links, l.Master)
	if !ok || m.Kind != "bond" {
		return Link{}, false
	}
	return m, true
}

// pciAddress is a PCI device address as ethtool -i's bus-info and
// devlink's handles write it: domain:bus:device.function.
var pciAddress = regexp.MustCompile(`^[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$`)

// IsPCIAddress reports whether s is a PCI address ("0000:03:00.0").
func IsPCIAddress(s string) bool { return pciAddress.MatchString(s) }
