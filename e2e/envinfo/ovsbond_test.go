package envinfo

import (
	"strings"
	"testing"
)

// The recorded OVS 3.1 bond (testdata/ovsbond, record-ovs-bond.sh): before,
// after its active leg went down, after it came back; the leg taken down is
// the active one read before (<mode>-leg.txt).
func TestParseOVSBondRecorded(t *testing.T) {
	for _, c := range []struct {
		mode, leg, other string
		up, down         int
		restoredActive   string
	}{
		{"active-backup-carrier", "ul1", "ul0", 0, 0, "ul0"},
		{"active-backup-miimon", "ul0", "ul1", 200, 100, "ul1"},
		{"balance-slb", "ul1", "ul0", 0, 0, "ul0"},
		{"balance-tcp", "ul0", "ul1", 0, 0, "ul1"},
	} {
		t.Run(c.mode, func(t *testing.T) {
			if leg := strings.TrimSpace(string(readTestdata(t, "ovsbond/"+c.mode+"-leg.txt"))); leg != c.leg {
				t.Fatalf("the recording took %s down, the test expects %s", leg, c.leg)
			}
			before, err := ParseOVSBond(readTestdata(t, "ovsbond/"+c.mode+"-before.txt"))
			if err != nil {
				t.Fatal(err)
			}
			mode := strings.TrimPrefix(strings.TrimPrefix(c.mode, "active-backup-carrier"), "active-backup-miimon")
			if mode == "" {
				mode = "active-backup"
			}
			if before.Name != "bond-ul" || before.Mode != mode || before.Active != c.leg || before.Enabled() != 2 ||
				before.UpDelayMs != c.up || before.DownDelayMs != c.down || before.LACPStatus != "off" || len(before.Members) != 2 {
				t.Errorf("before: %+v", before)
			}
			down, err := ParseOVSBond(readTestdata(t, "ovsbond/"+c.mode+"-down.txt"))
			if err != nil {
				t.Fatal(err)
			}
			if down.Active != c.other || down.Enabled() != 1 {
				t.Errorf("down: active %q, %d enabled: %+v", down.Active, down.Enabled(), down)
			}
			for _, m := range down.Members {
				if (m.Name == c.leg) == m.Enabled || (m.Name == c.leg) == m.MayEnable {
					t.Errorf("down: member %+v", m)
				}
			}
			restored, err := ParseOVSBond(readTestdata(t, "ovsbond/"+c.mode+"-restored.txt"))
			if err != nil {
				t.Fatal(err)
			}
			// No primary: the bond stays on the member it failed over to.
			if restored.Active != c.restoredActive || restored.Enabled() != 2 {
				t.Errorf("restored: %+v", restored)
			}
		})
	}
}

func TestParseOVSBondRefuses(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{string(readTestdata(t, "ovsbond/no-such-bond.txt")), `no "---- BOND ----" header`},
		{"ovs-appctl: /run/openvswitch/ovs-vswitchd.ctl: server returned an error\n", `no "---- BOND ----" header`},
		{"---- a ----\nbond_mode: active-backup\n---- b ----\nbond_mode: balance-slb\n", "more than one bond (a, b)"},
		{"---- a ----\nbond_mode: active-backup\n\nmember x: enabled\n  active member\n\nmember x: enabled\n", "member x listed twice"},
		{"---- a ----\nbond_mode: active-backup\n\nmember x: enabled\n  active member\n\nmember y: enabled\n  active member\n", "two active members (x, y)"},
		{"---- a ----\nbond_mode: active-backup\nactive member mac: 00:00:00:00:00:01(y)\n\nmember x: enabled\n  active member\n\nmember y: enabled\n", "active member mac names y but x is marked active"},
		{"---- a ----\nbond_mode: active-backup\nupdelay: soon\n\nmember x: sleeping\n", `"updelay: soon": not a count of milliseconds; member x: "sleeping" is neither`},
	} {
		if _, err := ParseOVSBond([]byte(c.in)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseOVSBond(%q) error %v, want %q", c.in, err, c.want)
		}
	}
}

