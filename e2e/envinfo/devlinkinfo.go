package envinfo

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// InfoCommand asks devlink the versions of the PCI device addr (the NIC's
// `ethtool -i` bus-info), as JSON: the input of ParseDevlinkInfo.
func InfoCommand(addr string) string { return "devlink -j dev info pci/" + addr }

// DevlinkInfo is one device's `devlink dev info`: its driver and its
// versions by kind. Input looks like this, as JSON (devlink -j, the layout
// of iproute2's devlink/devlink.c cmd_dev_info) or as text (the mlx5
// example of kernel commit 8338d9378895; see testdata/README.md):
//
//	{"info":{"pci/0000:00:06.0":{"driver":"mlx5_core","versions":{
//	  "fixed":{"fw.psid":"MT_0000000009"},"running":{"fw.version":"16.26.0100"},
//	  "stored":{"fw.version":"16.26.0100"}}}}}
//
//	pci/0000:00:06.0:
//	  driver mlx5_core
//	  versions:
//	      fixed:
//	        fw.psid MT_0000000009
//	      running:
//	        fw.version 16.26.0100
//	      stored:
//	        fw.version 16.26.0100
type DevlinkInfo struct {
	// Dev is devlink's handle of the device, "pci/0000:00:06.0".
	Dev          string
	Driver       string
	SerialNumber string
	// Fixed, Running and Stored are the versions of each kind by name
	// ("fw.psid", "fw.version", "fw"); empty maps when the kind is absent.
	Fixed, Running, Stored map[string]string
}

// fwKeys are the names a firmware version is reported under, preferred
// first: mlx5's own "fw.version", then the generic "fw" (mlx5 reports
// both since kernel 5.14; other drivers only "fw").
var fwKeys = []string{"fw.version", "fw"}

func firstOf(m map[string]string) string {
	for _, k := range fwKeys {
		if v := m[k]; v != "" {
			return v
		}
	}
	return ""
}

// FirmwareRunning is the firmware the device runs ("" when not reported).
func (d DevlinkInfo) FirmwareRunning() string { return firstOf(d.Running) }

// FirmwareStored is the firmware in the device's flash ("" when not
// reported). mlx5 reports the running version here when nothing newer
// is pending.
func (d DevlinkInfo) FirmwareStored() string { return firstOf(d.Stored) }

// PendingActivation says whether a firmware was flashed but is not yet
// running: both versions are known and differ (the device runs the old
// one until a firmware reset or a reboot).
func (d DevlinkInfo) PendingActivation() bool {
	r, s := d.FirmwareRunning(), d.FirmwareStored()
	return r != "" && s != "" && r != s
}

// ParseDevlinkInfo parses `devlink [-j] dev info <dev>` of one device. No
// device, more than one, and a device without a running version are
// errors; devlink's own failure message is quoted in the error.
func ParseDevlinkInfo(data []byte) (DevlinkInfo, error) {
	t := bytes.TrimSpace(data)
	var (
		d   DevlinkInfo
		err error
	)
	if len(t) > 0 && t[0] == '{' {
		d, err = parseDevlinkInfoJSON(t)
	} else {
		d, err = parseDevlinkInfoText(t)
	}
	if err != nil {
		return DevlinkInfo{}, err
	}
	if len(d.Running) == 0 {
		return DevlinkInfo{}, fmt.Errorf("devlink dev info: %s reports no running version (driver %q)", d.Dev, d.Driver)
	}
	return d, nil
}

func parseDevlinkInfoJSON(t []byte) (DevlinkInfo, error) {
	var doc struct {
		Info map[string]struct {
			Driver       string `json:"driver"`
			SerialNumber string `json:"serial_number"`
			Versions     struct {
				Fixed   map[string]string `json:"fixed"`
				Running map[string]string `json:"running"`
				Stored  map[string]string `json:"stored"`
			} `json:"versions"`
		} `json:"info"`
	}
	if err := json.Unmarshal(t, &doc); err != nil {
		return DevlinkInfo{}, fmt.Errorf("devlink -j dev info: %v: %q", err, head(t, 120))
	}
	if err := oneDevice(doc.Info, "devlink -j dev info", "versions", t); err != nil {
		return DevlinkInfo{}, err
	}
	var d DevlinkInfo
	for dev, i := range doc.Info {
		if strings.TrimSpace(dev) == "" {
			return DevlinkInfo{}, fmt.Errorf("devlink -j dev info: a device without a handle (want bus/name, e.g. pci/0000:08:00.0): %q", head(t, 120))
		}
		d = DevlinkInfo{Dev: dev, Driver: i.Driver, SerialNumber: i.SerialNumber,
			Fixed: named(i.Versions.Fixed), Running: named(i.Versions.Running), Stored: named(i.Versions.Stored)}
	}
	return d, nil
}

// named is m without versions of no name (never empty: nil is {}).
func named(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		if strings.TrimSpace(k) != "" {
			out[k] = v
		}
	}
	return out
}

func parseDevlinkInfoText(t []byte) (DevlinkInfo, error) {
	dev, lines, err := devlinkTextHead(t, "devlink dev info")
	if err != nil {
		return DevlinkInfo{}, err
	}
	d := DevlinkInfo{Dev: dev, Fixed: map[string]string{}, Running: map[string]string{}, Stored: map[string]string{}}
	var section map[string]string // nil: the device's own attributes
	for _, l := range lines[1:] {
		switch l {
		case "versions:":
			section = nil
			continue
		case "fixed:":
			section = d.Fixed
			continue
		case "running:":
			section = d.Running
			continue
		case "stored:":
			section = d.Stored
			continue
		}
		k, v, ok := strings.Cut(l, " ")
		v = strings.TrimSpace(v)
		if !ok || v == "" {
			return DevlinkInfo{}, fmt.Errorf("devlink dev info: %s: line %q is not \"<name> <value>\"", dev, l)
		}
		if section != nil {
			if _, dup := section[k]; dup {
				return DevlinkInfo{}, fmt.Errorf("devlink dev info: %s: version %s given twice", dev, k)
			}
			section[k] = v
			continue
		}
		switch k {
		case "driver":
			d.Driver = v
		case "serial_number":
			d.SerialNumber = v
		}
	}
	return d, nil
}
