package envinfo

import (
	"fmt"
	"regexp"
	"strings"
)

// TCVersion is what `tc -V` says about the iproute2 build the tc checks
// read (the format of `tc -s [-j] filter show` depends on it).
type TCVersion struct {
	// IPRoute2 is the release as tc prints it after "iproute2-": "6.1.0",
	// "5.15.0"; "ss200127" for the snapshot-dated releases up to 5.7;
	// "v5.7.0-77-gb687d1067169" for 5.8.0, which printed its git describe.
	IPRoute2 string
	// Libbpf is the libbpf version tc was built with ("" = none named).
	Libbpf string
}

// String is "iproute2-<version>" and ", libbpf <version>" when named.
func (v TCVersion) String() string {
	s := "iproute2-" + v.IPRoute2
	if v.Libbpf != "" {
		s += ", libbpf " + v.Libbpf
	}
	return s
}

var tcVersionRE = regexp.MustCompile(`^tc utility, iproute2-([A-Za-z0-9][A-Za-z0-9.+~_-]*)(?:, libbpf ([0-9][A-Za-z0-9.+~_-]*))?$`)

// ParseTCVersion reads the first line of `tc -V`, e.g.
//
//	tc utility, iproute2-6.1.0, libbpf 1.3.0
//	tc utility, iproute2-5.15.0
//	tc utility, iproute2-ss200127
func ParseTCVersion(data []byte) (TCVersion, error) {
	first, _, _ := strings.Cut(string(data), "\n")
	first = strings.TrimSpace(first)
	m := tcVersionRE.FindStringSubmatch(first)
	if m == nil {
		return TCVersion{}, fmt.Errorf("tc -V: expected \"tc utility, iproute2-VERSION[, libbpf VERSION]\" in the first line, got %q", first)
	}
	return TCVersion{IPRoute2: m[1], Libbpf: m[2]}, nil
}
