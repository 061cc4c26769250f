// Package conntrack reads the kernel's connection tracking table of a
// hypervisor and judges, for the connections a run opened between its
// pair, whether the kernel holds them as offloaded to hardware: the
// conntrack proof of a port-security run (data_port.port_security), where
// Neutron's OVS firewall sends every packet of the pair through ct().
//
// Pure functions over recorded output (testdata/README.md names each
// sample's source); no project imports. The kernel marks an entry
// [HW_OFFLOAD] when the hardware owns it and [OFFLOAD] when the software
// flowtable does (net/netfilter/nf_conntrack_standalone.c, ct_seq_show;
// the bits are exclusive in the listing): only [HW_OFFLOAD] counts as
// hardware, and an entry with neither is tracked in software.
//
// Both listings are read, whichever the host has: /proc/net/nf_conntrack
//
//	ipv4     2 tcp      6 src=1.1.1.17 dst=1.1.1.16 sport=56408 dport=5001 src=1.1.1.16 dst=1.1.1.17 sport=5001 dport=56408 [HW_OFFLOAD] mark=0 zone=0 use=3
//
// and conntrack-tools' `conntrack -L` (no family columns; its summary line,
// written to standard error, is skipped where it was captured with the rest):
//
//	tcp      6 431981 ESTABLISHED src=172.20.36.14 dst=172.31.2.45 sport=59930 dport=17652 src=172.31.2.45 dst=172.20.36.14 sport=17652 dport=59930 [ASSURED] mark=0 use=1
//
// An entry the flowtable owns shows no timeout and no TCP state.
//
// Where things are:
//
//   - Parse: both listings, tuples, TCP state and flags. Judge: the run's
//     flows (IperfFlows: -P N is N+1 TCP connections, UDP N plus 1 control)
//     against the table: offloaded only when every connection opened is live
//     and [HW_OFFLOAD] in every zone; missing, extra, flowtable and software
//     connections counted in the reason; ICMP refused as proof. ReadCommand;
//     SizeCommand and ParseSize, the fill against nf_conntrack_max. The
//     evidence window runs it through e2e/offload's conntrack check.
//   - dpctl.go: OVS's own table, ParseDPCtl of dpctl/dump-conntrack (the
//     userspace datapath's conntrack, which the kernel's listing lacks; no
//     offload status there), DPCtlSizeCommand.
//   - scale.go: the connection-scale profile's sampling, run by the harness's
//     RunConnections. Sampler reads every intervals.conntrack_sample.poll from
//     the clients' start, only while a read can end before iperf3's omit
//     period does: no read starts when the longest so far would cross it, each
//     read's context ends there, and a read that ended later is dropped and
//     ends the sampling (the clock injected). SampleOf is one read (the
//     kernel's table, else OVS's userspace one); Summarize, the share at the
//     last read and the first read at which every opened connection is
//     [HW_OFFLOAD].
package conntrack

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// Offload is who owns a tracked connection.
type Offload string

const (
	// OffloadHardware: [HW_OFFLOAD], the NIC's flow table holds it.
	OffloadHardware Offload = "hardware"
	// OffloadFlowtable: [OFFLOAD], the kernel's software flowtable (act_ct's
	// or nftables' fast path): still the CPU, never hardware.
	OffloadFlowtable Offload = "software flowtable"
	// OffloadNone: tracked by conntrack in software, packet by packet.
	OffloadNone Offload = "software"
)

// Tuple is one direction of a connection. ICMP has Type, Code and ID
// instead of ports.
type Tuple struct {
	Src, Dst     netip.Addr
	SPort, DPort uint16
	ICMPType     int
	ICMPCode     int
	ICMPID       int
	Packets      uint64 // with nf_conntrack_acct; 0 otherwise
	Bytes        uint64
}

// Entry is one line of the table.
type Entry struct {
	Line     int    // 1-based line in the listing
	Family   string // "ipv4" / "ipv6" (/proc); "" from conntrack -L
	Proto    string // "tcp", "udp", "icmp", "ipv6-icmp", ...
	ProtoNum int
	// Timeout in seconds; -1 when the line has none (the flowtable owns
	// the entry).
	Timeout int
	State   string // TCP state ("ESTABLISHED"); "" for other protocols and offloaded entries
	Orig    Tuple
	Reply   Tuple
	Flags   []string // bracketed words in order: ASSURED, UNREPLIED, OFFLOAD, HW_OFFLOAD, ...
	Offload Offload
	Zone    int // 0 when the line has none (old kernels, conntrack -L without zones)
	Mark    uint64
	// Counted: the line carries the per-direction counters (packets=,
	// bytes=: nf_conntrack_acct is on), so Orig and Reply's Packets are
	// what the kernel counted, not zeros for "unknown".
	Counted bool
}

// Summary line of conntrack -L ("conntrack v1.4.6 (conntrack-tools): 12 flow
// entries have been shown."), written to standard error.
func isSummary(line string) bool {
	return strings.HasPrefix(line, "conntrack v") && strings.HasSuffix(line, "have been shown.")
}

// Parse reads a /proc/net/nf_conntrack or `conntrack -L` listing. Every
// line that is not an entry (nor conntrack's summary, nor blank) is an
// error naming its number and text; all of them are reported at once.
func Parse(data []byte) ([]Entry, error) {
	return parseLines(data, "conntrack table", isSummary, parseLine)
}

