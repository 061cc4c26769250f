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
}

// IperfFlows is what one iperf3 process of -P streams (UDP when udp) opens
// from client to server's port.
func IperfFlows(udp bool, streams int, client, server netip.Addr, port uint16) []Flow {
	if !udp {
		return []Flow{{Proto: "tcp", Client: client, Server: server, ServerPort: port, Opened: streams + 1}}
	}
	return []Flow{
		{Proto: "tcp", Client: client, Server: server, ServerPort: port, Opened: 1},
		{Proto: "udp", Client: client, Server: server, ServerPort: port, Opened: streams},
	}
}

// Connection is one connection of a Flow as the table holds it: every
// entry with its original tuple client:port -> server:ServerPort (one per
// zone it crossed), owned by the weakest of them.
type Connection struct {
	Flow       Flow
	ClientPort uint16
	Entries    []Entry
	Offload    Offload
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

// Judgement is the conntrack proof of one hypervisor's table against the
// run's flows. Offloaded holds only when every connection the run opened
// is in the table, live, and [HW_OFFLOAD] in every zone it crossed, and no
// other live connection of those flows is there.
type Judgement struct {
	Opened    int     `json:"opened"`    // connections the run opened (the flows' sum)
	Found     int     `json:"found"`     // live connections of the flows in the table
	Hardware  int     `json:"hardware"`  // of Found, [HW_OFFLOAD] in every entry
	Flowtable int     `json:"flowtable"` // of Found, [OFFLOAD] somewhere (software flowtable)
	Software  int     `json:"software"`  // of Found, tracked in software
	Stale     int     `json:"stale"`     // entries of the flows not live (TIME_WAIT, CLOSE, ...), not counted
	Share     float64 `json:"share"`     // Hardware / Opened
	Offloaded bool    `json:"offloaded"`
	Reason    string  `json:"reason"`
}

// Judge matches the table's entries to the run's flows and judges them.
// A flow that is not TCP or UDP is refused: ICMP under conntrack is not
// offloaded by design (the flood ping proves nothing here).
func Judge(entries []Entry, flows []Flow) (Judgement, []Connection, error) {
	var j Judgement
	seen := map[Flow]bool{}
	for _, f := range flows {
		key := f
		key.Opened = 0
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
		j.Opened += f.Opened
	}
	if len(flows) == 0 {
		return j, nil, errors.New("conntrack: no flows to judge")
	}
	var conns []Connection
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
		for _, p := range ports {
			conns = append(conns, *byPort[uint16(p)])
		}
	}
	for _, c := range conns {
		j.Found++
		switch c.Offload {
		case OffloadHardware:
			j.Hardware++
		case OffloadFlowtable:
			j.Flowtable++
		default:
			j.Software++
		}
	}
	j.Share = float64(j.Hardware) / float64(j.Opened)
	j.Offloaded = j.Hardware == j.Opened && j.Found == j.Opened
	j.Reason = reason(j)
	return j, conns, nil
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

func reason(j Judgement) string {
	parts := []string{fmt.Sprintf("%d of %d connections the run opened are [HW_OFFLOAD] (%.0f%%)", j.Hardware, j.Opened, 100*j.Share)}
	if j.Flowtable > 0 {
		parts = append(parts, fmt.Sprintf("%d [OFFLOAD]: the kernel's software flowtable, not hardware", j.Flowtable))
	}
	if j.Software > 0 {
		parts = append(parts, fmt.Sprintf("%d tracked in software", j.Software))
	}
	switch {
	case j.Found < j.Opened:
		miss := fmt.Sprintf("%d not in the table", j.Opened-j.Found)
		if j.Found == 0 {
			miss += " at all (this datapath may keep its conntrack elsewhere, e.g. OVS's userspace datapath: dpctl/dump-conntrack)"
		}
		parts = append(parts, miss)
	case j.Found > j.Opened:
		parts = append(parts, fmt.Sprintf("%d live connections of the run's ports, more than it opened: another window's or another client's, the count proves nothing", j.Found))
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
