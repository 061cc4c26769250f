package offload

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/mosk-qa/asap2-e2e/e2e/remote"
)

// Commands of the VXLAN device discovery (offload.vxlan_device: auto).
const (
	// CmdVXLANTunnels lists OVS's VXLAN tunnel interfaces with their options.
	CmdVXLANTunnels = "ovs-vsctl --format=json --columns=name,type,options find Interface type=vxlan"
	// CmdBridgeDatapaths lists the bridges' datapath types ("netdev" is the
	// userspace datapath, "" or "system" the kernel one).
	CmdBridgeDatapaths = "ovs-vsctl --format=json --columns=name,datapath_type list Bridge"
	// DefaultVXLANPort is OVS's VXLAN UDP port when options:dst_port is unset.
	DefaultVXLANPort = 4789
)

// VXLANDeviceName is the kernel device OVS's kernel datapath creates for
// VXLAN tunnels on UDP port port: "vxlan_sys_<port>".
func VXLANDeviceName(port int) string { return "vxlan_sys_" + strconv.Itoa(port) }

// LinkCommand shows one link as JSON (`ip -j link show dev DEV`); it fails
// with "Device ... does not exist." when there is none.
func LinkCommand(dev string) string { return "ip -j link show dev " + remote.ShellQuote(dev) }

// OVSTable is one table printed by `ovs-vsctl --format=json`, e.g.
//
//	{"data":[["vxlan-c612010c","vxlan",["map",[["dst_port","4790"],["remote_ip","198.18.1.12"]]]]],
//	 "headings":["name","type","options"]}
//
// A cell is an OVSDB JSON value (RFC 7047): a string, number or boolean; an
// ["uuid",..] / ["named-uuid",..] pair; ["set",[atoms]] or ["map",[[k,v]...]].
type OVSTable struct {
	Headings []string            `json:"headings"`
	Data     [][]json.RawMessage `json:"data"`
}

// ParseOVSTable parses `ovs-vsctl --format=json` output (one table).
func ParseOVSTable(data []byte) (OVSTable, error) {
	var t OVSTable
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&t); err != nil {
		return OVSTable{}, fmt.Errorf("ovs-vsctl JSON table: %w", err)
	}
	if t.Headings == nil {
		return OVSTable{}, fmt.Errorf("ovs-vsctl JSON table: no headings")
	}
	for i, row := range t.Data {
		if len(row) != len(t.Headings) {
			return OVSTable{}, fmt.Errorf("ovs-vsctl JSON table: row %d has %d cells for %d headings", i, len(row), len(t.Headings))
		}
	}
	return t, nil
}

// columns are the indexes of headings hs, or an error naming what the
// table has.
func (t OVSTable) columns(hs ...string) ([]int, error) {
	idx := make([]int, len(hs))
	for j, h := range hs {
		idx[j] = slices.Index(t.Headings, h)
		if idx[j] < 0 {
			return nil, fmt.Errorf("ovs-vsctl JSON table: no column %q (columns: %s)", h, strings.Join(t.Headings, ", "))
		}
	}
	return idx, nil
}

// parseOVSRows parses a table with string cells in columns hs (the first
// is the row's name) and calls row for each, with the cells in hs's order.
func parseOVSRows(data []byte, hs []string, row func(name string, cells []json.RawMessage) error) error {
	t, err := ParseOVSTable(data)
	if err != nil {
		return err
	}
	idx, err := t.columns(hs...)
	if err != nil {
		return err
	}
	for _, r := range t.Data {
		name, err := ovsString(r[idx[0]])
		if err != nil {
			return fmt.Errorf("ovs-vsctl %s: %w", hs[0], err)
		}
		cells := make([]json.RawMessage, len(idx))
		for j, i := range idx {
			cells[j] = r[i]
		}
		if err := row(name, cells); err != nil {
			return err
		}
	}
	return nil
}

// ovsString reads a string cell; an empty set (["set",[]]) is "".
func ovsString(raw json.RawMessage) (string, error) {
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var tagged []json.RawMessage
	if err := json.Unmarshal(raw, &tagged); err == nil && len(tagged) == 2 {
		var tag string
		var items []json.RawMessage
		if json.Unmarshal(tagged[0], &tag) == nil && tag == "set" && json.Unmarshal(tagged[1], &items) == nil && len(items) == 0 {
			return "", nil
		}
	}
	return "", fmt.Errorf("not a string: %s", raw)
}