// parseLines parses each non-blank line that skip does not drop, naming
// every bad line (its number and text) at once under what.
func parseLines(data []byte, what string, skip func(string) bool, parse func(string) (Entry, error)) ([]Entry, error) {
	var out []Entry
	var errs []error
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || skip(line) {
			continue
		}
		e, err := parse(line)
		if err != nil {
			errs = append(errs, fmt.Errorf("line %d: %w: %q", i+1, err, line))
			continue
		}
		e.Line = i + 1
		out = append(out, e)
	}
	if err := errors.Join(errs...); err != nil {
		return out, fmt.Errorf("%s: %w", what, err)
	}
	return out, nil
}

func parseLine(line string) (Entry, error) {
	f := strings.Fields(line)
	e := Entry{Timeout: -1}
	i := 0
	if len(f) > 0 && (f[0] == "ipv4" || f[0] == "ipv6") {
		if len(f) < 2 {
			return e, errors.New("family without its number")
		}
		if _, err := strconv.Atoi(f[1]); err != nil {
			return e, fmt.Errorf("family number %q", f[1])
		}
		e.Family, i = f[0], 2
	}
	if len(f) < i+2 {
		return e, errors.New("no protocol name and number")
	}
	if strings.Contains(f[i], "=") || strings.HasPrefix(f[i], "[") {
		return e, fmt.Errorf("want a protocol name, got %q", f[i])
	}
	n, err := strconv.Atoi(f[i+1])
	if err != nil {
		return e, fmt.Errorf("protocol number %q", f[i+1])
	}
	e.Proto, e.ProtoNum = f[i], n
	i += 2
	if i < len(f) && !strings.Contains(f[i], "=") && !strings.HasPrefix(f[i], "[") {
		t, err := strconv.Atoi(f[i])
		if err != nil {
			return e, fmt.Errorf("timeout %q", f[i])
		}
		e.Timeout = t
		i++
	}
	if i < len(f) && !strings.Contains(f[i], "=") && !strings.HasPrefix(f[i], "[") {
		e.State = f[i]
		i++
	}
	tuples := 0
	var cur *Tuple
	for _, tok := range f[i:] {
		if strings.HasPrefix(tok, "[") && strings.HasSuffix(tok, "]") {
			e.Flags = append(e.Flags, strings.Trim(tok, "[]"))
			continue
		}
		k, v, ok := strings.Cut(tok, "=")
		if !ok {
			return e, fmt.Errorf("unexpected word %q", tok)
		}
		switch k {
		case "src":
			tuples++
			switch tuples {
			case 1:
				cur = &e.Orig
			case 2:
				cur = &e.Reply
			default:
				return e, errors.New("more than two tuples")
			}
			a, err := netip.ParseAddr(v)
			if err != nil {
				return e, fmt.Errorf("src %q: %w", v, err)
			}
			cur.Src = a
		case "dst", "sport", "dport", "type", "code", "id", "packets", "bytes":
			if cur == nil {
				return e, fmt.Errorf("%s before the first src", k)
			}
			if err := setField(cur, k, v); err != nil {
				return e, err
			}
			e.Counted = e.Counted || k == "packets"
		case "zone":
			z, err := strconv.Atoi(v)
			if err != nil {
				return e, fmt.Errorf("zone %q", v)
			}
			e.Zone = z
		case "mark":
			m, err := strconv.ParseUint(v, 0, 64)
			if err != nil {
				return e, fmt.Errorf("mark %q", v)
			}
			e.Mark = m
		default: // use, secmark, secctx, labels, delta-time, ...: not needed
		}
	}
	if tuples != 2 {
		return e, fmt.Errorf("want an original and a reply tuple, got %d", tuples)
	}
	if !e.Orig.Dst.IsValid() || !e.Reply.Dst.IsValid() {
		return e, errors.New("a tuple without dst")
	}
	e.Offload = OffloadNone
	for _, fl := range e.Flags {
		switch fl {
		case "HW_OFFLOAD":
			e.Offload = OffloadHardware
		case "OFFLOAD":
			if e.Offload != OffloadHardware {
				e.Offload = OffloadFlowtable
			}
		}
	}
	return e, nil
}

func setField(t *Tuple, k, v string) error {
	if k == "dst" {
		a, err := netip.ParseAddr(v)
		if err != nil {
			return fmt.Errorf("dst %q: %w", v, err)
		}
		t.Dst = a
		return nil
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return fmt.Errorf("%s %q", k, v)
	}
	switch k {
	case "sport", "dport":
		if n > 65535 {
			return fmt.Errorf("%s %q: beyond 65535", k, v)
		}
		if k == "sport" {
			t.SPort = uint16(n)
		} else {
			t.DPort = uint16(n)
		}
	case "type":
		t.ICMPType = int(n)
	case "code":
		t.ICMPCode = int(n)
	case "id":
		t.ICMPID = int(n)
	case "packets":
		t.Packets = n
	case "bytes":
		t.Bytes = n
	}
	return nil
}

// HasFlag reports whether the entry carries the bracketed word fl.
func (e Entry) HasFlag(fl string) bool {
	for _, f := range e.Flags {
		if f == fl {
			return true
		}
	}
	return false
}
