package offload

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/results"
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
	FlowPackets int     `json:"flow_packets"` // packets of the guests' IPv4 flow seen on the representor
	Rate        float64 `json:"rate_pps"`     // packets per second over the window
	Window      string  `json:"window"`
	// ArrivalSpan is the time between the first and the last of those
	// packets, from their own timestamps ("0s" for fewer than two): the
	// first packets of a flow that offload then takes over arrive in a
	// short burst at its start.
	ArrivalSpan string `json:"arrival_span"`
	// ControlPackets is how many packets of the flow the control capture
	// on the guest's own interface saw; -1 when there is no usable one.
	ControlPackets int `json:"control_packets"`
	// Captured, ReceivedByFilter and DroppedByKernel are tcpdump's own
	// summary of the representor capture; -1 when it printed none.
	Captured         int `json:"captured"`
	ReceivedByFilter int `json:"received_by_filter"`
	DroppedByKernel  int `json:"dropped_by_kernel"`
}

// ControlCapture is the positive control of a representor capture: the same
// filter on the guest's own data interface in the same window. The flow's
// packets show there whichever path forwards them, so a quiet representor
// says "offloaded" only next to a busy control; a wrong interface, a wrong
// filter or a flow that never ran leave both quiet.
type ControlCapture struct {
	Guest string // the guest's name, for messages
	Iface string // the guest's data interface
	// Capture is the parsed control capture; nil when there is none.
	Capture *Capture
	// Problem says why Capture is nil (tcpdump missing, exit status,
	// unreadable output). Empty with a nil Capture: no control was taken.
	Problem string
}

func (ctl ControlCapture) where() string {
	if ctl.Guest == "" {
		return ctl.Iface
	}
	return ctl.Iface + " of " + ctl.Guest
}

// JudgeCapture judges a representor capture with no control capture beside
// it (e.g. re-analysing one saved file): a full capture is still software,
// but a quiet one is inconclusive, since nothing shows the flow crossed the
// port in that window. It is JudgeCaptureWithControl with no control.
func JudgeCapture(c Capture, macs []string, firstPackets int, window time.Duration) (results.Verdict, string, CaptureJudgement) {
	return JudgeCaptureWithControl(c, ControlCapture{}, macs, firstPackets, window)
}

// JudgeCaptureWithControl decides the representor check. Software when more
// than firstPackets packets of the guests' IPv4 flow reached the representor
// (count, arrival span and rate in the reason), whatever the control says;
// tcpdump's own summary counts there too: packets "received by filter" but
// not printed (the -c limit, or still in the ring when tcpdump stopped)
// crossed the representor all the same. A capture without that summary
// (killed, truncated) cannot say "offloaded": its silence proves nothing.
// Offloaded only when at most firstPackets did AND the control capture on
// the guest's interface saw more than firstPackets of the same flow in the
// same window. Inconclusive when either capture reported an error, the
// representor's kernel dropped packets while it saw too few to decide, or
// the control is missing, failed or too small. With no MACs, every IPv4
// packet counts. window is the capture's duration (0 when unknown: the rate
// is then taken from the packets' own timestamps).
func JudgeCaptureWithControl(c Capture, ctl ControlCapture, macs []string, firstPackets int, window time.Duration) (results.Verdict, string, CaptureJudgement) {
	j := CaptureJudgement{ControlPackets: -1, Captured: c.Captured, ReceivedByFilter: c.ReceivedFilter, DroppedByKernel: c.DroppedKernel}
	set, err := newMACSet(macs)
	if err != nil {
		return results.VerdictInconclusive, "bad guest MAC: " + err.Error(), j
	}
	if firstPackets < 0 {
		return results.VerdictInconclusive, fmt.Sprintf("first packets allowance must be >= 0, got %d", firstPackets), j
	}
	if len(c.Errors) > 0 {
		return results.VerdictInconclusive, "tcpdump: " + strings.Join(c.Errors, "; "), j
	}
	seen, lines, first, last := flowCount(c, set)
	j.FlowPackets = lines
	arrival := time.Duration(0)
	if last > first {
		arrival = time.Duration((last - first) * float64(time.Second))
	}
	j.ArrivalSpan = arrival.String()
	span := window
	if span <= 0 {
		span = arrival
	}
	j.Window = span.String()
	if span > 0 {
		j.Rate = float64(seen) / span.Seconds()
	}
	ctlSeen, ctlProblem := controlCount(ctl, set)
	if ctlProblem == "" {
		j.ControlPackets = ctlSeen
	}
	if c.Captured < 0 && len(c.Packets) == 0 {
		return results.VerdictInconclusive, "no packet lines and no tcpdump summary: the capture did not run or was cut off", j
	}
	drop := ""
	if c.DroppedKernel > 0 {
		drop = fmt.Sprintf(", %d dropped by the kernel", c.DroppedKernel)
	}
	counted := ""
	if seen > lines {
		counted = fmt.Sprintf(" (%d printed; tcpdump's summary: %s)", lines, summaryText(c))
	}
	if seen > firstPackets {
		control := ""
		if ctlProblem == "" {
			control = fmt.Sprintf("; the control capture on %s saw %d", ctl.where(), ctlSeen)
		}
		return results.VerdictSoftware, fmt.Sprintf("%d packets of the guests' flow (%s) reached the representor%s%s (%.0f packets/s over %s%s); at most %d allowed before offload takes over%s",
			seen, set, counted, arrivalNote(lines, arrival), j.Rate, span, drop, firstPackets, control), j
	}
	if c.Captured < 0 {
		return results.VerdictInconclusive, fmt.Sprintf("%d packets of the guests' flow printed, but tcpdump printed no summary (packets captured / received by filter / dropped by kernel): the capture was killed or cut off, so its silence proves nothing", lines), j
	}
	if c.DroppedKernel > 0 {
		return results.VerdictInconclusive, fmt.Sprintf("only %d packets of the guests' flow captured but %d dropped by the kernel: the capture is incomplete", seen, c.DroppedKernel), j
	}
	if ctlProblem != "" {
		return results.VerdictInconclusive, fmt.Sprintf("%s, so a quiet representor capture (%d packets of the guests' flow in %s) proves nothing", ctlProblem, seen, span), j
	}
	if ctlSeen <= firstPackets {
		return results.VerdictInconclusive, fmt.Sprintf("the control capture on %s saw only %d packets: the flow did not cross this port in the window (wrong interface, filter or no traffic), so an empty representor capture proves nothing (%d packets of the guests' flow in %s)",
			ctl.where(), ctlSeen, seen, span), j
	}
	return results.VerdictOffloaded, fmt.Sprintf("%d packets of the guests' flow (%s) reached the representor in %s%s (at most %d allowed; tcpdump's summary: %s), while the control capture on %s saw %d",
		seen, set, span, arrivalNote(lines, arrival), firstPackets, summaryText(c), ctl.where(), ctlSeen), j
}

