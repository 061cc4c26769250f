package conntrack

import (
	"errors"
	"fmt"
	"net/netip"
	"sort"
	"strconv"
	"strings"
)

// Flow is one server port of the run's traffic between the pair and how
// many connections the run opened to it: for an iperf3 process with -P N,
// TCP is N data connections plus its control connection (N+1 TCP entries);
// UDP is N UDP entries plus one TCP control connection (IperfFlows).
type Flow struct {
	Proto      string // "tcp" or "udp"
	Client     netip.Addr
	Server     netip.Addr
	ServerPort uint16
	Opened     int
	// Control is how many of Opened are control connections: iperf3's,
	// which carries nothing while its test runs. The kernel hands a
	// connection idle for nf_flowtable_tcp_timeout (30 s) back from the
	// flowtable to software conntrack (nf_flow_table_core.c,
	// flow_offload_teardown), and a kernel before 5.18 lets that software
	// entry expire 120 s later: a control connection tracked in software,
	// or gone, is expected, named in the reason and not judged.
	Control int
	// DataPorts are the client ports of the data connections when known
	// (iperf3 -J: start.connected[].local_port, which lists the streams and
	// never the control connection): any other live connection of the
	// flow is a control connection. Without them the table tells a control
	// connection apart only when the flow has no other kind (Control ==
	// Opened: a UDP test's TCP connection) or by its own counters
	// (nf_conntrack_acct: at most IdleMaxPackets).
	DataPorts []uint16
}

// IdleMaxPackets bounds the packets, both directions together, of a
// connection tracked in software that carried no measured traffic:
// iperf3's control exchange before its test (the cookie, the parameters,
// the state bytes and their ACKs) is a few dozen, a stream carrying the
// flow in software counts thousands a second. Read only on entries not in
// hardware, whose counters the kernel keeps for every packet it tracks.
const IdleMaxPackets = 100

// IperfFlows is what one iperf3 process of -P streams (UDP when udp) opens
// from client to server's port; its control connection is marked (Flow.Control).
func IperfFlows(udp bool, streams int, client, server netip.Addr, port uint16) []Flow {
	if !udp {
		return []Flow{{Proto: "tcp", Client: client, Server: server, ServerPort: port, Opened: streams + 1, Control: 1}}
	}
	return []Flow{
		{Proto: "tcp", Client: client, Server: server, ServerPort: port, Opened: 1, Control: 1},
		{Proto: "udp", Client: client, Server: server, ServerPort: port, Opened: streams},
	}
}

// IperfStreams is IperfFlows for a process whose streams' client ports are
// known (iperf3 -J: start.connected lists every stream and never the
// control connection): len(ports) streams, and for TCP those ports are the
// data connections (Flow.DataPorts), so that the control connection is
// told apart for sure.
func IperfStreams(udp bool, client, server netip.Addr, port uint16, ports []uint16) []Flow {
	flows := IperfFlows(udp, len(ports), client, server, port)
	if !udp {
		flows[0].DataPorts = append([]uint16(nil), ports...)
	}
	return flows
}

// Roles of a connection of a flow (Connection.Role).
const (
	RoleData    = "data"
	RoleControl = "control"
	// RoleUnknown: a connection of a flow with a control connection that
	// the table cannot place (no DataPorts, no counters).
	RoleUnknown = ""
)

// Connection is one connection of a Flow as the table holds it: every
// entry with its original tuple client:port -> server:ServerPort (one per
// zone it crossed), owned by the weakest of them.
type Connection struct {
	Flow       Flow
	ClientPort uint16
	Entries    []Entry
	Offload    Offload
	// Role is RoleData, RoleControl or RoleUnknown; RoleWhy says how the
	// table told it ("" when there was nothing to tell: a flow without a
	// control connection).
	Role    string
	RoleWhy string
}

// live reports whether an entry stands for a connection in use: any
// offloaded entry, a TCP entry in ESTABLISHED, any other protocol's.
func live(e Entry) bool {
	if e.Offload != OffloadNone {
		return true
	}
	if e.Proto == "tcp" {
		return e.State == "ESTABLISHED"
	}
	return true
}

// packets is what the connection's entries counted, both directions, and
// whether every entry carried its counters.
func (c Connection) packets() (uint64, bool) {
	var n uint64
	for _, e := range c.Entries {
		if !e.Counted {
			return 0, false
		}
		n += e.Orig.Packets + e.Reply.Packets
	}
	return n, len(c.Entries) > 0
}

