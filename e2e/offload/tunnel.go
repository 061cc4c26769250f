package offload

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/mosk-qa/asap2-e2e/e2e/remote"
)

// Commands of the tunnel device discovery (offload.tunnel_device: auto,
// formerly offload.vxlan_device).
const (
	// CmdTunnels lists OVS's VXLAN and Geneve tunnel interfaces with their
	// options: two `find`s in one ovs-vsctl call, printed as two JSON
	// tables, the vxlan one first (ParseTunnels).
	CmdTunnels = "ovs-vsctl --format=json --columns=name,type,options find Interface type=vxlan" +
		" -- --columns=name,type,options find Interface type=geneve"
	// CmdBridgeDatapaths lists the bridges' datapath types ("netdev" is the
	// userspace datapath, "" or "system" the kernel one).
	CmdBridgeDatapaths = "ovs-vsctl --format=json --columns=name,datapath_type list Bridge"
	// DefaultVXLANPort is OVS's VXLAN UDP port when options:dst_port is unset.
	DefaultVXLANPort = 4789
	// DefaultGenevePort is OVS's Geneve UDP port when options:dst_port is
	// unset (GENEVE_DST_PORT, lib/netdev-vport.c).
	DefaultGenevePort = 6081
)

// The OVS interface types of the tunnels discovered.
const (
	TunnelVXLAN  = "vxlan"
	TunnelGeneve = "geneve"
)

// VXLANDeviceName is the kernel device OVS's kernel datapath creates for
// VXLAN tunnels on UDP port port: "vxlan_sys_<port>".
func VXLANDeviceName(port int) string { return "vxlan_sys_" + strconv.Itoa(port) }

// TunnelDeviceName is the kernel device OVS's kernel datapath creates for
// tunnels of type typ on UDP port port (the vport classes of
// lib/netdev-vport.c): "vxlan_sys_<port>", "genev_sys_<port>" (Geneve's
// prefix is cut short so that the port fits IFNAMSIZ); "" for another type.
func TunnelDeviceName(typ string, port int) string {
	switch typ {
	case TunnelVXLAN:
		return VXLANDeviceName(port)
	case TunnelGeneve:
		return "genev_sys_" + strconv.Itoa(port)
	}
	return ""
}

// defaultTunnelPort is OVS's UDP port for typ when options:dst_port is unset.
func defaultTunnelPort(typ string) int {
	if typ == TunnelGeneve {
		return DefaultGenevePort
	}
	return DefaultVXLANPort
}

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

// Tunnel is one OVS tunnel interface (type vxlan or geneve) and its UDP
// port.
type Tunnel struct {
	Name string
	// Type is the interface type: TunnelVXLAN or TunnelGeneve.
	Type string
	// Port is options:dst_port, the type's default (4789, 6081) when
	// unset; PortSet says whether the option was there.
	Port    int
	PortSet bool
}

// Device is the kernel device of t's type and port (TunnelDeviceName).
func (t Tunnel) Device() string { return TunnelDeviceName(t.Type, t.Port) }

