package iperf3

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The look at a client that reached its bound (issue 32): before the
// harness kills an iperf3 client it reads, with one command on the client's
// guest, the client's TCP sockets by state, the guest's load and the client
// process's scheduler state, so that the error says what the client was
// doing ("stuck in connection setup: 37 of 125 streams established, 1
// SYN-SENT") instead of only that it printed nothing.
//
// Every client of a run starts at the same moment with the same bound, so
// when one reaches its bound every client still running has reached its own:
// no window that could still count is running when the look is taken.

// Section headers of LookCommand's output.
const (
	lookSockets = "== tcp sockets"
	lookLoad    = "== /proc/loadavg"
	lookClients = "== iperf3 clients"
)

// LookCommand is the look: `ss -tan` (netstat -tan where ss is missing),
// /proc/loadavg, and one line "PID STATE WCHAN CMDLINE" per process whose
// program is iperf3 (from /proc: STATE is /proc/PID/stat's, WCHAN "-" when
// empty). Every part may fail alone; ParseLook reads what came.
const LookCommand = `echo '` + lookSockets + `'; ss -tan 2>/dev/null || netstat -tan 2>&1; ` +
	`echo '` + lookLoad + `'; cat /proc/loadavg 2>&1; ` +
	`echo '` + lookClients + `'; for d in /proc/[0-9]*; do ` +
	`c=$( { tr '\0' ' ' <"$d/cmdline"; } 2>/dev/null); ` +
	`case "${c%% *}" in iperf3|*/iperf3) ` +
	`s=$( { cut -d' ' -f1,3 "$d/stat"; } 2>/dev/null); w=$( { cat "$d/wchan"; } 2>/dev/null); ` +
	`echo "$s ${w:--} $c";; esac; done`

// Socket is one TCP socket of the look: its state in ss's words (netstat's
// ESTABLISHED is ESTAB, SYN_SENT is SYN-SENT, ...) and its peer.
type Socket struct {
	State string
	Peer  netip.AddrPort
}

// LookProcess is one iperf3 process of the look.
type LookProcess struct {
	PID   int
	State string // R, S, D, T, Z ... (/proc/PID/stat)
	WChan string // the kernel function it sleeps in; "-" or "0" when none
	Cmd   string
	Port  int    // its -p, 0 when none
	Peer  string // its -c address, "" for a server
}

// Look is LookCommand's output read.
type Look struct {
	Sockets []Socket
	Load1   float64 // the 1-minute load average; valid when HasLoad
	HasLoad bool
	// Processes are the iperf3 processes; HasProcesses says the section
	// came (an empty list then means there were none).
	Processes    []LookProcess
	HasProcesses bool
}

// ParseLook reads LookCommand's output. The sockets are ss -tan's lines
//
//	State    Recv-Q Send-Q Local Address:Port  Peer Address:Port Process
//	ESTAB    0      0       198.19.250.2:41000 198.19.250.1:5302
//	SYN-SENT 0      1       198.19.250.2:41060 198.19.250.1:5302
//
// or netstat -tan's ("tcp 0 1 198.19.250.2:41060 198.19.250.1:5302
// SYN_SENT"); the load "6.12 5.01 3.20 3/119 6106"; a process "31079 S
// wait_woken iperf3 -c 198.19.250.1 -p 5302 ..." (testdata/look-*.txt).
// Lines it cannot read are skipped. It is pure and never panics.
func ParseLook(out []byte) Look {
	var l Look
	section := ""
	for _, line := range strings.Split(string(out), "\n") {
		line = strings.TrimSpace(line)
		switch line {
		case lookSockets, lookLoad, lookClients:
			section = line
			l.HasProcesses = l.HasProcesses || line == lookClients
			continue
		}
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		switch section {
		case lookSockets:
			if s, ok := parseSocket(f); ok {
				l.Sockets = append(l.Sockets, s)
			}
		case lookLoad:
			if v, err := strconv.ParseFloat(f[0], 64); err == nil && v >= 0 && !l.HasLoad {
				l.Load1, l.HasLoad = v, true
			}
		case lookClients:
			if p, ok := parseLookProcess(f); ok {
				l.Processes = append(l.Processes, p)
			}
		}
	}
	return l
}

// parseSocket reads one line of ss -tan (state first, peer 5th) or netstat
// -tan (tcp/tcp6 first, peer 5th, state 6th).
func parseSocket(f []string) (Socket, bool) {
	state, peer := "", ""
	switch {
	case (f[0] == "tcp" || f[0] == "tcp6") && len(f) >= 6:
		state, peer = netstatStates[f[5]], f[4]
	case len(f) >= 5 && ssStates[f[0]]:
		state, peer = f[0], f[4]
	}
	if state == "" {
		return Socket{}, false
	}
	ap, ok := parsePeer(peer)
	if !ok {
		return Socket{}, false
	}
	return Socket{State: state, Peer: ap}, true
}

// parsePeer reads "198.19.250.1:5302", "[::ffff:198.19.250.1]:5302" (ss)
// or "::ffff:198.19.250.1:5302" (netstat's tcp6, no brackets); IPv4-mapped
// addresses are unmapped.
func parsePeer(s string) (netip.AddrPort, bool) {
	ap, err := netip.ParseAddrPort(s)
	if err != nil {
		i := strings.LastIndexByte(s, ':')
		if i < 0 {
			return netip.AddrPort{}, false
		}
		a, err1 := netip.ParseAddr(s[:i])
		p, err2 := strconv.ParseUint(s[i+1:], 10, 16)
		if err1 != nil || err2 != nil {
			return netip.AddrPort{}, false
		}
		ap = netip.AddrPortFrom(a, uint16(p))
	}
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()), true
}