// Judgement is the conntrack proof of one hypervisor's table against the
// run's flows. Offloaded holds only when every data connection the run
// opened is in the table, live, and [HW_OFFLOAD] in every zone it crossed,
// and no other live connection of those flows is there; a control
// connection (Flow.Control) may be anywhere: in hardware, back in software
// after its idle timeout, or gone.
type Judgement struct {
	Opened    int `json:"opened"`    // connections the run opened (the flows' sum)
	Found     int `json:"found"`     // live connections of the flows in the table
	Hardware  int `json:"hardware"`  // of Found, [HW_OFFLOAD] in every entry
	Flowtable int `json:"flowtable"` // of the judged connections found, [OFFLOAD] somewhere (software flowtable)
	Software  int `json:"software"`  // of the judged connections found, tracked in software
	// Control is how many of Opened are control connections; Idle of
	// them are in the table but not in hardware, Gone not in the table
	// (known to be theirs): expected, not judged.
	Control int `json:"control,omitempty"`
	Idle    int `json:"idle,omitempty"`
	Gone    int `json:"gone,omitempty"`
	// Unsure are connections not in hardware that may be an idle control
	// connection or a data connection in software: the table cannot tell.
	Unsure int `json:"unsure,omitempty"`
	// Missing are connections not in the table that are not known to be
	// control connections; Extra live ones beyond what the run opened.
	Missing   int     `json:"missing,omitempty"`
	Extra     int     `json:"extra,omitempty"`
	Stale     int     `json:"stale"` // entries of the flows not live (TIME_WAIT, CLOSE, ...), not counted
	Share     float64 `json:"share"` // Hardware / Opened
	Offloaded bool    `json:"offloaded"`
	Reason    string  `json:"reason"`
}

// Judge matches the table's entries to the run's flows and judges them.
// A flow that is not TCP or UDP is refused: ICMP under conntrack is not
// offloaded by design (the flood ping proves nothing here).
func Judge(entries []Entry, flows []Flow) (Judgement, []Connection, error) {
	var j Judgement
	type flowKey struct {
		proto          string
		client, server netip.Addr
		port           uint16
	}
	seen := map[flowKey]bool{}
	for _, f := range flows {
		key := flowKey{f.Proto, f.Client, f.Server, f.ServerPort}
		if seen[key] {
			return j, nil, fmt.Errorf("conntrack: flow %s %s -> %s:%d given twice", f.Proto, f.Client, f.Server, f.ServerPort)
		}
		seen[key] = true
		if f.Proto != "tcp" && f.Proto != "udp" {
			return j, nil, fmt.Errorf("conntrack: flow %s %s -> %s:%d: only TCP and UDP connections prove conntrack offload (ICMP under conntrack is not offloaded by design)", f.Proto, f.Client, f.Server, f.ServerPort)
		}
		if f.Opened < 1 {
			return j, nil, fmt.Errorf("conntrack: flow %s %s -> %s:%d opened %d connections: nothing to prove", f.Proto, f.Client, f.Server, f.ServerPort, f.Opened)
		}
		if f.Control < 0 || f.Control > f.Opened || len(f.DataPorts) > f.Opened-f.Control {
			return j, nil, fmt.Errorf("conntrack: flow %s %s -> %s:%d: %d control connections and %d data ports do not fit the %d it opened", f.Proto, f.Client, f.Server, f.ServerPort, f.Control, len(f.DataPorts), f.Opened)
		}
		j.Opened += f.Opened
		j.Control += f.Control
	}
	if len(flows) == 0 {
		return j, nil, errors.New("conntrack: no flows to judge")
	}
	var conns []Connection
	var notes []string
	for _, f := range flows {
		byPort := map[uint16]*Connection{}
		for _, e := range entries {
			if e.Proto != f.Proto || e.Orig.Src != f.Client || e.Orig.Dst != f.Server || e.Orig.DPort != f.ServerPort {
				continue
			}
			if !live(e) {
				j.Stale++
				continue
			}
			c := byPort[e.Orig.SPort]
			if c == nil {
				c = &Connection{Flow: f, ClientPort: e.Orig.SPort, Offload: OffloadHardware}
				byPort[e.Orig.SPort] = c
			}
			c.Entries = append(c.Entries, e)
			c.Offload = weaker(c.Offload, e.Offload)
		}
		ports := make([]int, 0, len(byPort))
		for p := range byPort {
			ports = append(ports, int(p))
		}
		sort.Ints(ports)
		fc := make([]Connection, 0, len(ports))
		for _, p := range ports {
			fc = append(fc, *byPort[uint16(p)])
		}
		notes = append(notes, judgeFlow(&j, f, fc)...)
		conns = append(conns, fc...)
	}
	j.Found = len(conns)
	for _, c := range conns {
		if c.Offload == OffloadHardware {
			j.Hardware++
		}
	}
	j.Share = float64(j.Hardware) / float64(j.Opened)
	j.Offloaded = j.Missing == 0 && j.Extra == 0 && j.Unsure == 0 && j.Software == 0 && j.Flowtable == 0
	j.Reason = reason(j, notes)
	return j, conns, nil
}

