// Package envinfo parses what the harness records about the environment of a
// run: the NIC driver and firmware of each hypervisor's uplink (`ethtool -i`),
// the Open vSwitch, tc and ovn-controller versions, and for a fleet's drift
// the links (`ip -j -d link show`), the eswitch mode (`devlink dev eswitch
// show`) and a bond's state (/proc/net/bonding).
//
// Parsers are pure: they take the command's output and never run anything.
//
// Where things are: ethtool.go (ethtool -i); ovs-vsctl --version; tc.go (tc
// -V: the iproute2 release and libbpf, with the ss<date> and git-describe
// forms of old releases); ovn.go (ParseOVNVersion: ovn-controller --version or
// ovn-appctl -t ovn-controller version, the version, OVS library and SB
// schema); and for a fleet's drift links.go (ParseLinks: ip -j -d link show;
// UplinkOf, a representor's uplink on its eswitch; BondOf), devlink.go
// (ParseEswitch: devlink dev eswitch show, JSON or text), devlinkinfo.go
// (ParseDevlinkInfo: devlink [-j] dev info, the NIC firmware running and
// stored, PendingActivation when flashed but not activated; read by the
// harness's identity.go with the other host facts, before any window),
// bonding.go (ParseBonding: /proc/net/bonding/<bond>, mode and members up),
// devlinkparam.go (SteeringCommand, ReadSteering and ParseSteering: mlx5's
// flow_steering_mode from devlink [-j] dev param show, dmfs, smfs, hmfs or
// another value, and apart from it the parameter without a value, no such
// parameter, a device of another driver, no such device, devlink missing (exit
// 127), a kernel without devlink).
package envinfo

import (
	"bufio"
	"bytes"
	"fmt"
	"regexp"
	"strings"
)

// DriverInfo is the output of `ethtool -i <dev>`.
//
// Input looks like this (ConnectX-4 Lx, see testdata/README.md):
//
//	driver: mlx5_core
//	version: 5.10.0+
//	firmware-version: 14.21.2328 (MT_2470112034)
//	expansion-rom-version:
//	bus-info: 0000:3b:00.0
//	supports-statistics: yes
//	...
type DriverInfo struct {
	Driver              string `json:"driver"`
	Version             string `json:"version,omitempty"`
	FirmwareVersion     string `json:"firmware_version,omitempty"`
	ExpansionROMVersion string `json:"expansion_rom_version,omitempty"`
	BusInfo             string `json:"bus_info,omitempty"`
	SupportsStatistics  bool   `json:"supports_statistics"`
	SupportsTest        bool   `json:"supports_test"`
	SupportsEEPROM      bool   `json:"supports_eeprom_access"`
	SupportsRegDump     bool   `json:"supports_register_dump"`
	SupportsPrivFlags   bool   `json:"supports_priv_flags"`
	// Extra holds keys this parser does not know (newer ethtool), verbatim.
	Extra map[string]string `json:"extra,omitempty"`
}

// Firmware returns the firmware version without the PSID suffix that mlx5
// appends ("14.21.2328 (MT_2470112034)" -> "14.21.2328"), and the PSID
// separately ("MT_2470112034"); psid is empty when there is none.
func (d DriverInfo) Firmware() (version, psid string) {
	v := strings.TrimSpace(d.FirmwareVersion)
	if i := strings.Index(v, " ("); i >= 0 && strings.HasSuffix(v, ")") {
		return v[:i], v[i+2 : len(v)-1]
	}
	return v, ""
}

// ParseEthtoolInfo parses the output of `ethtool -i <dev>`. Output without a
// "driver:" line is an error; ethtool's own failure message (for example
// "Cannot get driver information: Operation not supported" on lo) is
// returned inside the error.
func ParseEthtoolInfo(data []byte) (DriverInfo, error) {
	var d DriverInfo
	seenDriver := false
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimRight(sc.Text(), "\r")
		if strings.TrimSpace(text) == "" {
			continue
		}
		if strings.HasPrefix(text, "Cannot ") || strings.HasPrefix(text, "ethtool:") {
			return DriverInfo{}, fmt.Errorf("ethtool -i: %s", strings.TrimSpace(text))
		}
		key, value, ok := strings.Cut(text, ":")
		if !ok {
			return DriverInfo{}, fmt.Errorf("ethtool -i: line %d: expected \"key: value\", got %q", line, text)
		}
		key = strings.TrimSpace(key)
		value = strings.TrimSpace(value)
		var err error
		switch key {
		case "driver":
			d.Driver, seenDriver = value, true
		case "version":
			d.Version = value
		case "firmware-version":
			d.FirmwareVersion = value
		case "expansion-rom-version":
			d.ExpansionROMVersion = value
		case "bus-info":
			d.BusInfo = value
		case "supports-statistics":
			d.SupportsStatistics, err = yesNo(value)
		case "supports-test":
			d.SupportsTest, err = yesNo(value)
		case "supports-eeprom-access":
			d.SupportsEEPROM, err = yesNo(value)
		case "supports-register-dump":
			d.SupportsRegDump, err = yesNo(value)
		case "supports-priv-flags":
			d.SupportsPrivFlags, err = yesNo(value)
		default:
			if d.Extra == nil {
				d.Extra = map[string]string{}
			}
			d.Extra[key] = value
		}
		if err != nil {
			return DriverInfo{}, fmt.Errorf("ethtool -i: line %d: key %s: %w", line, key, err)
		}
	}
	if err := sc.Err(); err != nil {
		return DriverInfo{}, fmt.Errorf("ethtool -i: %w", err)
	}
	if !seenDriver || d.Driver == "" {
		return DriverInfo{}, fmt.Errorf("ethtool -i: no \"driver:\" line in %d line(s) of output", line)
	}
	return d, nil
}

func yesNo(v string) (bool, error) {
	switch v {
	case "yes":
		return true, nil
	case "no":
		return false, nil
	}
	return false, fmt.Errorf("expected yes or no, got %q", v)
}

var ovsVersionRE = regexp.MustCompile(`\(Open vSwitch\)\s+(\S+)`)

// ParseOVSVersion extracts the version from the first line of
// `ovs-vsctl --version` or `ovs-vswitchd --version`, which looks like
// "ovs-vsctl (Open vSwitch) 3.1.0".
func ParseOVSVersion(data []byte) (string, error) {
	first, _, _ := strings.Cut(string(data), "\n")
	m := ovsVersionRE.FindStringSubmatch(first)
	if m == nil {
		return "", fmt.Errorf("ovs --version: no \"(Open vSwitch) VERSION\" in first line %q", first)
	}
	return m[1], nil
}
