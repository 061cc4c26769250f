package envinfo

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// mlx5's flow steering mode (issue 38 items 3 and 6): how the driver
// inserts the eswitch's rules — through firmware commands (dmfs, ≈ 5K
// rules/s), by writing the steering tables itself (smfs, ≈ 33K rules/s) or
// through the hardware steering engine (hmfs) — recorded beside the
// rule-scale profile's insertion rate and in the fleet's drift. The
// parameter is mlx5's own (kernel Documentation/networking/devlink/mlx5.rst):
// the probe never assumes it, and tells apart a device without it, a
// device of another driver, a host without devlink and a kernel without
// devlink.

// SteeringParam is the devlink parameter's name.
const SteeringParam = "flow_steering_mode"

// SteeringCommand asks devlink the flow steering mode of the PCI device
// addr, as JSON: the input of ReadSteering.
func SteeringCommand(addr string) string {
	return "devlink -j dev param show pci/" + addr + " name " + SteeringParam
}

// SteeringStatus says what the probe found.
type SteeringStatus string

const (
	// SteeringKnown: the mode is dmfs, smfs or hmfs (Mode).
	SteeringKnown SteeringStatus = "mode"
	// SteeringOther: the parameter has a value this harness does not know
	// (Mode holds it as devlink printed it).
	SteeringOther SteeringStatus = "other"
	// SteeringNoValue: the parameter exists but devlink printed no value
	// (seen on Ubuntu 22.04's kernel 5.15: an empty "values:" list).
	SteeringNoValue SteeringStatus = "no-value"
	// SteeringNoParam: devlink answered, and the device has no such
	// parameter ("devlink answers: Invalid argument", or a listing without
	// it): an mlx5 whose kernel predates it, or a device whose driver is
	// not known.
	SteeringNoParam SteeringStatus = "no-param"
	// SteeringNotMLX5: the device's driver is not mlx5_core and it has no
	// such parameter: the mode does not apply.
	SteeringNotMLX5 SteeringStatus = "not-mlx5"
	// SteeringNoDevice: devlink has no such device ("No such device").
	SteeringNoDevice SteeringStatus = "no-device"
	// SteeringNoDevlink: the devlink program is missing (exit 127).
	SteeringNoDevlink SteeringStatus = "no-devlink"
	// SteeringNoDevlinkKernel: the kernel has no devlink ("Failed to
	// connect to devlink Netlink").
	SteeringNoDevlinkKernel SteeringStatus = "no-devlink-kernel"
)

// Steering is the probe's result.
type Steering struct {
	Status SteeringStatus
	// Mode is "dmfs", "smfs" or "hmfs" (SteeringKnown), the raw value
	// (SteeringOther), else "".
	Mode string
	// Dev and Cmode are devlink's handle and the value's configuration
	// mode ("runtime") when devlink printed them.
	Dev, Cmode string
	// Detail is what devlink said when it said no (its stderr, one line),
	// or why the status was chosen.
	Detail string
}

// SteeringInput is the probe's command as it ran: its output, its exit
// status, and the device's driver when known (ethtool -i or devlink dev
// info; "" when not).
type SteeringInput struct {
	Stdout, Stderr []byte
	ExitCode       int
	Driver         string
}

// mlx5Driver is the driver whose parameter this is.
const mlx5Driver = "mlx5_core"

