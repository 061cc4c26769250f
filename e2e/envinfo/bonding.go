package envinfo

import (
	"bufio"
	"bytes"
	"fmt"
	"strconv"
	"strings"
)

// Bonding is a bond's state as /proc/net/bonding/<bond> gives it. Input
// looks like this (the kernel's Documentation/networking/bonding.rst; see
// testdata/README.md):
//
//	Ethernet Channel Bonding Driver: 2.6.1 (October 29, 2004)
//	Bonding Mode: load balancing (round-robin)
//	Currently Active Slave: eth0
//	MII Status: up
//	...
//	Slave Interface: eth1
//	MII Status: up
//	Link Failure Count: 1
type Bonding struct {
	// Mode is the "Bonding Mode:" line as the kernel writes it ("IEEE
	// 802.3ad Dynamic link aggregation"); ShortMode gives its name.
	Mode string
	// MIIStatus is the bond's own ("up", "down").
	MIIStatus string
	// Active is "Currently Active Slave:" (active-backup; "" when the file
	// has none, "None" when the bond has no active member).
	Active string
	// MIIPollingMs, UpDelayMs and DownDelayMs are the bond's link
	// monitoring ("MII Polling Interval (ms):", "Up Delay (ms):", "Down
	// Delay (ms):"); -1 when the file does not say.
	MIIPollingMs, UpDelayMs, DownDelayMs int
	// Members in the file's order.
	Members []BondMember
}

// BondMember is one "Slave Interface:" section.
type BondMember struct {
	Name      string
	MIIStatus string
	// LinkFailures is "Link Failure Count:"; -1 when the file does not say.
	LinkFailures int
}

// Up reports whether the member's link is up.
func (m BondMember) Up() bool { return m.MIIStatus == "up" }

// bondModes maps the kernel's "Bonding Mode:" text (bond_mode_name in
// drivers/net/bonding/bond_main.c) to the mode's name as `ip link` and
// the bonding module's mode= option spell it.
var bondModes = map[string]string{
	"load balancing (round-robin)":          "balance-rr",
	"fault-tolerance (active-backup)":       "active-backup",
	"load balancing (xor)":                  "balance-xor",
	"fault-tolerance (broadcast)":           "broadcast",
	"IEEE 802.3ad Dynamic link aggregation": "802.3ad",
	"transmit load balancing":               "balance-tlb",
	"adaptive load balancing":               "balance-alb",
}

// ShortMode is the mode's name ("802.3ad", "active-backup"), the kernel's
// text when it is none this parser knows.
func (b Bonding) ShortMode() string {
	if s, ok := bondModes[b.Mode]; ok {
		return s
	}
	return b.Mode
}

// Up is how many members are up.
func (b Bonding) Up() int {
	n := 0
	for _, m := range b.Members {
		if m.Up() {
			n++
		}
	}
	return n
}

// State is the bond's state in one line, what the fleet's drift compares:
// "802.3ad, 1/2 members up (enp1s0f0 down, enp1s0f1 up)".
func (b Bonding) State() string {
	var ms []string
	for _, m := range b.Members {
		ms = append(ms, m.Name+" "+m.MIIStatus)
	}
	s := fmt.Sprintf("%s, %d/%d members up", b.ShortMode(), b.Up(), len(b.Members))
	if len(ms) > 0 {
		s += " (" + strings.Join(ms, ", ") + ")"
	}
	return s
}

// ParseBonding parses /proc/net/bonding/<bond>. A file without a "Bonding
// Mode:" line (cat's "No such file or directory", another file), a member
// named twice and a member without its "MII Status:" are errors, all at
// once. Lines of no interest (LACP details, counters) are skipped.
func ParseBonding(data []byte) (Bonding, error) {
	b := Bonding{MIIPollingMs: -1, UpDelayMs: -1, DownDelayMs: -1}
	var probs []string
	cur := -1 // index of the member whose section this is; -1 = the bond's
	seen := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		key, value, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		value = strings.TrimSpace(value)
		switch key {
		case "Bonding Mode":
			if cur == -1 {
				b.Mode = value
			}
		case "Slave Interface":
			if value == "" || strings.ContainsAny(value, " \t") {
				probs = append(probs, fmt.Sprintf("%q names no interface", line))
				cur = -2 // skip its section
				continue
			}
			if seen[value] {
				probs = append(probs, "member "+value+" listed twice")
				cur = -2
				continue
			}
			seen[value] = true
			b.Members = append(b.Members, BondMember{Name: value, LinkFailures: -1})
			cur = len(b.Members) - 1
		case "Currently Active Slave":
			if cur == -1 {
				b.Active = value
			}
		case "MII Polling Interval (ms)", "Up Delay (ms)", "Down Delay (ms)":
			n, err := strconv.Atoi(value)
			if cur != -1 || err != nil || n < 0 {
				if cur == -1 {
					probs = append(probs, fmt.Sprintf("%q: not a count of milliseconds", line))
				}
				continue
			}
			*map[string]*int{"MII Polling Interval (ms)": &b.MIIPollingMs, "Up Delay (ms)": &b.UpDelayMs, "Down Delay (ms)": &b.DownDelayMs}[key] = n
		case "Link Failure Count":
			if n, err := strconv.Atoi(value); cur >= 0 && err == nil && n >= 0 {
				b.Members[cur].LinkFailures = n
			} else if cur >= 0 {
				probs = append(probs, fmt.Sprintf("member %s: %q is not a count", b.Members[cur].Name, line))
			}
		case "MII Status":
			switch {
			case cur == -1 && b.MIIStatus == "":
				b.MIIStatus = value
			case cur >= 0 && b.Members[cur].MIIStatus == "":
				b.Members[cur].MIIStatus = value
			}
		}
	}
	if err := sc.Err(); err != nil {
		probs = append(probs, err.Error())
	}
	if b.Mode == "" {
		probs = append(probs, fmt.Sprintf("no \"Bonding Mode:\" line: %q", head(bytes.TrimSpace(data), 120)))
	}
	for _, m := range b.Members {
		if m.MIIStatus == "" || strings.ContainsAny(m.MIIStatus, " \t") {
			probs = append(probs, fmt.Sprintf("member %s: no \"MII Status:\" word", m.Name))
		}
	}
	if len(probs) > 0 {
		return Bonding{}, fmt.Errorf("/proc/net/bonding: %s", strings.Join(probs, "; "))
	}
	return b, nil
}
