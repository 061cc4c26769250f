package offload

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// CaptureFilter builds the tcpdump (pcap-filter) expression that selects only
// the measured flow between the two guests on a representor: IPv4 frames from
// macA to macB or back, optionally one IP protocol ("tcp", "udp", "icmp";
// "" for any). ARP and IPv6 (router advertisements) fail `ip`; DHCP is
// excluded explicitly, and a DHCP server or router never has both guests'
// MACs anyway.
func CaptureFilter(macA, macB, proto string) (string, error) {
	a, err := normalizeMAC(macA)
	if err != nil {
		return "", fmt.Errorf("capture filter: first guest: %w", err)
	}
	b, err := normalizeMAC(macB)
	if err != nil {
		return "", fmt.Errorf("capture filter: second guest: %w", err)
	}
	if a == b {
		return "", fmt.Errorf("capture filter: both guests have MAC %s", a)
	}
	p := ""
	switch proto {
	case "":
	case "tcp", "udp", "icmp":
		p = " and " + proto
	default:
		return "", fmt.Errorf("capture filter: protocol %q: want tcp, udp, icmp or empty", proto)
	}
	return fmt.Sprintf("((ether src %s and ether dst %s) or (ether src %s and ether dst %s)) and ip%s and not (udp port 67 or udp port 68)",
		a, b, b, a, p), nil
}

// Capture is a parsed tcpdump run: the packet lines of `tcpdump -nn -e -tt`
// (stdout) and the summary it prints on stderr when it ends.
type Capture struct {
	Packets []CapturedPacket `json:"packets"`
	// Summary counters; -1 when the line was not in the output.
	Captured       int `json:"captured"`
	ReceivedFilter int `json:"received_by_filter"`
	DroppedKernel  int `json:"dropped_by_kernel"`
	// Interface is from "listening on IF, link-type ..."; empty if absent.
	Interface string `json:"interface,omitempty"`
	// Errors are "tcpdump: ..." lines that are not the verbose notice.
	Errors []string `json:"errors,omitempty"`
	// Skipped counts lines that were neither packets nor known messages.
	Skipped int `json:"skipped_lines"`
}

// CapturedPacket is one line of `tcpdump -nn -e -tt`:
//
//	1764665000.123456 02:00:c6:12:d2:01 > 02:00:c6:12:d2:02, ethertype IPv4 (0x0800), length 98: 198.18.210.1 > 198.18.210.2: ICMP echo request, ...
type CapturedPacket struct {
	Time      float64 `json:"time"` // seconds since the epoch (-tt)
	Src       string  `json:"src"`
	Dst       string  `json:"dst"`
	EtherType string  `json:"ethertype"` // "IPv4", "ARP", "IPv6", ...
	Length    int     `json:"length"`
	Summary   string  `json:"summary"` // the rest of the line after "length N: "
}

// ParseTcpdump parses tcpdump's printed output (stdout and stderr in any
// order). Input with neither a packet line nor a summary/listening line is an
// error: it is not tcpdump output.
func ParseTcpdump(data []byte) (Capture, error) {
	c := Capture{Packets: []CapturedPacket{}, Captured: -1, ReceivedFilter: -1, DroppedKernel: -1}
	known := 0
	for _, raw := range strings.Split(string(data), "\n") {
		line := strings.TrimSpace(raw)
		if line == "" {
			continue
		}
		if n, what, ok := summaryLine(line); ok {
			switch what {
			case "captured":
				c.Captured = n
			case "received by filter":
				c.ReceivedFilter = n
			case "dropped by kernel":
				c.DroppedKernel = n
			}
			known++
			continue
		}
		msg := strings.TrimPrefix(line, "tcpdump: ")
		if strings.HasPrefix(msg, "listening on ") {
			rest := strings.TrimPrefix(msg, "listening on ")
			c.Interface, _, _ = strings.Cut(rest, ",")
			known++
			continue
		}
		if strings.HasPrefix(line, "tcpdump: ") {
			if !strings.HasPrefix(msg, "verbose output suppressed") {
				c.Errors = append(c.Errors, msg)
			}
			known++
			continue
		}
		if p, ok := parsePacketLine(line); ok {
			c.Packets = append(c.Packets, p)
			known++
			continue
		}
		c.Skipped++
	}
	if known == 0 {
		if c.Skipped == 0 {
			return c, errors.New("tcpdump output: empty")
		}
		return c, fmt.Errorf("tcpdump output: none of %d lines is a tcpdump packet (-nn -e -tt) or summary line; first: %q", c.Skipped, firstLine(data))
	}
	return c, nil
}

// summaryLine reads "N packets captured", "N packets received by filter",
// "N packets dropped by kernel" (also "1 packet ...").
func summaryLine(line string) (int, string, bool) {
	num, rest, ok := strings.Cut(line, " ")
	if !ok {
		return 0, "", false
	}
	n, err := strconv.Atoi(num)
	if err != nil || n < 0 {
		return 0, "", false
	}
	rest = strings.TrimPrefix(strings.TrimPrefix(rest, "packets "), "packet ")
	switch rest {
	case "captured", "received by filter", "dropped by kernel":
		return n, rest, true
	}
	return 0, "", false
}