// judgeFlow gives each connection of f its role, counts what it judged
// into j and returns the sentences that name the control connections.
func judgeFlow(j *Judgement, f Flow, conns []Connection) []string {
	data := map[uint16]bool{}
	for _, p := range f.DataPorts {
		data[p] = true
	}
	for i := range conns {
		c := &conns[i]
		switch {
		case f.Control == 0:
			c.Role = RoleData
		case f.Control == f.Opened:
			c.Role, c.RoleWhy = RoleControl, fmt.Sprintf("the only %s connection the test opens to port %d", strings.ToUpper(f.Proto), f.ServerPort)
		case len(data) > 0 && data[c.ClientPort]:
			c.Role, c.RoleWhy = RoleData, "a data stream's port in iperf3's output"
		case len(data) > 0:
			c.Role, c.RoleWhy = RoleControl, "not among the data streams' ports iperf3 reported"
		case c.Offload != OffloadHardware:
			if n, ok := c.packets(); ok && n <= IdleMaxPackets {
				c.Role, c.RoleWhy = RoleControl, fmt.Sprintf("it counted %d packets in all, at most %d: iperf3's control exchange, no measured traffic", n, IdleMaxPackets)
			}
		}
	}
	var nData, nControl int
	var unknownSW []*Connection
	for i := range conns {
		c := &conns[i]
		switch c.Role {
		case RoleData:
			nData++
			countOwner(j, c.Offload)
		case RoleControl:
			nControl++
		default:
			if c.Offload != OffloadHardware {
				unknownSW = append(unknownSW, c)
			}
		}
	}
	var notes []string
	identified := f.Control == 0 || f.Control == f.Opened || len(data) > 0
	if identified {
		j.Missing += max(0, f.Opened-f.Control-nData)
		j.Extra += max(0, nData-(f.Opened-f.Control)) + max(0, nControl-f.Control)
		if gone := max(0, f.Control-nControl); gone > 0 {
			j.Gone += gone
			notes = append(notes, fmt.Sprintf("iperf3's control connection to port %d is not in the table, as expected: idle while the test runs, it left the flowtable after nf_flowtable_tcp_timeout (30 s) and its software entry expired (kernels before 5.18 give it 120 s); not judged", f.ServerPort))
		}
	} else {
		// The control connection(s) not placed: hardware connections are
		// fine whatever they are; the others fit the control connections
		// not yet placed, or some of them are data connections in software.
		slots := max(0, f.Control-nControl)
		if len(unknownSW) > slots {
			// More than the control connections can be: data connections
			// are among them, and the flow is in software whichever they are.
			for _, c := range unknownSW {
				countOwner(j, c.Offload)
			}
		} else if len(unknownSW) > 0 {
			j.Unsure += len(unknownSW)
			notes = append(notes, fmt.Sprintf("%s to port %d %s: iperf3's control connection, idle while the test runs and handed back from the flowtable after nf_flowtable_tcp_timeout (30 s), or a data stream in software; the table alone cannot tell (no list of the data streams' ports from iperf3's output, no per-connection counters: nf_conntrack_acct is off)",
				connList(unknownSW), f.ServerPort, owners(unknownSW)))
		}
		if missing := f.Opened - len(conns); missing > 0 {
			j.Missing += missing
			notes = append(notes, fmt.Sprintf("of the connections to port %d not in the table, one may be iperf3's idle control connection, gone once it left the flowtable, or not: the table alone cannot tell", f.ServerPort))
		} else if missing < 0 {
			j.Extra -= missing
		}
	}
	for i := range conns {
		c := &conns[i]
		if c.Role != RoleControl {
			continue
		}
		if c.Offload == OffloadHardware {
			continue
		}
		j.Idle++
		notes = append(notes, fmt.Sprintf("iperf3's control connection (sport %d: %s) %s, as expected: it carries nothing while the test runs, and the kernel hands a connection idle for nf_flowtable_tcp_timeout (30 s) back from the flowtable; not judged",
			c.ClientPort, c.RoleWhy, ownerWords(c.Offload)))
	}
	return notes
}

