package envinfo

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Recorded from Debian 12's OVN 23.03.1 (testdata/README.md).
func TestParseOVNVersion(t *testing.T) {
	for _, c := range []struct {
		file string
		want OVNVersion
		str  string
	}{
		{"ovn-controller-version-23.03.1.txt", OVNVersion{"ovn-controller", "23.03.1", "3.1.0", "20.27.0"}, "23.03.1 (OVS library 3.1.0, SB schema 20.27.0)"},
		{"ovn-appctl-version-23.03.1.txt", OVNVersion{"ovn-controller", "23.03.1", "3.1.0", ""}, "23.03.1 (OVS library 3.1.0)"},
	} {
		data, err := os.ReadFile(filepath.Join("testdata", c.file))
		if err != nil {
			t.Fatal(err)
		}
		got, err := ParseOVNVersion(data)
		if err != nil || got != c.want || got.String() != c.str {
			t.Errorf("%s: %+v %q %v", c.file, got, got.String(), err)
		}
	}
}

// What a hypervisor without a running OVN answers is an error quoting it,
// never a version.
func TestParseOVNVersionRefuses(t *testing.T) {
	notRunning, err := os.ReadFile(filepath.Join("testdata", "ovn-appctl-not-running.stderr"))
	if err != nil {
		t.Fatal(err)
	}
	for in, want := range map[string]string{
		string(notRunning):                   `first line "2026-12-03T20:13:23Z|00001|daemon_unix|WARN`,
		"sh: 1: ovn-controller: not found\n": `first line "sh: 1: ovn-controller: not found"`,
		"":                                   `first line ""`,
		"ovs-vsctl (Open vSwitch) 3.1.0\n":   `no "ovn-PROGRAM VERSION"`,
		"ovn-controller 23.03.1\nSB DB Schema x y\n": `"SB DB Schema x y" is not a version`,
	} {
		if v, err := ParseOVNVersion([]byte(in)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %+v %v, want an error with %q", in, v, err, want)
		}
	}
	// OVN built in the OVS tree (2.x) named its package in parentheses.
	if v, err := ParseOVNVersion([]byte("ovn-controller (Open vSwitch) 2.11.1\n")); err != nil || v.Version != "2.11.1" {
		t.Errorf("2.x form: %+v %v", v, err)
	}
}

// FuzzParseOVNVersion: a parsed version is a non-empty token of the first
// line, and the program an ovn- name in it.
func FuzzParseOVNVersion(f *testing.F) {
	for _, name := range []string{"ovn-controller-version-23.03.1.txt", "ovn-appctl-version-23.03.1.txt", "ovn-appctl-not-running.stderr"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := ParseOVNVersion(data)
		if err != nil {
			return
		}
		first, _, _ := strings.Cut(string(data), "\n")
		if v.Version == "" || !strings.Contains(first, v.Version) || !strings.HasPrefix(v.Program, "ovn-") || !strings.Contains(first, v.Program) {
			t.Fatalf("%q: %+v", data, v)
		}
	})
}