func TestParseOVSMapRecorded(t *testing.T) {
	m, err := ParseOVSMap(readTestdata(t, "ovsbond/active-backup-miimon-other-config.txt"))
	if err != nil || m["bond-detect-mode"] != "miimon" || m["bond-miimon-interval"] != "100" || len(m) != 2 {
		t.Errorf("%v %v", m, err)
	}
	m, err = ParseOVSMap([]byte(`{}`))
	if err != nil || len(m) != 0 {
		t.Errorf("{}: %v %v", m, err)
	}
	m, err = ParseOVSMap([]byte(`{a="x, \"y\"", b=c}`))
	if err != nil || m["a"] != `x, "y"` || m["b"] != "c" {
		t.Errorf("quoted: %v %v", m, err)
	}
	for _, in := range []string{"", "no such port", `{a}`, `{a=b c=d}`, `{a="b}`, `{a=b, a=c}`, `{=b}`} {
		if _, err := ParseOVSMap([]byte(in)); err == nil {
			t.Errorf("ParseOVSMap(%q) took it", in)
		}
	}
}

func TestParseOVSBondList(t *testing.T) {
	names, err := ParseOVSBondList(readTestdata(t, "ovsbond/bond-list.txt"))
	if err != nil || len(names) != 1 || names[0] != "bond-ul" {
		t.Errorf("%v %v", names, err)
	}
	if names, err := ParseOVSBondList([]byte("bond\ttype\trecircID\tmembers\n")); err != nil || len(names) != 0 {
		t.Errorf("no bonds: %v %v", names, err)
	}
	if _, err := ParseOVSBondList([]byte("ovs-appctl: cannot connect\n")); err == nil {
		t.Error("took an error message")
	}
}

// /proc/net/bonding's link monitoring and failure counts, of the recorded
// 802.3ad bond and the derived active-backup one after its first member
// failed.
func TestParseBondingMonitoring(t *testing.T) {
	b, err := ParseBonding(readTestdata(t, "proc-net-bonding-ab-failed-derived.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if b.ShortMode() != "active-backup" || b.Active != "ens1f1np1" || b.MIIPollingMs != 100 || b.UpDelayMs != 0 || b.DownDelayMs != 200 ||
		len(b.Members) != 2 || b.Members[0].LinkFailures != 1 || b.Members[0].Up() || b.Members[1].LinkFailures != 0 {
		t.Errorf("%+v", b)
	}
	b, err = ParseBonding(readTestdata(t, "proc-net-bonding-8023ad-one-down.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if b.Active != "" || b.MIIPollingMs != 100 || b.Members[0].LinkFailures != 2 || b.Members[1].LinkFailures != 2 {
		t.Errorf("%+v", b)
	}
	b, err = ParseBonding(readTestdata(t, "proc-net-bonding-rr-docs.txt"))
	if err != nil || b.DownDelayMs != 0 || b.Members[0].LinkFailures != 1 {
		t.Errorf("%+v %v", b, err)
	}
	if _, err := ParseBonding([]byte("Bonding Mode: x\nMII Polling Interval (ms): often\n")); err == nil || !strings.Contains(err.Error(), "not a count of milliseconds") {
		t.Errorf("took a bad interval: %v", err)
	}
}

// The recorded legs' link_resets: the leg taken down counts its change
// down, then more as it comes back (veth carrier on both ends).
func TestParseOVSLinkResetsRecorded(t *testing.T) {
	before, err := ParseOVSLinkResets(readTestdata(t, "ovsbond/active-backup-carrier-link-resets-before.txt"))
	if err != nil {
		t.Fatal(err)
	}
	down, err := ParseOVSLinkResets(readTestdata(t, "ovsbond/active-backup-carrier-link-resets-down.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if len(before) != 2 || before["ul0"] != 0 || before["ul1"] != 0 || down["ul1"] != 1 || down["ul0"] != 0 {
		t.Errorf("before %v, down %v", before, down)
	}
	for _, in := range []string{"ul0\n", "ul0,x\n", "ul0,1\nul0,2\n", ",1\n", "ul0,-1\n", "ovs-vsctl: no row \"ul9\" in table Interface\n"} {
		if _, err := ParseOVSLinkResets([]byte(in)); err == nil {
			t.Errorf("ParseOVSLinkResets(%q) took it", in)
		}
	}
}