// ReadSteering reads the probe. Exit 127 is SteeringNoDevlink; another
// failure is read from devlink's stderr (no devlink in the kernel, no
// such device, no such parameter: Invalid argument); any other failure is
// an error that quotes it. A device without the parameter whose driver is
// known and not mlx5_core is SteeringNotMLX5.
func ReadSteering(in SteeringInput) (Steering, error) {
	stderr := strings.TrimSpace(string(in.Stderr))
	oneLine := head([]byte(strings.Join(strings.Fields(stderr), " ")), 300)
	var s Steering
	switch {
	case in.ExitCode == 127:
		if oneLine == "" {
			oneLine = "exit 127, nothing on stderr"
		}
		return Steering{Status: SteeringNoDevlink, Detail: oneLine}, nil
	case in.ExitCode != 0 && strings.Contains(stderr, "Failed to connect to devlink Netlink"):
		return Steering{Status: SteeringNoDevlinkKernel, Detail: oneLine}, nil
	case in.ExitCode != 0 && strings.Contains(stderr, "No such device"):
		return Steering{Status: SteeringNoDevice, Detail: oneLine}, nil
	case in.ExitCode != 0 && strings.Contains(stderr, "Invalid argument"):
		s = Steering{Status: SteeringNoParam, Detail: oneLine}
	case in.ExitCode != 0:
		msg := oneLine
		if msg == "" {
			msg = "nothing on stderr"
		}
		return Steering{}, fmt.Errorf("devlink dev param show: exit %d: %s", in.ExitCode, msg)
	default:
		var err error
		if s, err = ParseSteering(in.Stdout); err != nil {
			return Steering{}, err
		}
	}
	if s.Status == SteeringNoParam {
		switch {
		case in.Driver == "":
			s.Detail = strings.TrimPrefix(s.Detail+"; driver not known", "; ")
		case in.Driver != mlx5Driver:
			s.Status = SteeringNotMLX5
			s.Detail = strings.TrimPrefix(s.Detail+"; driver "+in.Driver, "; ")
		}
	}
	return s, nil
}

// ParseSteering parses devlink's answer on stdout, JSON (devlink -j, the
// layout of iproute2's devlink/devlink.c pr_out_param: the "param"
// section, the handle, a list of parameters each with its "values") or
// text:
//
//	{"param":{"pci/0000:06:00.0":[{"name":"flow_steering_mode","type":"driver-specific",
//	  "values":[{"cmode":"runtime","value":"smfs"}]}]}}
//
//	pci/0000:06:00.0:
//	  name flow_steering_mode type driver-specific
//	    values:
//	      cmode runtime value smfs
//
// More than one device, a parameter listed twice, and lines it does not
// know are errors. A listing without the parameter is SteeringNoParam; the
// parameter without a value SteeringNoValue. The runtime value is read
// (the only cmode mlx5 gives it).
func ParseSteering(data []byte) (Steering, error) {
	t := bytes.TrimSpace(data)
	if len(t) > 0 && t[0] == '{' {
		return parseSteeringJSON(t)
	}
	return parseSteeringText(t)
}

type paramValue struct {
	Cmode string `json:"cmode"`
	Value any    `json:"value"`
}

func parseSteeringJSON(t []byte) (Steering, error) {
	const cmd = "devlink -j dev param show"
	var doc struct {
		Param map[string][]struct {
			Name   string       `json:"name"`
			Values []paramValue `json:"values"`
		} `json:"param"`
	}
	if err := json.Unmarshal(t, &doc); err != nil {
		return Steering{}, fmt.Errorf("%s: %v: %q", cmd, err, head(t, 120))
	}
	if doc.Param == nil {
		return Steering{}, fmt.Errorf("%s: no \"param\" section: %q", cmd, head(t, 120))
	}
	if len(doc.Param) == 0 {
		return Steering{Status: SteeringNoParam, Detail: "devlink listed no device"}, nil
	}
	if err := oneDevice(doc.Param, cmd, "parameters", t); err != nil {
		return Steering{}, err
	}
	for dev, params := range doc.Param {
		var found []paramValue
		n := 0
		for _, p := range params {
			if p.Name == SteeringParam {
				found, n = p.Values, n+1
			}
		}
		switch n {
		case 0:
			return Steering{Status: SteeringNoParam, Dev: dev, Detail: dev + " lists no " + SteeringParam}, nil
		case 1:
			return steeringOf(dev, found)
		default:
			return Steering{}, fmt.Errorf("%s: %s: %s listed %d times", cmd, dev, SteeringParam, n)
		}
	}
	return Steering{}, fmt.Errorf("%s: no device", cmd) // oneDevice saw exactly one
}