// countOwner counts a judged connection not in hardware.
func countOwner(j *Judgement, o Offload) {
	switch o {
	case OffloadFlowtable:
		j.Flowtable++
	case OffloadNone:
		j.Software++
	}
}

func ownerWords(o Offload) string {
	if o == OffloadFlowtable {
		return "in the software flowtable ([OFFLOAD])"
	}
	return "tracked in software"
}

// connList names connections by their client ports: "1 connection (sport
// 44142)", "2 connections (sport 44142, 44150)".
func connList(cs []*Connection) string {
	ports := make([]string, len(cs))
	for i, c := range cs {
		ports[i] = strconv.Itoa(int(c.ClientPort))
	}
	noun := "connections"
	if len(cs) == 1 {
		noun = "connection"
	}
	return fmt.Sprintf("%d %s (sport %s)", len(cs), noun, strings.Join(ports, ", "))
}

// owners says where connections are: "tracked in software", or with a
// flowtable one among them "not in hardware".
func owners(cs []*Connection) string {
	for _, c := range cs {
		if c.Offload != OffloadNone {
			return "not in hardware"
		}
	}
	return "tracked in software"
}

// weaker is the owner of a connection seen with a and b: hardware only if
// both are.
func weaker(a, b Offload) Offload {
	rank := map[Offload]int{OffloadHardware: 2, OffloadFlowtable: 1, OffloadNone: 0}
	if rank[b] < rank[a] {
		return b
	}
	return a
}

func reason(j Judgement, notes []string) string {
	parts := []string{fmt.Sprintf("%d of %d connections the run opened are [HW_OFFLOAD] (%.0f%%)", j.Hardware, j.Opened, 100*j.Share)}
	if j.Flowtable > 0 {
		parts = append(parts, fmt.Sprintf("%d [OFFLOAD]: the kernel's software flowtable, not hardware", j.Flowtable))
	}
	if j.Software > 0 {
		parts = append(parts, fmt.Sprintf("%d tracked in software", j.Software))
	}
	parts = append(parts, notes...)
	if j.Missing > 0 {
		miss := fmt.Sprintf("%d not in the table", j.Missing)
		if j.Found == 0 {
			miss += " at all (this datapath may keep its conntrack elsewhere, e.g. OVS's userspace datapath: dpctl/dump-conntrack)"
		}
		parts = append(parts, miss)
	}
	if j.Extra > 0 {
		parts = append(parts, fmt.Sprintf("%d live connections of the run's ports, %d more than it opened as streams or control connections: another window's or another client's, the count proves nothing", j.Found, j.Extra))
	}
	if j.Stale > 0 {
		parts = append(parts, fmt.Sprintf("%d closed entries not counted", j.Stale))
	}
	return strings.Join(parts, "; ")
}

// ReadCommand prints the host's table: /proc/net/nf_conntrack where the
// kernel offers it (per network namespace: the host's, from a host-network
// OVS pod), else conntrack-tools.
const ReadCommand = "if [ -r /proc/net/nf_conntrack ]; then cat /proc/net/nf_conntrack; else conntrack -L; fi"

// SizeCommand prints the table's fill and its limit, one number a line.
const SizeCommand = "cat /proc/sys/net/netfilter/nf_conntrack_count /proc/sys/net/netfilter/nf_conntrack_max"

// DPCtlSizeCommand is SizeCommand for OVS's userspace conntrack (the
// userspace datapath's table: its connections and its limit).
const DPCtlSizeCommand = "ovs-appctl dpctl/ct-get-nconns && ovs-appctl dpctl/ct-get-maxconns"

// Size is the table's fill against its limit (nf_conntrack_count,
// nf_conntrack_max): a full table drops new connections, which a
// connection-scale profile must tell from a lack of offload.
type Size struct {
	Count int `json:"count"`
	Max   int `json:"max"`
}

// ParseSize reads SizeCommand's or DPCtlSizeCommand's output.
func ParseSize(data []byte) (Size, error) {
	f := strings.Fields(string(data))
	if len(f) != 2 {
		return Size{}, fmt.Errorf("conntrack size: want nf_conntrack_count and nf_conntrack_max, got %q", strings.TrimSpace(string(data)))
	}
	c, err1 := strconv.Atoi(f[0])
	m, err2 := strconv.Atoi(f[1])
	if err := errors.Join(err1, err2); err != nil || c < 0 || m <= 0 {
		return Size{}, fmt.Errorf("conntrack size: count %q, max %q: want whole numbers, max > 0", f[0], f[1])
	}
	return Size{Count: c, Max: m}, nil
}

// Room is how many more connections fit before the table is full.
func (s Size) Room() int { return max(0, s.Max-s.Count) }
