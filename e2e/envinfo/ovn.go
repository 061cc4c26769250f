package envinfo

import (
	"fmt"
	"regexp"
	"strings"
)

// OVNVersion is what `ovn-controller --version` or `ovn-appctl -t
// ovn-controller version` says about the OVN on a hypervisor:
//
//	ovn-controller 23.03.1
//	Open vSwitch Library 3.1.0
//	OpenFlow versions 0x6:0x6
//	SB DB Schema 20.27.0
//
// (--version prints all four lines, the appctl command the first two: OVN's
// controller/ovn-controller.c, 'V', and its unixctl "version").
type OVNVersion struct {
	Program string // "ovn-controller"
	Version string // "23.03.1"
	// OVSLibrary is the Open vSwitch library OVN was built with ("3.1.0"),
	// SBSchema the southbound database schema it speaks ("20.27.0"); empty
	// when the output has no such line.
	OVSLibrary string
	SBSchema   string
}

// String is the record's form: "23.03.1 (OVS library 3.1.0, SB schema
// 20.27.0)", the parts known.
func (v OVNVersion) String() string {
	var extra []string
	if v.OVSLibrary != "" {
		extra = append(extra, "OVS library "+v.OVSLibrary)
	}
	if v.SBSchema != "" {
		extra = append(extra, "SB schema "+v.SBSchema)
	}
	if len(extra) == 0 {
		return v.Version
	}
	return v.Version + " (" + strings.Join(extra, ", ") + ")"
}

// ovnFirstRE is the first line: the program (ovn-…) and its version, with
// the "(Open vSwitch)" of OVN releases built in the OVS tree (2.x) allowed.
var ovnFirstRE = regexp.MustCompile(`^(ovn-[a-z-]+)\s+(?:\([A-Za-z ]+\)\s+)?([0-9][0-9A-Za-z.+~_-]*)\s*$`)

var ovnVersionRE = regexp.MustCompile(`^[0-9][0-9A-Za-z.+~_-]*$`)

// ParseOVNVersion parses the output of `ovn-controller --version` or
// `ovn-appctl -t ovn-controller version`. The first line must name an ovn-
// program and a version; "Open vSwitch Library" and "SB DB Schema" lines are
// read when present. Anything else in the first line (an ovn-appctl error,
// a shell's "not found") is an error that quotes it.
func ParseOVNVersion(data []byte) (OVNVersion, error) {
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	m := ovnFirstRE.FindStringSubmatch(strings.TrimSpace(lines[0]))
	if m == nil {
		return OVNVersion{}, fmt.Errorf("ovn-controller version: no \"ovn-PROGRAM VERSION\" in first line %q", lines[0])
	}
	v := OVNVersion{Program: m[1], Version: m[2]}
	for _, l := range lines[1:] {
		l = strings.TrimSpace(l)
		for prefix, dst := range map[string]*string{"Open vSwitch Library ": &v.OVSLibrary, "SB DB Schema ": &v.SBSchema} {
			if rest, ok := strings.CutPrefix(l, prefix); ok {
				if !ovnVersionRE.MatchString(rest) {
					return OVNVersion{}, fmt.Errorf("ovn-controller version: %q is not a version", l)
				}
				*dst = rest
			}
		}
	}
	return v, nil
}
