package envinfo

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func read(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Sample: ConnectX-4 Lx values quoted on the netdev list (see testdata/README.md).
func TestParseEthtoolInfoMLX5(t *testing.T) {
	d, err := ParseEthtoolInfo(read(t, "ethtool-i-mlx5_core-cx4lx.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if d.Driver != "mlx5_core" || d.Version != "5.10.0+" || d.BusInfo != "0000:3b:00.0" {
		t.Errorf("got %+v", d)
	}
	if d.FirmwareVersion != "14.21.2328 (MT_2470112034)" {
		t.Errorf("firmware-version = %q", d.FirmwareVersion)
	}
	fw, psid := d.Firmware()
	if fw != "14.21.2328" || psid != "MT_2470112034" {
		t.Errorf("Firmware() = %q, %q", fw, psid)
	}
	if !d.SupportsStatistics || !d.SupportsTest || d.SupportsEEPROM || d.SupportsRegDump || !d.SupportsPrivFlags {
		t.Errorf("supports-* flags wrong: %+v", d)
	}
	if d.ExpansionROMVersion != "" || len(d.Extra) != 0 {
		t.Errorf("unexpected extras: %+v", d)
	}
}

// Sample: recorded here with `ethtool -i` on a veth (see testdata/README.md).
func TestParseEthtoolInfoVeth(t *testing.T) {
	d, err := ParseEthtoolInfo(read(t, "ethtool-i-veth.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if d.Driver != "veth" || d.Version != "1.0" || d.FirmwareVersion != "" || d.BusInfo != "" {
		t.Errorf("got %+v", d)
	}
	fw, psid := d.Firmware()
	if fw != "" || psid != "" {
		t.Errorf("Firmware() = %q, %q, want empty", fw, psid)
	}
	if !d.SupportsStatistics || d.SupportsTest {
		t.Errorf("supports flags wrong: %+v", d)
	}
}

// Sample: recorded here with `ethtool -i lo` (exit 71, see testdata/README.md).
func TestParseEthtoolInfoLoError(t *testing.T) {
	_, err := ParseEthtoolInfo(read(t, "ethtool-i-lo.txt"))
	if err == nil || !strings.Contains(err.Error(), "Operation not supported") {
		t.Fatalf("err = %v, want ethtool's message", err)
	}
}

func TestParseEthtoolInfoMalformed(t *testing.T) {
	cases := map[string]string{
		"empty":       "",
		"no driver":   "version: 1.0\nbus-info: \n",
		"no colon":    "driver: veth\ngarbage line\n",
		"bad yes/no":  "driver: veth\nsupports-test: maybe\n",
		"binary junk": "\x00\x01\x02",
	}
	for name, in := range cases {
		if _, err := ParseEthtoolInfo([]byte(in)); err == nil {
			t.Errorf("%s: no error for %q", name, in)
		}
	}
	// Unknown keys from a newer ethtool are kept, not rejected.
	d, err := ParseEthtoolInfo([]byte("driver: x\nsupports-new-thing: yes\n"))
	if err != nil || d.Extra["supports-new-thing"] != "yes" {
		t.Errorf("extra key: %+v, %v", d, err)
	}
}

// Sample: recorded here with `ovs-vsctl --version` (see testdata/README.md).
func TestParseOVSVersion(t *testing.T) {
	v, err := ParseOVSVersion(read(t, "ovs-vsctl-version.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if v != "3.1.0" {
		t.Errorf("version = %q, want 3.1.0", v)
	}
	if _, err := ParseOVSVersion([]byte("bash: ovs-vsctl: command not found\n")); err == nil {
		t.Error("no error for missing ovs-vsctl")
	}
}

// The version is read from the first line only, as documented: a later line
// (here a shell's error after a wrapper printed a different tool's banner)
// must not be taken for the OVS version.
func TestParseOVSVersionFirstLineOnly(t *testing.T) {
	in := "ovs-vsctl: unix:/run/openvswitch/db.sock: database connection failed\nother-tool (Open vSwitch) 9.9.9\n"
	if v, err := ParseOVSVersion([]byte(in)); err == nil {
		t.Errorf("ParseOVSVersion(%q) = %q, want an error (no version on the first line)", in, v)
	}
}