// ssStates are ss's TCP state names (iproute2 misc/ss.c sstate_name).
var ssStates = map[string]bool{"ESTAB": true, "SYN-SENT": true, "SYN-RECV": true, "FIN-WAIT-1": true, "FIN-WAIT-2": true,
	"TIME-WAIT": true, "UNCONN": true, "CLOSE-WAIT": true, "LAST-ACK": true, "LISTEN": true, "CLOSING": true}

// netstatStates maps net-tools' names to ss's.
var netstatStates = map[string]string{"ESTABLISHED": "ESTAB", "SYN_SENT": "SYN-SENT", "SYN_RECV": "SYN-RECV",
	"FIN_WAIT1": "FIN-WAIT-1", "FIN_WAIT2": "FIN-WAIT-2", "TIME_WAIT": "TIME-WAIT", "CLOSE": "UNCONN",
	"CLOSE_WAIT": "CLOSE-WAIT", "LAST_ACK": "LAST-ACK", "LISTEN": "LISTEN", "CLOSING": "CLOSING"}

func parseLookProcess(f []string) (LookProcess, bool) {
	if len(f) < 4 {
		return LookProcess{}, false
	}
	pid, err := strconv.Atoi(f[0])
	if err != nil || pid <= 0 {
		return LookProcess{}, false
	}
	p := LookProcess{PID: pid, State: f[1], WChan: f[2], Cmd: strings.Join(f[3:], " ")}
	if i := slices.Index(f, "-p"); i >= 3 && i+1 < len(f) {
		p.Port, _ = strconv.Atoi(f[i+1])
	}
	if i := slices.Index(f, "-c"); i >= 3 && i+1 < len(f) {
		p.Peer = f[i+1]
	}
	return p, true
}

// Counts are the look's sockets toward server:port by state (all of them
// toward port when server is not valid).
func (l Look) Counts(server netip.Addr, port int) map[string]int {
	c := map[string]int{}
	for _, s := range l.Sockets {
		if int(s.Peer.Port()) == port && (!server.IsValid() || s.Peer.Addr() == server.Unmap()) {
			c[s.State]++
		}
	}
	return c
}

// Client is the iperf3 client of server (its -c) and port (its -p), if
// the look saw one. A guest that is only a network namespace (the lab's)
// sees every process of its machine, the servers' too: they have no -c.
func (l Look) Client(server string, port int) (LookProcess, bool) {
	for _, p := range l.Processes {
		if p.Port == port && p.Peer == server {
			return p, true
		}
	}
	return LookProcess{}, false
}

// Words say what the client of port with its streams was doing at the
// look, toward server (its -c address): its phase from its sockets (a
// client opens its control connection, then its streams one after another,
// each a blocking connect), then the guest's load and the process's state,
// e.g. "stuck in connection setup: 37 of 125 streams established, 1
// SYN-SENT after 2m46s; guest load 6.10; iperf3 pid 4242 state S in
// wait_woken".
func (l Look) Words(server string, port, streams int, after time.Duration) string {
	addr, _ := netip.ParseAddr(server)
	c := l.Counts(addr, port)
	up, syn := 0, c["SYN-SENT"]
	for st, n := range c {
		if handshaken[st] {
			up += n
		}
	}
	p, running := l.Client(server, port)
	var phase string
	switch {
	case up == 0 && syn == 0 && l.HasProcesses && !running:
		phase = fmt.Sprintf("gone: no iperf3 client and no connection toward port %d on the guest", port)
	case up == 0 && syn == 0:
		phase = fmt.Sprintf("not connected: no connection toward port %d open", port)
	case up == 0:
		phase = fmt.Sprintf("stuck connecting its control connection (%d SYN-SENT)", syn)
	case up-1 < streams:
		// The first connection up is the control connection.
		phase = fmt.Sprintf("stuck in connection setup: %d of %d streams established, %d SYN-SENT", up-1, streams, syn)
	default:
		phase = fmt.Sprintf("past connection setup (%d of %d streams and the control connection established): in its test or its end", min(up-1, streams), streams)
	}
	parts := []string{phase + " after " + after.String()}
	if other := otherStates(c); other != "" {
		parts = append(parts, "not ESTAB: "+other)
	}
	if l.HasLoad {
		parts = append(parts, fmt.Sprintf("guest load %.2f", l.Load1))
	}
	switch {
	case running:
		s := fmt.Sprintf("iperf3 pid %d state %s", p.PID, p.State)
		if p.WChan != "-" && p.WChan != "0" {
			s += " in " + p.WChan
		}
		parts = append(parts, s)
	case l.HasProcesses:
		parts = append(parts, fmt.Sprintf("no iperf3 process with -c %s -p %d", server, port))
	}
	return strings.Join(parts, "; ")
}

// handshaken are the states of a connection whose handshake completed
// (TIME-WAIT left out: it outlives its process, an earlier run's leftover).
// A CLOSE-WAIT stream is one the server closed, not one still connecting.
var handshaken = map[string]bool{"ESTAB": true, "CLOSE-WAIT": true, "FIN-WAIT-1": true, "FIN-WAIT-2": true, "LAST-ACK": true, "CLOSING": true}

// otherStates names the counts of c other than ESTAB, SYN-SENT and
// TIME-WAIT, e.g. "2 FIN-WAIT-1, 60 CLOSE-WAIT" (CLOSE-WAIT: the peer
// closed them).
func otherStates(c map[string]int) string {
	var names []string
	for s := range c {
		if s != "ESTAB" && s != "SYN-SENT" && s != "TIME-WAIT" {
			names = append(names, s)
		}
	}
	slices.Sort(names)
	for i, s := range names {
		names[i] = fmt.Sprintf("%d %s", c[s], s)
	}
	return strings.Join(names, ", ")
}