// ovsMap reads a ["map",[[k,v],...]] cell whose keys and values are strings.
func ovsMap(raw json.RawMessage) (map[string]string, error) {
	var tagged []json.RawMessage
	if err := json.Unmarshal(raw, &tagged); err != nil || len(tagged) != 2 {
		return nil, fmt.Errorf("not a map: %s", raw)
	}
	var tag string
	if err := json.Unmarshal(tagged[0], &tag); err != nil || tag != "map" {
		return nil, fmt.Errorf("not a map: %s", raw)
	}
	var pairs [][]string
	if err := json.Unmarshal(tagged[1], &pairs); err != nil {
		return nil, fmt.Errorf("map of strings: %w", err)
	}
	m := make(map[string]string, len(pairs))
	for _, p := range pairs {
		if len(p) != 2 {
			return nil, fmt.Errorf("map entry %q is not a key and a value", p)
		}
		m[p[0]] = p[1]
	}
	return m, nil
}

// VXLANTunnel is one OVS interface of type vxlan and its UDP port.
type VXLANTunnel struct {
	Name string
	// Port is options:dst_port, DefaultVXLANPort when unset; PortSet says
	// whether the option was there.
	Port    int
	PortSet bool
}

// ParseVXLANTunnels parses the output of CmdVXLANTunnels. A dst_port that is
// not a UDP port (1-65535) is an error naming the interface.
func ParseVXLANTunnels(data []byte) ([]VXLANTunnel, error) {
	var out []VXLANTunnel
	err := parseOVSRows(data, []string{"name", "type", "options"}, func(name string, c []json.RawMessage) error {
		if typ, err := ovsString(c[1]); err != nil || typ != "vxlan" {
			return fmt.Errorf("interface %s: type is not vxlan: %s", name, c[1])
		}
		opts, err := ovsMap(c[2])
		if err != nil {
			return fmt.Errorf("interface %s options: %w", name, err)
		}
		tun := VXLANTunnel{Name: name, Port: DefaultVXLANPort}
		if p, ok := opts["dst_port"]; ok {
			n, err := strconv.Atoi(p)
			if err != nil || n < 1 || n > 65535 {
				return fmt.Errorf("interface %s: options:dst_port %q is not a UDP port (1-65535)", name, p)
			}
			tun.Port, tun.PortSet = n, true
		}
		out = append(out, tun)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// VXLANPorts returns the distinct UDP ports of tunnels, ascending.
func VXLANPorts(tunnels []VXLANTunnel) []int {
	seen := map[int]bool{}
	var ports []int
	for _, t := range tunnels {
		if !seen[t.Port] {
			seen[t.Port] = true
			ports = append(ports, t.Port)
		}
	}
	sort.Ints(ports)
	return ports
}

// ParseBridgeDatapaths parses the output of CmdBridgeDatapaths: bridge name
// to datapath_type ("" when unset: the kernel datapath).
func ParseBridgeDatapaths(data []byte) (map[string]string, error) {
	out := map[string]string{}
	err := parseOVSRows(data, []string{"name", "datapath_type"}, func(name string, c []json.RawMessage) error {
		dp, err := ovsString(c[1])
		if err != nil {
			return fmt.Errorf("bridge %s datapath_type: %w", name, err)
		}
		out[name] = dp
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Userspace reports whether every bridge runs the userspace datapath
// (datapath_type netdev), so there is no kernel VXLAN device: the tunnel is
// inside ovs-vswitchd. No bridge at all is not userspace.
func Userspace(datapaths map[string]string) bool {
	if len(datapaths) == 0 {
		return false
	}
	for _, dp := range datapaths {
		if dp != "netdev" {
			return false
		}
	}
	return true
}

// ParseLinkNames parses `ip -j link show [dev DEV]`: the interface names.
func ParseLinkNames(data []byte) ([]string, error) {
	var links []struct {
		IfName string `json:"ifname"`
	}
	if err := json.Unmarshal(data, &links); err != nil {
		return nil, fmt.Errorf("ip -j link: %w", err)
	}
	names := make([]string, 0, len(links))
	for _, l := range links {
		names = append(names, l.IfName)
	}
	return names, nil
}

// AbsentDevice is a decap device the tc check should have examined but
// could not: it is an inconclusive device with Why as its reason.
type AbsentDevice struct {
	Device string
	Why    string
}

// VXLANFinding is what DiscoverVXLAN found on one hypervisor.
type VXLANFinding struct {
	Tunnels []VXLANTunnel
	Ports   []int // distinct UDP ports of Tunnels, ascending
	// Userspace: every bridge is datapath_type netdev; there is no kernel
	// VXLAN device to examine, by design.
	Userspace bool
	Devices   []string       // vxlan_sys_<port> devices present on the host
	Absent    []AbsentDevice // expected but missing, or discovery failed
	Summary   string         // one sentence: ports, devices, and why
	Evidence  []EvidenceFile
}

// DiscoverVXLAN finds the VXLAN decap devices of hv (offload.vxlan_device:
// auto): the UDP ports of OVS's vxlan interfaces (options:dst_port, 4789
// when unset; every distinct port), whether the bridges run the userspace
// datapath (then there is no kernel device, and the finding says so), and
// otherwise whether each vxlan_sys_<port> exists (`ip -j link show dev`).
// A tool failure or a missing device is an Absent entry with its reason; err
// is only for a transport failure or a cancelled context.
func DiscoverVXLAN(ctx context.Context, hv remote.Runner) (VXLANFinding, error) {
	var f VXLANFinding
	r, err := hv.Run(ctx, CmdVXLANTunnels)
	if err != nil {
		return f, onTarget("VXLAN discovery", hv, err)
	}
	f.Evidence = append(f.Evidence, evidence("vxlan-ovs-tunnels.json", r))
	if !r.OK() {
		return f.fail("%s failed (exit %d): %s", CmdVXLANTunnels, r.ExitCode, firstLine(r.Stderr)), nil
	}
	f.Tunnels, err = ParseVXLANTunnels(r.Stdout)
	if err != nil {
		return f.fail("%v", err), nil
	}
	f.Ports = VXLANPorts(f.Tunnels)
	r, err = hv.Run(ctx, CmdBridgeDatapaths)
	if err != nil {
		return f, onTarget("VXLAN discovery", hv, err)
	}
	f.Evidence = append(f.Evidence, evidence("vxlan-ovs-bridges.json", r))
	if r.OK() {
		if dps, err := ParseBridgeDatapaths(r.Stdout); err == nil {
			f.Userspace = Userspace(dps)
		}
	}
	ports := portList(f.Ports)
	switch {
	case f.Userspace:
		f.Summary = fmt.Sprintf("userspace datapath (every bridge is datapath_type netdev): no kernel VXLAN device, the tunnel (UDP port %s) is inside ovs-vswitchd and decap is not examined by tc", orNone(ports))
		f.finish()
		return f, nil
	case len(f.Ports) == 0:
		return f.fail("OVS has no interface of type vxlan (no tunnel to another hypervisor yet?)"), nil
	}
	for _, p := range f.Ports {
		dev := VXLANDeviceName(p)
		r, err := hv.Run(ctx, LinkCommand(dev))
		if err != nil {
			return f, onTarget("VXLAN discovery", hv, err)
		}
		f.Evidence = append(f.Evidence, evidence("vxlan-link-"+fileSafe(dev)+".json", r))
		names, perr := ParseLinkNames(r.Stdout)
		switch {
		case r.OK() && perr == nil && len(names) == 1 && names[0] == dev:
			f.Devices = append(f.Devices, dev)
		case !r.OK():
			f.Absent = append(f.Absent, AbsentDevice{dev, fmt.Sprintf("OVS tunnels use UDP port %d but %s is not on the host: %s", p, dev, orNone(firstLine(r.Stderr)))})
		default:
			f.Absent = append(f.Absent, AbsentDevice{dev, fmt.Sprintf("OVS tunnels use UDP port %d but `%s` did not show %s (%s)", p, LinkCommand(dev), dev, strings.TrimSpace(firstLine(r.Stdout)))})
		}
	}
	var parts []string
	if len(f.Devices) > 0 {
		parts = append(parts, "examined "+strings.Join(f.Devices, ", "))
	}
	for _, a := range f.Absent {
		parts = append(parts, a.Device+" missing")
	}
	f.Summary = fmt.Sprintf("OVS VXLAN tunnels on UDP port %s (%d interfaces): %s", ports, len(f.Tunnels), strings.Join(parts, "; "))
	f.finish()
	return f, nil
}

// fail records a discovery that could not name the device.
func (f VXLANFinding) fail(format string, args ...any) VXLANFinding {
	why := fmt.Sprintf(format, args...)
	f.Absent = append(f.Absent, AbsentDevice{"vxlan device (auto)", "VXLAN device not found: " + why})
	f.Summary = "VXLAN device not found: " + why
	f.finish()
	return f
}

// finish adds the summary as an evidence file of its own.
func (f *VXLANFinding) finish() {
	f.Evidence = append(f.Evidence, EvidenceFile{Name: "vxlan-discovery.txt", Output: []byte(f.Summary + "\n"), Target: "harness"})
}

func portList(ports []int) string {
	s := make([]string, len(ports))
	for i, p := range ports {
		s[i] = strconv.Itoa(p)
	}
	return strings.Join(s, ", ")
}

func orNone(s string) string {
	if strings.TrimSpace(s) == "" {
		return "(none)"
	}
	return s
}
