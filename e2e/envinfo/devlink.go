package envinfo

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// EswitchCommand asks devlink the eswitch attributes of the PCI device
// addr, as JSON: the input of ParseEswitch.
func EswitchCommand(addr string) string { return "devlink -j dev eswitch show pci/" + addr }

// Eswitch is a device's eswitch attributes (`devlink dev eswitch show`).
// Input looks like this, as JSON (devlink -j) or as text (see
// testdata/README.md):
//
//	{"dev":{"pci/0000:03:00.0":{"mode":"switchdev"}}}
//	pci/0000:08:00.0: mode switchdev inline-mode none encap-mode basic
type Eswitch struct {
	// Dev is devlink's handle of the device, "pci/0000:03:00.0".
	Dev string
	// Mode is "legacy", "switchdev" (or "switchdev_inactive").
	Mode string
	// Attrs are every attribute as devlink printed it, mode included
	// ("inline-mode": "none", "encap-mode": "basic").
	Attrs map[string]string
}

// ParseEswitch parses `devlink [-j] dev eswitch show <dev>` of one device.
// No device, more than one, and a device without a mode are errors;
// devlink's own failure message ("Failed to connect to devlink Netlink")
// is quoted in the error.
func ParseEswitch(data []byte) (Eswitch, error) {
	t := bytes.TrimSpace(data)
	if len(t) > 0 && t[0] == '{' {
		return parseEswitchJSON(t)
	}
	var lines []string
	sc := bufio.NewScanner(bytes.NewReader(t))
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) != 1 {
		return Eswitch{}, fmt.Errorf("devlink dev eswitch show: want one line \"<dev>: mode <mode> ...\", got %d: %q", len(lines), head(t, 120))
	}
	dev, rest, ok := strings.Cut(lines[0], ": ")
	f := strings.Fields(rest)
	if !ok || strings.ContainsAny(dev, " \t") || !strings.Contains(dev, "/") || len(f)%2 != 0 {
		return Eswitch{}, fmt.Errorf("devlink dev eswitch show: %q is not \"<bus>/<device>: <attribute> <value> ...\"", lines[0])
	}
	e := Eswitch{Dev: dev, Attrs: map[string]string{}}
	for i := 0; i < len(f); i += 2 {
		if _, dup := e.Attrs[f[i]]; dup {
			return Eswitch{}, fmt.Errorf("devlink dev eswitch show: %s: attribute %s given twice", dev, f[i])
		}
		e.Attrs[f[i]] = f[i+1]
	}
	return e.withMode()
}

func parseEswitchJSON(t []byte) (Eswitch, error) {
	var doc struct {
		Dev map[string]map[string]any `json:"dev"`
	}
	if err := json.Unmarshal(t, &doc); err != nil {
		return Eswitch{}, fmt.Errorf("devlink -j dev eswitch show: %v: %q", err, head(t, 120))
	}
	if err := oneDevice(doc.Dev, "devlink -j dev eswitch show", "attributes", t); err != nil {
		return Eswitch{}, err
	}
	var e Eswitch
	for dev, attrs := range doc.Dev {
		e = Eswitch{Dev: dev, Attrs: map[string]string{}}
		for k, v := range attrs {
			s, ok := v.(string)
			if !ok {
				s = fmt.Sprint(v)
			}
			e.Attrs[k] = s
		}
	}
	return e.withMode()
}

func (e Eswitch) withMode() (Eswitch, error) {
	m := e.Attrs["mode"]
	if m == "" || strings.ContainsAny(m, " \t") {
		return Eswitch{}, fmt.Errorf("devlink dev eswitch show: %s: no mode (attributes %v)", e.Dev, e.Attrs)
	}
	e.Mode = m
	return e, nil
}

// oneDevice checks that a devlink JSON section (by device handle) holds
// exactly one device, else names the ones it holds: cmd's error, what
// each device would have given.
func oneDevice[V any](section map[string]V, cmd, what string, t []byte) error {
	if len(section) == 1 {
		return nil
	}
	devs := make([]string, 0, len(section))
	for d := range section {
		devs = append(devs, d)
	}
	sort.Strings(devs)
	return fmt.Errorf("%s: want the %s of one device, got %d [%s]: %q", cmd, what, len(section), strings.Join(devs, " "), head(t, 120))
}
