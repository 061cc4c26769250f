package envinfo

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func readTestdata(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The recording of this machine's namespace: veth0 enslaved to a bridge,
// both at MTU 9000; no eswitch port, so no uplink and no bond.
func TestParseLinksRecordedVethBridge(t *testing.T) {
	links, err := ParseLinks(readTestdata(t, "ip-j-d-link-veth-bridge.json"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, l := range links {
		names = append(names, l.Name)
	}
	if got := strings.Join(names, " "); got != "lo veth1 veth0 br0" {
		t.Fatalf("links %q", got)
	}
	v0, _ := LinkNamed(links, "veth0")
	if v0.MTU != 9000 || v0.Master != "br0" || v0.Kind != "veth" || v0.SlaveKind != "bridge" || v0.OperState != "UP" || v0.Index != 3 {
		t.Errorf("veth0 %+v", v0)
	}
	lo, _ := LinkNamed(links, "lo")
	if lo.MTU != 65536 || lo.Kind != "" || lo.Master != "" {
		t.Errorf("lo %+v", lo)
	}
	if _, err := UplinkOf(links, "veth0"); !errors.Is(err, ErrNotEswitchPort) {
		t.Errorf("UplinkOf(veth0) error %v, want ErrNotEswitchPort", err)
	}
	// veth0's master is a bridge, not a bond.
	if b, ok := BondOf(links, v0); ok {
		t.Errorf("BondOf(veth0) = %+v", b)
	}
	if _, err := UplinkOf(links, "tap0"); err == nil || !strings.Contains(err.Error(), "no link tap0") {
		t.Errorf("UplinkOf(tap0) error %v", err)
	}
}

// A ConnectX pair in switchdev with VF-LAG (test input in the recording's
// format, testdata/README.md): the VF representor's uplink is p0 of the
// same switch, enslaved to bond0.
func TestUplinkAndBondOfARepresentor(t *testing.T) {
	links, err := ParseLinks(readTestdata(t, "ip-j-d-link-asap2-vflag.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, rep := range []string{"enp1s0f0_0", "enp1s0f0_1"} {
		up, err := UplinkOf(links, rep)
		if err != nil {
			t.Fatalf("%s: %v", rep, err)
		}
		if up.Name != "enp1s0f0" || up.ParentBus != "pci" || up.ParentDev != "0000:03:00.0" || up.MTU != 9000 {
			t.Errorf("%s: uplink %+v", rep, up)
		}
		bond, ok := BondOf(links, up)
		if !ok || bond.Name != "bond0" || bond.MTU != 9000 {
			t.Errorf("%s: bond %+v %v", rep, bond, ok)
		}
	}
	// The representors' master is OVS's datapath, no bond.
	r, _ := LinkNamed(links, "enp1s0f0_0")
	if _, ok := BondOf(links, r); ok {
		t.Error("a representor in ovs-system taken for a bond member")
	}
	// An uplink port name is no representor's.
	if _, err := UplinkOf(links, "enp1s0f1"); err == nil || !strings.Contains(err.Error(), `"p1" is no VF or SF representor's`) {
		t.Errorf("UplinkOf(uplink) error %v", err)
	}
}

func TestParseLinksBadInput(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`Option "-j" is unknown, try "ip -help".`, `not a JSON array of links`},
		{`{"ifname":"x"}`, `not a JSON array`},
		{`[{"ifindex":1,"mtu":1500},{"ifname":"a"},{"ifname":"b","mtu":0},{"ifname":"a","mtu":9000}]`,
			`link 1: no ifname; link 2 (a): no positive mtu; link 3 (b): no positive mtu; link 4 (a): name given again (first as link 2)`},
	} {
		_, err := ParseLinks([]byte(c.in))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseLinks(%q) error %v, want %q", c.in, err, c.want)
		}
	}
}

func TestParseEswitch(t *testing.T) {
	for _, c := range []struct{ file, dev, mode, inline string }{
		{"devlink-eswitch-switchdev.json", "pci/0000:03:00.0", "switchdev", ""},
		{"devlink-eswitch-switchdev.txt", "pci/0000:08:00.0", "switchdev", "none"},
	} {
		e, err := ParseEswitch(readTestdata(t, c.file))
		if err != nil {
			t.Fatalf("%s: %v", c.file, err)
		}
		if e.Dev != c.dev || e.Mode != c.mode || e.Attrs["inline-mode"] != c.inline {
			t.Errorf("%s: %+v", c.file, e)
		}
	}
	for _, c := range []struct{ file, want string }{
		{"devlink-eswitch-empty.json", "want the attributes of one device, got 0"},
		{"devlink-eswitch-no-netlink.stderr", `is not "<bus>/<device>: <attribute> <value> ..."`},
	} {
		_, err := ParseEswitch(readTestdata(t, c.file))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.file, err, c.want)
		}
	}
	for _, c := range []struct{ in, want string }{
		{`pci/0000:08:00.0: inline-mode none encap-mode basic`, "no mode"},
		{`pci/0000:08:00.0: mode switchdev mode legacy`, "given twice"},
		{"pci/a: mode legacy\npci/b: mode legacy", "want one line"},
		{`{"dev":{"pci/a":{"mode":"legacy"},"pci/b":{"mode":"legacy"}}}`, "got 2 [pci/a pci/b]"},
	} {
		_, err := ParseEswitch([]byte(c.in))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseEswitch(%q) error %v, want %q", c.in, err, c.want)
		}
	}
}

func TestParseBonding(t *testing.T) {
	for _, c := range []struct{ file, state string }{
		{"proc-net-bonding-rr-docs.txt", "balance-rr, 2/2 members up (eth1 up, eth0 up)"},
		// The recording whose first member lost its link.
		{"proc-net-bonding-8023ad-one-down.txt", "802.3ad, 1/2 members up (enp1s0f0 down, enp1s0f1 up)"},
	} {
		b, err := ParseBonding(readTestdata(t, c.file))
		if err != nil {
			t.Fatalf("%s: %v", c.file, err)
		}
		if b.State() != c.state || b.MIIStatus != "up" {
			t.Errorf("%s: state %q (MII %q), want %q", c.file, b.State(), b.MIIStatus, c.state)
		}
	}
	for _, c := range []struct{ in, want string }{
		{"cat: /proc/net/bonding/bond0: No such file or directory\n", `no "Bonding Mode:" line`},
		{"Bonding Mode: x\nSlave Interface: a\nSlave Interface: a\nMII Status: up\nSlave Interface: b\n",
			`member a listed twice; member a: no "MII Status:" word; member b: no "MII Status:" word`},
	} {
		_, err := ParseBonding([]byte(c.in))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseBonding(%q) error %v, want %q", c.in, err, c.want)
		}
	}
}

func TestIsPCIAddress(t *testing.T) {
	for s, want := range map[string]bool{"0000:03:00.0": true, "0000:3b:00.1": true, "": false, "N/A": false, "virtio1": false, "0000:03:00": false} {
		if IsPCIAddress(s) != want {
			t.Errorf("IsPCIAddress(%q) = %v", s, !want)
		}
	}
}