// summaryText is tcpdump's summary as read, "-" for a line it did not print.
func summaryText(c Capture) string {
	n := func(v int) string {
		if v < 0 {
			return "-"
		}
		return fmt.Sprint(v)
	}
	return fmt.Sprintf("%s captured, %s received by filter, %s dropped by kernel", n(c.Captured), n(c.ReceivedFilter), n(c.DroppedKernel))
}

// arrivalNote says over what span the counted packet lines arrived.
func arrivalNote(lines int, span time.Duration) string {
	if lines == 0 {
		return ""
	}
	return ", arriving within " + span.String()
}

// flowCount counts the packets of the guests' IPv4 flow in c: lines is the
// packet lines that match, first and last their timestamps. seen is lines,
// or tcpdump's own "captured" or "received by filter" count when that is
// larger and every line matched: lines go missing when tcpdump is killed
// before it flushes stdout, packets the filter accepted stay unprinted past
// -c or in the ring when tcpdump stops (on Linux "received by filter" is
// the socket's tp_packets, which counts what passed the filter, drops
// included), and the capture filter already selects only the flow.
func flowCount(c Capture, set macSet) (seen, lines int, first, last float64) {
	for _, p := range c.Packets {
		if p.EtherType != "IPv4" || !set.has(p.Src) || !set.has(p.Dst) {
			continue
		}
		if lines == 0 {
			first = p.Time
		}
		last = p.Time
		lines++
	}
	seen = lines
	if len(c.Packets) == lines {
		seen = max(seen, c.Captured, c.ReceivedFilter)
	}
	return seen, lines, first, last
}

// controlCount is how many packets of the flow the control capture saw, or
// why it shows nothing.
func controlCount(ctl ControlCapture, set macSet) (int, string) {
	switch {
	case ctl.Capture == nil && ctl.Problem != "":
		return 0, fmt.Sprintf("the control capture on %s failed: %s", ctl.where(), ctl.Problem)
	case ctl.Capture == nil:
		return 0, "no control capture was taken on the guest's own interface"
	case len(ctl.Capture.Errors) > 0:
		return 0, fmt.Sprintf("the control capture on %s failed: tcpdump: %s", ctl.where(), strings.Join(ctl.Capture.Errors, "; "))
	case ctl.Capture.Captured < 0 && len(ctl.Capture.Packets) == 0:
		return 0, fmt.Sprintf("the control capture on %s has no packet lines and no tcpdump summary: it did not run or was cut off", ctl.where())
	}
	seen, _, _, _ := flowCount(*ctl.Capture, set)
	return seen, ""
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