// ParseTunnels parses the output of CmdTunnels: one or more JSON tables
// (one per find), each with name, type and options columns, whose rows are
// interfaces of type vxlan or geneve. A row of another type, a dst_port that
// is not a UDP port (1-65535), or no table at all is an error naming what.
func ParseTunnels(data []byte) ([]Tunnel, error) {
	var out []Tunnel
	dec := json.NewDecoder(bytes.NewReader(data))
	for n := 0; ; n++ {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err == io.EOF && n > 0 {
			return out, nil
		} else if err != nil {
			return nil, fmt.Errorf("ovs-vsctl JSON table %d: %w", n+1, err)
		}
		err := parseOVSRows(raw, []string{"name", "type", "options"}, func(name string, c []json.RawMessage) error {
			typ, err := ovsString(c[1])
			if err != nil || (typ != TunnelVXLAN && typ != TunnelGeneve) {
				return fmt.Errorf("interface %s: type is neither vxlan nor geneve: %s", name, c[1])
			}
			opts, err := ovsMap(c[2])
			if err != nil {
				return fmt.Errorf("interface %s options: %w", name, err)
			}
			tun := Tunnel{Name: name, Type: typ, Port: defaultTunnelPort(typ)}
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
	}
}

// ParseVXLANTunnels parses the output of CmdTunnels where only VXLAN
// tunnels may be: a geneve interface is an error ("type is not vxlan").
func ParseVXLANTunnels(data []byte) ([]Tunnel, error) {
	tunnels, err := ParseTunnels(data)
	if err != nil {
		return nil, err
	}
	for _, t := range tunnels {
		if t.Type != TunnelVXLAN {
			return nil, fmt.Errorf("interface %s: type is not vxlan: %q", t.Name, t.Type)
		}
	}
	return tunnels, nil
}

// VXLANPorts returns the distinct UDP ports of tunnels, ascending.
func VXLANPorts(tunnels []Tunnel) []int {
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

// tunnelDevice is one kernel device the tunnels of one type and port share.
type tunnelDevice struct {
	typ  string
	port int
	n    int // interfaces
}

// tunnelDevices groups tunnels by (type, port): vxlan first, then geneve,
// each by ascending port.
func tunnelDevices(tunnels []Tunnel) []tunnelDevice {
	var out []tunnelDevice
	for _, t := range tunnels {
		i := slices.IndexFunc(out, func(d tunnelDevice) bool { return d.typ == t.Type && d.port == t.Port })
		if i < 0 {
			out = append(out, tunnelDevice{typ: t.Type, port: t.Port})
			i = len(out) - 1
		}
		out[i].n++
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].typ != out[j].typ {
			return out[i].typ == TunnelVXLAN
		}
		return out[i].port < out[j].port
	})
	return out
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

// TunnelFinding is what DiscoverTunnels found on one hypervisor.
type TunnelFinding struct {
	Tunnels []Tunnel
	Ports   []int // distinct UDP ports of Tunnels, ascending
	// Userspace: every bridge is datapath_type netdev; there is no kernel
	// tunnel device to examine, by design.
	Userspace bool
	Devices   []string       // vxlan_sys_<port> / genev_sys_<port> devices present on the host
	Absent    []AbsentDevice // expected but missing, or discovery failed
	Summary   string         // one sentence: types, ports, devices, and why
	Evidence  []EvidenceFile
}

// DiscoverTunnels finds the tunnel decap devices of hv
// (offload.tunnel_device: auto): OVS's vxlan and geneve interfaces (ML2/OVS
// tunnels VXLAN, ML2/OVN Geneve) and their UDP ports (options:dst_port, the
// type's default 4789 or 6081 when unset; every distinct type and port),
// whether the bridges run the userspace datapath (then there is no kernel
// device, and the finding says so), and otherwise whether each
// vxlan_sys_<port> / genev_sys_<port> exists (`ip -j link show dev`). A tool
// failure or a missing device is an Absent entry with its reason; err is
// only for a transport failure or a cancelled context.
func DiscoverTunnels(ctx context.Context, hv remote.Runner) (TunnelFinding, error) {
	var f TunnelFinding
	r, err := hv.Run(ctx, CmdTunnels)
	if err != nil {
		return f, onTarget("tunnel discovery", hv, err)
	}
	f.Evidence = append(f.Evidence, evidence("tunnel-ovs-interfaces.json", r))
	if !r.OK() {
		return f.fail("%s failed (exit %d): %s", CmdTunnels, r.ExitCode, firstLine(r.Stderr)), nil
	}
	f.Tunnels, err = ParseTunnels(r.Stdout)
	if err != nil {
		return f.fail("%v", err), nil
	}
	f.Ports = VXLANPorts(f.Tunnels)
	devs := tunnelDevices(f.Tunnels)
	r, err = hv.Run(ctx, CmdBridgeDatapaths)
	if err != nil {
		return f, onTarget("tunnel discovery", hv, err)
	}
	f.Evidence = append(f.Evidence, evidence("tunnel-ovs-bridges.json", r))
	if r.OK() {
		if dps, err := ParseBridgeDatapaths(r.Stdout); err == nil {
			f.Userspace = Userspace(dps)
		}
	}
	switch {
	case f.Userspace:
		f.Summary = fmt.Sprintf("userspace datapath (every bridge is datapath_type netdev): no kernel tunnel device, the tunnels (%s) are inside ovs-vswitchd and decap is not examined by tc", orNone(tunnelList(devs)))
		f.finish()
		return f, nil
	case len(devs) == 0:
		return f.fail("OVS has no interface of type vxlan or geneve (no tunnel to another hypervisor yet?)"), nil
	}
	for _, d := range devs {
		dev := TunnelDeviceName(d.typ, d.port)
		r, err := hv.Run(ctx, LinkCommand(dev))
		if err != nil {
			return f, onTarget("tunnel discovery", hv, err)
		}
		f.Evidence = append(f.Evidence, evidence("tunnel-link-"+fileSafe(dev)+".json", r))
		names, perr := ParseLinkNames(r.Stdout)
		switch {
		case r.OK() && perr == nil && len(names) == 1 && names[0] == dev:
			f.Devices = append(f.Devices, dev)
		case !r.OK():
			f.Absent = append(f.Absent, AbsentDevice{dev, fmt.Sprintf("OVS %s tunnels use UDP port %d but %s is not on the host: %s", typeName(d.typ), d.port, dev, orNone(firstLine(r.Stderr)))})
		default:
			f.Absent = append(f.Absent, AbsentDevice{dev, fmt.Sprintf("OVS %s tunnels use UDP port %d but `%s` did not show %s (%s)", typeName(d.typ), d.port, LinkCommand(dev), dev, strings.TrimSpace(firstLine(r.Stdout)))})
		}
	}
	var parts []string
	if len(f.Devices) > 0 {
		parts = append(parts, "examined "+strings.Join(f.Devices, ", "))
	}
	for _, a := range f.Absent {
		parts = append(parts, a.Device+" missing")
	}
	f.Summary = fmt.Sprintf("OVS %s: %s", tunnelList(devs), strings.Join(parts, "; "))
	f.finish()
	return f, nil
}

// typeName is how a summary names a tunnel type: "VXLAN", "Geneve".
func typeName(typ string) string {
	if typ == TunnelGeneve {
		return "Geneve"
	}
	return "VXLAN"
}

// tunnelList says which tunnels there are, by type: "VXLAN tunnels on UDP
// port 4790 (2 interfaces)", "Geneve tunnels on UDP port 6081 (3
// interfaces)", both joined by " and ".
func tunnelList(devs []tunnelDevice) string {
	var parts []string
	for _, typ := range []string{TunnelVXLAN, TunnelGeneve} {
		var ports []int
		n := 0
		for _, d := range devs {
			if d.typ == typ {
				ports, n = append(ports, d.port), n+d.n
			}
		}
		if n > 0 {
			parts = append(parts, fmt.Sprintf("%s tunnels on UDP port %s (%d interfaces)", typeName(typ), portList(ports), n))
		}
	}
	return strings.Join(parts, " and ")
}

// fail records a discovery that could not name the device.
func (f TunnelFinding) fail(format string, args ...any) TunnelFinding {
	why := fmt.Sprintf(format, args...)
	f.Absent = append(f.Absent, AbsentDevice{"tunnel device (auto)", "tunnel device not found: " + why})
	f.Summary = "tunnel device not found: " + why
	f.finish()
	return f
}

// finish adds the summary as an evidence file of its own.
func (f *TunnelFinding) finish() {
	f.Evidence = append(f.Evidence, EvidenceFile{Name: "tunnel-discovery.txt", Output: []byte(f.Summary + "\n"), Target: "harness"})
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
