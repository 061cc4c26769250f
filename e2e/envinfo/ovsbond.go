package envinfo

import (
	"bufio"
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// OVSBond is an Open vSwitch bond's state as `ovs-appctl bond/show <bond>`
// prints it (ofproto/bond.c bond_print_details). Input looks like this
// (OVS 3.1, testdata/ovsbond/active-backup-carrier-down.txt; OVS 2.17 prints
// the same words, before 2.15 "slave" where this says "member"):
//
//	---- bond-ul ----
//	bond_mode: active-backup
//	updelay: 0 ms
//	downdelay: 0 ms
//	lacp_status: off
//	active-backup primary: <none>
//	active member mac: d2:b1:47:44:7b:be(ul0)
//
//	member ul0: enabled
//	  active member
//	  may_enable: true
//
//	member ul1: disabled
//	  may_enable: false
type OVSBond struct {
	Name string // the "---- NAME ----" header
	Mode string // bond_mode: active-backup, balance-slb, balance-tcp
	// UpDelayMs, DownDelayMs are "updelay:" / "downdelay:"; -1 when absent.
	UpDelayMs, DownDelayMs int
	LACPStatus             string // lacp_status: off, negotiated, configured
	// Active is the member marked "active member" (the one that carries
	// the bond's traffic in active-backup, the MAC's member in the balance
	// modes); "" when none is.
	Active  string
	Members []OVSBondMember
}

// OVSBondMember is one "member NAME: enabled|disabled" section.
type OVSBondMember struct {
	Name    string
	Enabled bool
	// MayEnable is "may_enable:" (the link's own state: false while its
	// carrier or miimon says down).
	MayEnable bool
}

var ovsBondHeader = regexp.MustCompile(`^---- (\S+) ----$`)

// ParseOVSBond parses `ovs-appctl bond/show <bond>` of one bond. Output of
// another command (bond/show's "no such bond"), no or two bonds, a member
// named twice or without enabled/disabled, two active members, and an
// active member mac naming another member than the one marked active are
// errors, all at once.
func ParseOVSBond(data []byte) (OVSBond, error) {
	b := OVSBond{UpDelayMs: -1, DownDelayMs: -1}
	var probs []string
	macActive := ""
	cur := -1
	seen := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		raw := sc.Text()
		line := strings.TrimSpace(raw)
		if m := ovsBondHeader.FindStringSubmatch(line); m != nil {
			if b.Name != "" {
				probs = append(probs, fmt.Sprintf("more than one bond (%s, %s): name one", b.Name, m[1]))
				break
			}
			b.Name = m[1]
			continue
		}
		if line == "" {
			continue
		}
		indented := raw != line && cur >= 0
		if indented {
			switch {
			case line == "active member" || line == "active slave":
				if b.Active != "" && b.Active != b.Members[cur].Name {
					probs = append(probs, fmt.Sprintf("two active members (%s, %s)", b.Active, b.Members[cur].Name))
				}
				b.Active = b.Members[cur].Name
			case strings.HasPrefix(line, "may_enable:"):
				b.Members[cur].MayEnable = strings.TrimSpace(strings.TrimPrefix(line, "may_enable:")) == "true"
			}
			continue
		}
		if w, rest, ok := strings.Cut(line, " "); ok && (w == "member" || w == "slave") && strings.Contains(rest, ":") && !strings.HasPrefix(rest, "mac:") {
			name, state, _ := strings.Cut(rest, ":")
			name, state = strings.TrimSpace(name), strings.TrimSpace(state)
			switch {
			case name == "" || strings.ContainsAny(name, " \t"):
				probs = append(probs, fmt.Sprintf("%q names no member", line))
				cur = -1
				continue
			case seen[name]:
				probs = append(probs, "member "+name+" listed twice")
				cur = -1
				continue
			case state != "enabled" && state != "disabled":
				probs = append(probs, fmt.Sprintf("member %s: %q is neither enabled nor disabled", name, state))
			}
			seen[name] = true
			b.Members = append(b.Members, OVSBondMember{Name: name, Enabled: state == "enabled"})
			cur = len(b.Members) - 1
			continue
		}
		cur = -1
		key, value, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		value = strings.TrimSpace(value)
		switch key {
		case "bond_mode":
			b.Mode = value
		case "lacp_status":
			b.LACPStatus = value
		case "updelay", "downdelay":
			n, err := strconv.Atoi(strings.TrimSuffix(value, " ms"))
			if err != nil || n < 0 {
				probs = append(probs, fmt.Sprintf("%q: not a count of milliseconds", line))
				continue
			}
			if key == "updelay" {
				b.UpDelayMs = n
			} else {
				b.DownDelayMs = n
			}
		case "active member mac", "active slave mac":
			// "d2:b1:47:44:7b:be(ul0)"; "00:00:00:00:00:00(none)" with none.
			if i := strings.LastIndexByte(value, '('); i >= 0 && strings.HasSuffix(value, ")") {
				macActive = value[i+1 : len(value)-1]
			}
		}
	}
	if err := sc.Err(); err != nil {
		probs = append(probs, err.Error())
	}
	if b.Name == "" || b.Mode == "" {
		probs = append(probs, fmt.Sprintf("no \"---- BOND ----\" header with a bond_mode: %q", head(bytes.TrimSpace(data), 120)))
	}
	if macActive != "" && macActive != "none" && b.Active != "" && macActive != b.Active {
		probs = append(probs, fmt.Sprintf("active member mac names %s but %s is marked active", macActive, b.Active))
	}
	if len(probs) > 0 {
		return OVSBond{}, fmt.Errorf("ovs-appctl bond/show: %s", strings.Join(probs, "; "))
	}
	return b, nil
}

