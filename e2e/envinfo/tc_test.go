package envinfo

import (
	"os"
	"path/filepath"
	"testing"
)

// The samples' sources are in testdata/README.md.
func TestParseTCVersion(t *testing.T) {
	cases := []struct {
		file string
		want TCVersion
		str  string
	}{
		{"tc-V-debian12.txt", TCVersion{IPRoute2: "6.1.0", Libbpf: "1.1.2"}, "iproute2-6.1.0, libbpf 1.1.2"},
		{"tc-V-ubuntu2404.txt", TCVersion{IPRoute2: "6.1.0", Libbpf: "1.3.0"}, "iproute2-6.1.0, libbpf 1.3.0"},
		{"tc-V-iproute2-5.15.txt", TCVersion{IPRoute2: "5.15.0"}, "iproute2-5.15.0"},
		{"tc-V-ubuntu2004.txt", TCVersion{IPRoute2: "ss200127"}, "iproute2-ss200127"},
		{"tc-V-v5.8.0-gitdescribe.txt", TCVersion{IPRoute2: "v5.7.0-77-gb687d1067169"}, "iproute2-v5.7.0-77-gb687d1067169"},
	}
	for _, c := range cases {
		data, err := os.ReadFile(filepath.Join("testdata", c.file))
		if err != nil {
			t.Fatal(err)
		}
		got, err := ParseTCVersion(data)
		if err != nil {
			t.Errorf("%s: %v", c.file, err)
			continue
		}
		if got != c.want || got.String() != c.str {
			t.Errorf("%s: got %+v (%q), want %+v (%q)", c.file, got, got.String(), c.want, c.str)
		}
	}
}

func TestParseTCVersionRejects(t *testing.T) {
	for _, in := range []string{
		"",
		"ip utility, iproute2-6.1.0, libbpf 1.1.2\n", // ip -V, not tc
		"sh: 1: tc: not found\n",
		"tc utility, iproute2-\n",
		"tc utility, iproute2-6.1.0, libbpf\n",
		"ovs-vsctl (Open vSwitch) 3.1.0\n",
	} {
		if v, err := ParseTCVersion([]byte(in)); err == nil {
			t.Errorf("%q: got %+v, want an error", in, v)
		}
	}
}