// steeringOf picks the runtime value (or the only one) of the values.
func steeringOf(dev string, vals []paramValue) (Steering, error) {
	s := Steering{Dev: dev}
	var v *paramValue
	for i := range vals {
		if vals[i].Cmode == "runtime" || len(vals) == 1 {
			v = &vals[i]
			break
		}
	}
	if v == nil || v.Value == nil {
		s.Status, s.Detail = SteeringNoValue, fmt.Sprintf("%s: %s has no runtime value (%d values)", dev, SteeringParam, len(vals))
		return s, nil
	}
	s.Cmode = v.Cmode
	raw, ok := v.Value.(string)
	if !ok {
		raw = fmt.Sprint(v.Value)
	}
	switch m := strings.ToLower(strings.TrimSpace(raw)); m {
	case "dmfs", "smfs", "hmfs":
		s.Status, s.Mode = SteeringKnown, m
	case "":
		s.Status, s.Detail = SteeringNoValue, dev+": "+SteeringParam+" has an empty value"
	default:
		s.Status, s.Mode = SteeringOther, raw
	}
	return s, nil
}

func parseSteeringText(t []byte) (Steering, error) {
	const cmd = "devlink dev param show"
	dev, lines, err := devlinkTextHead(t, cmd)
	if err != nil {
		return Steering{}, err
	}
	var (
		cur   string // the parameter being read
		vals  []paramValue
		found int
	)
	for i, l := range lines[1:] {
		f := strings.Fields(l)
		switch {
		case f[0] == "name":
			kv, err := pairs(f)
			if err != nil || kv["name"] == "" {
				return Steering{}, fmt.Errorf("%s: %s: line %d %q is not \"name <param> type <type>\"", cmd, dev, i+2, head([]byte(l), 200))
			}
			cur = kv["name"]
			if cur == SteeringParam {
				found++
			}
		case l == "values:":
		case f[0] == "cmode":
			kv, err := pairs(f)
			if err != nil {
				return Steering{}, fmt.Errorf("%s: %s: line %d %q is not \"cmode <cmode> value <value> ...\"", cmd, dev, i+2, head([]byte(l), 200))
			}
			if cur == SteeringParam {
				v := paramValue{Cmode: kv["cmode"]}
				if x, ok := kv["value"]; ok {
					v.Value = x
				}
				vals = append(vals, v)
			}
		case strings.HasSuffix(l, ":") && strings.Contains(l, "/"):
			return Steering{}, fmt.Errorf("%s: want the parameters of one device, got %s and %s", cmd, dev, strings.TrimSuffix(l, ":"))
		default:
			return Steering{}, fmt.Errorf("%s: %s: line %d %q is not a parameter, values or cmode line", cmd, dev, i+2, head([]byte(l), 200))
		}
	}
	switch found {
	case 0:
		return Steering{Status: SteeringNoParam, Dev: dev, Detail: dev + " lists no " + SteeringParam}, nil
	case 1:
		return steeringOf(dev, vals)
	}
	return Steering{}, fmt.Errorf("%s: %s: %s listed %d times", cmd, dev, SteeringParam, found)
}

// pairs reads "<key> <value> <key> <value> ..." (a key given twice is an
// error).
func pairs(f []string) (map[string]string, error) {
	if len(f)%2 != 0 {
		return nil, fmt.Errorf("odd number of words")
	}
	kv := make(map[string]string, len(f)/2)
	for i := 0; i < len(f); i += 2 {
		if _, dup := kv[f[i]]; dup {
			return nil, fmt.Errorf("%s given twice", f[i])
		}
		kv[f[i]] = f[i+1]
	}
	return kv, nil
}

// devlinkTextHead reads the text form of a devlink listing of one device:
// its lines, trimmed, without the empty ones, the first of which must be
// the handle ("pci/0000:08:00.0:"). cmd names the command in the errors.
func devlinkTextHead(t []byte, cmd string) (string, []string, error) {
	var lines []string
	sc := bufio.NewScanner(bytes.NewReader(t))
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) == 0 {
		return "", nil, fmt.Errorf("%s: empty output", cmd)
	}
	dev, ok := strings.CutSuffix(lines[0], ":")
	if !ok || dev == "" || strings.ContainsAny(dev, " \t") || !strings.Contains(dev, "/") {
		return "", nil, fmt.Errorf("%s: first line %q is not \"<bus>/<device>:\"", cmd, head([]byte(lines[0]), 200))
	}
	return dev, lines, nil
}