// Enabled is how many members are enabled.
func (b OVSBond) Enabled() int {
	n := 0
	for _, m := range b.Members {
		if m.Enabled {
			n++
		}
	}
	return n
}

// ParseOVSMap parses an OVSDB map column as `ovs-vsctl get` prints it:
// {bond-detect-mode=miimon, bond-miimon-interval="100"} (values quoted
// when they are not plain words, with \" and \\ inside); "{}" is empty.
func ParseOVSMap(data []byte) (map[string]string, error) {
	s := strings.TrimSpace(string(data))
	if !strings.HasPrefix(s, "{") || !strings.HasSuffix(s, "}") {
		return nil, fmt.Errorf("ovs-vsctl map: want {key=value, ...}, got %q", head([]byte(s), 120))
	}
	s = s[1 : len(s)-1]
	out := map[string]string{}
	i := 0
	word := func() (string, error) {
		for i < len(s) && s[i] == ' ' {
			i++
		}
		if i < len(s) && s[i] == '"' {
			var b strings.Builder
			i++
			for i < len(s) {
				switch c := s[i]; {
				case c == '\\' && i+1 < len(s):
					b.WriteByte(s[i+1])
					i += 2
				case c == '"':
					i++
					return b.String(), nil
				default:
					b.WriteByte(c)
					i++
				}
			}
			return "", fmt.Errorf("ovs-vsctl map: unterminated quote in %q", head([]byte(s), 120))
		}
		j := i
		for i < len(s) && s[i] != '=' && s[i] != ',' {
			i++
		}
		return strings.TrimSpace(s[j:i]), nil
	}
	for i < len(s) {
		k, err := word()
		if err != nil {
			return nil, err
		}
		if i >= len(s) || s[i] != '=' || k == "" {
			return nil, fmt.Errorf("ovs-vsctl map: want key=value, got %q", head([]byte(s), 120))
		}
		i++
		v, err := word()
		if err != nil {
			return nil, err
		}
		if _, dup := out[k]; dup {
			return nil, fmt.Errorf("ovs-vsctl map: key %s twice", k)
		}
		out[k] = v
		for i < len(s) && s[i] == ' ' {
			i++
		}
		if i < len(s) {
			if s[i] != ',' {
				return nil, fmt.Errorf("ovs-vsctl map: want \",\" after %s=%s, got %q", k, v, head([]byte(s[i:]), 40))
			}
			i++
		}
	}
	return out, nil
}

// ParseOVSBondList parses `ovs-appctl bond/list`'s table (bond, type,
// recircID, members) into the bonds' names, in its order.
func ParseOVSBondList(data []byte) ([]string, error) {
	var names []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	first := true
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		if first {
			first = false
			if f[0] != "bond" {
				return nil, fmt.Errorf("ovs-appctl bond/list: want its \"bond type recircID members\" header, got %q", head(bytes.TrimSpace(data), 120))
			}
			continue
		}
		names = append(names, f[0])
	}
	if first {
		return nil, fmt.Errorf("ovs-appctl bond/list: empty output")
	}
	return names, sc.Err()
}

// ParseOVSLinkResets parses `ovs-vsctl --columns=name,link_resets
// --format=csv --no-headings list Interface <members>`: each interface's
// link_resets, how many times OVS saw its link change state (a failure and
// its recovery are two). Input looks like this (OVS 3.1,
// testdata/ovsbond/active-backup-carrier-link-resets-restored.txt):
//
//	ul0,0
//	ul1,4
func ParseOVSLinkResets(data []byte) (map[string]int, error) {
	out := map[string]int{}
	var probs []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		name, count, ok := strings.Cut(line, ",")
		name = strings.Trim(name, `"`)
		n, err := strconv.Atoi(strings.TrimSpace(count))
		switch {
		case !ok || name == "" || strings.ContainsAny(name, " \t") || err != nil || n < 0:
			probs = append(probs, fmt.Sprintf("%q is not \"name,count\"", line))
		case seenKey(out, name):
			probs = append(probs, "interface "+name+" listed twice")
		default:
			out[name] = n
		}
	}
	if err := sc.Err(); err != nil {
		probs = append(probs, err.Error())
	}
	if len(probs) > 0 {
		return nil, fmt.Errorf("ovs-vsctl list Interface link_resets: %s", strings.Join(probs, "; "))
	}
	return out, nil
}

func seenKey(m map[string]int, k string) bool { _, ok := m[k]; return ok }