func parsePacketLine(line string) (CapturedPacket, bool) {
	var p CapturedPacket
	f := strings.SplitN(line, " ", 5)
	if len(f) < 5 || f[2] != ">" {
		return p, false
	}
	t, err := strconv.ParseFloat(f[0], 64)
	if err != nil || t < 0 {
		return p, false
	}
	src, err1 := normalizeMAC(f[1])
	dst, err2 := normalizeMAC(strings.TrimSuffix(f[3], ","))
	if err1 != nil || err2 != nil {
		return p, false
	}
	p.Time, p.Src, p.Dst = t, src, dst
	rest := f[4] // "ethertype IPv4 (0x0800), length 98: ..."
	if et, ok := strings.CutPrefix(rest, "ethertype "); ok {
		p.EtherType, _, _ = strings.Cut(et, " ")
		p.EtherType = strings.TrimSuffix(p.EtherType, ",")
	}
	if i := strings.Index(rest, "length "); i >= 0 {
		l := rest[i+len("length "):]
		num, summary, _ := strings.Cut(l, ":")
		if n, err := strconv.Atoi(strings.TrimSpace(num)); err == nil {
			p.Length = n
		}
		p.Summary = strings.TrimSpace(summary)
	}
	return p, true
}

// CaptureJudgement holds what the capture verdict is based on.
type CaptureJudgement struct {
	FlowPackets int     `json:"flow_packets"` // packets of the guests' IPv4 flow seen
	Rate        float64 `json:"rate_pps"`     // packets per second over the window
	Window      string  `json:"window"`
}

// JudgeCapture decides the representor check: offloaded when at most
// firstPackets packets of the guests' IPv4 flow reached the representor in
// the capture window, software when more kept coming (count and rate in the
// reason), inconclusive when tcpdump reported an error or dropped packets
// while seeing too few to decide. With no MACs, every IPv4 packet counts.
// window is the capture's duration (0 when unknown: the rate is then taken
// from the packets' own timestamps).
func JudgeCapture(c Capture, macs []string, firstPackets int, window time.Duration) (Verdict, string, CaptureJudgement) {
	var j CaptureJudgement
	set, err := newMACSet(macs)
	if err != nil {
		return Inconclusive, "bad guest MAC: " + err.Error(), j
	}
	if firstPackets < 0 {
		return Inconclusive, fmt.Sprintf("first packets allowance must be >= 0, got %d", firstPackets), j
	}
	if len(c.Errors) > 0 {
		return Inconclusive, "tcpdump: " + strings.Join(c.Errors, "; "), j
	}
	var first, last float64
	for _, p := range c.Packets {
		if p.EtherType != "IPv4" || !set.has(p.Src) || !set.has(p.Dst) {
			continue
		}
		if j.FlowPackets == 0 {
			first = p.Time
		}
		last = p.Time
		j.FlowPackets++
	}
	// Lines may be missing if tcpdump was killed before flushing: trust the
	// summary's count of filtered packets when it is larger (the capture
	// filter already selects only the flow).
	seen := j.FlowPackets
	if c.Captured > seen && len(c.Packets) == j.FlowPackets {
		seen = c.Captured
	}
	span := window
	if span <= 0 && last > first {
		span = time.Duration((last - first) * float64(time.Second))
	}
	j.Window = span.String()
	if span > 0 {
		j.Rate = float64(seen) / span.Seconds()
	}
	if c.Captured < 0 && len(c.Packets) == 0 {
		return Inconclusive, "no packet lines and no tcpdump summary: the capture did not run or was cut off", j
	}
	drop := ""
	if c.DroppedKernel > 0 {
		drop = fmt.Sprintf(", %d dropped by the kernel", c.DroppedKernel)
	}
	if seen > firstPackets {
		return Software, fmt.Sprintf("%d packets of the guests' flow (%s) reached the representor in %s (%.0f packets/s%s); at most %d allowed before offload takes over",
			seen, set, span, j.Rate, drop, firstPackets), j
	}
	if c.DroppedKernel > 0 {
		return Inconclusive, fmt.Sprintf("only %d packets of the guests' flow captured but %d dropped by the kernel: the capture is incomplete", seen, c.DroppedKernel), j
	}
	return Offloaded, fmt.Sprintf("%d packets of the guests' flow (%s) reached the representor in %s (at most %d allowed)", seen, set, span, firstPackets), j
}

// ParseInterfaceNames parses `ovs-vsctl --bare --columns=name find Interface
// external_ids:iface-id=<port-id>`: one name per line (blank lines between
// records). Empty output is no interface.
func ParseInterfaceNames(data []byte) ([]string, error) {
	names := []string{}
	for _, l := range strings.Split(string(data), "\n") {
		l = strings.TrimSpace(l)
		if l == "" {
			continue
		}
		if strings.ContainsAny(l, " \t\"=,") {
			return names, fmt.Errorf("ovs-vsctl interface names: %q is not an interface name", l)
		}
		names = append(names, l)
	}
	return names, nil
}
