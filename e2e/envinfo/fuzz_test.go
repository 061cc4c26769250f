package envinfo

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Fuzz targets for both parsers, seeded from every file in testdata/ (their
// sources are in testdata/README.md). Malformed input must give an error,
// never a panic, and a success must hold what the parser promises.

func seedAll(f *testing.F) {
	f.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "*.txt"))
	if err != nil {
		f.Fatal(err)
	}
	if len(files) == 0 {
		f.Fatal("no seeds in testdata/")
	}
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
}

func FuzzParseEthtoolInfo(f *testing.F) {
	seedAll(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := ParseEthtoolInfo(data)
		if err != nil {
			if d.Driver != "" {
				t.Errorf("error %v with a driver %q", err, d.Driver)
			}
			return
		}
		if d.Driver == "" {
			t.Errorf("success without a driver for %q", data)
		}
		fw, psid := d.Firmware()
		if strings.Contains(fw, " (") && psid == "" && strings.HasSuffix(fw, ")") {
			t.Errorf("Firmware() left the PSID in %q", fw)
		}
	})
}

func FuzzParseOVSVersion(f *testing.F) {
	seedAll(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := ParseOVSVersion(data)
		if err != nil {
			return
		}
		first, _, _ := strings.Cut(string(data), "\n")
		if v == "" || !strings.Contains(first, v) {
			t.Errorf("version %q is not from the first line %q", v, first)
		}
	})
}

func FuzzParseTCVersion(f *testing.F) {
	seedAll(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := ParseTCVersion(data)
		if err != nil {
			if v != (TCVersion{}) {
				t.Errorf("error %v with a value %+v", err, v)
			}
			return
		}
		first, _, _ := strings.Cut(string(data), "\n")
		if v.IPRoute2 == "" || strings.ContainsAny(v.IPRoute2+v.Libbpf, " \t,") {
			t.Errorf("version %+v: empty or not one word", v)
		}
		if strings.TrimSpace(first) != "tc utility, "+v.String() {
			t.Errorf("String() %q does not give back the first line %q", v.String(), first)
		}
	})
}

// seedDrift seeds from every testdata file, the JSON recordings included,
// each seed at most maxSeedBytes: a larger file is cut into small seeds —
// a link list into one seed per link and one of its eswitch ports and
// bonds, each link with only the keys ParseLinks reads; a text into its
// lines the parsers read.
func seedDrift(f *testing.F) {
	f.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "*.*"))
	if err != nil || len(files) == 0 {
		f.Fatalf("no seeds in testdata/: %v", err)
	}
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		for _, seed := range smallSeeds(f.Fatalf, name, b) {
			if len(seed) > maxSeedBytes {
				f.Fatalf("%s: a %d-byte seed, over maxSeedBytes (%d): %s", name, len(seed), maxSeedBytes, seed)
			}
			f.Add(seed)
		}
	}
}

// maxSeedBytes bounds each seed: the fuzzing engine minimises an input
// that reached new code with about n²/2 runs of the target, so seeds of
// kilobytes stall a run (as e2e/report's FuzzDecode measured).
const maxSeedBytes = 400

func smallSeeds(fatalf func(string, ...any), name string, b []byte) [][]byte {
	if len(b) <= maxSeedBytes {
		return [][]byte{b}
	}
	var links []map[string]any
	if strings.HasSuffix(name, ".json") {
		if err := json.Unmarshal(b, &links); err != nil {
			fatalf("%s: %v", name, err)
		}
		var out [][]byte
		var ports []map[string]any
		for _, l := range links {
			k := map[string]any{}
			for _, key := range []string{"ifname", "mtu", "master", "phys_port_name", "phys_switch_id", "parentbus", "parentdev"} {
				if v, ok := l[key]; ok {
					k[key] = v
				}
			}
			if li, ok := l["linkinfo"].(map[string]any); ok {
				k["linkinfo"] = map[string]any{"info_kind": li["info_kind"], "info_slave_kind": li["info_slave_kind"]}
			}
			one, _ := json.Marshal([]any{k})
			out = append(out, one)
			// The first VF representor, the uplink p0 and the bond: what
			// UplinkOf and BondOf follow, in the keys they read.
			port := map[string]any{"ifname": l["ifname"], "mtu": l["mtu"]}
			switch {
			case l["phys_port_name"] == "pf0vf0" || l["phys_port_name"] == "p0":
				port["phys_port_name"], port["phys_switch_id"] = l["phys_port_name"], l["phys_switch_id"]
				if l["master"] == "bond0" {
					port["master"] = "bond0"
				}
			case k["linkinfo"] != nil && k["linkinfo"].(map[string]any)["info_kind"] == "bond":
				port["linkinfo"] = map[string]any{"info_kind": "bond"}
			default:
				continue
			}
			ports = append(ports, port)
		}
		if len(ports) > 0 {
			all, _ := json.Marshal(ports)
			out = append(out, all)
		}
		return out
	}
	var keep []string
	for _, line := range strings.Split(string(b), "\n") {
		for _, p := range []string{"Bonding Mode:", "Slave Interface:", "MII Status:"} {
			if strings.Contains(line, p) {
				keep = append(keep, line)
			}
		}
	}
	return [][]byte{[]byte(strings.Join(keep, "\n") + "\n")}
}

// Every link parsed has a name given once and a positive MTU; the uplink
// UplinkOf finds for any of them is another port of the same eswitch,
// named p<n> for the representor's pf<n>; BondOf gives a bond.
func FuzzParseLinks(f *testing.F) {
	seedDrift(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		links, err := ParseLinks(data)
		if err != nil {
			if links != nil {
				t.Errorf("error %v with links %+v", err, links)
			}
			return
		}
		seen := map[string]bool{}
		for _, l := range links {
			if l.Name == "" || l.MTU <= 0 || seen[l.Name] {
				t.Fatalf("link %+v: empty name, MTU not positive or name twice", l)
			}
			seen[l.Name] = true
		}
		for _, l := range links {
			up, err := UplinkOf(links, l.Name)
			if err == nil {
				m := vfPortName.FindStringSubmatch(l.PhysPortName)
				if up.PhysSwitchID == "" || up.PhysSwitchID != l.PhysSwitchID || m == nil || up.PhysPortName != "p"+m[1] {
					t.Errorf("UplinkOf(%+v) = %+v", l, up)
				}
			}
			if b, ok := BondOf(links, l); ok && (b.Kind != "bond" || b.Name != l.Master) {
				t.Errorf("BondOf(%+v) = %+v", l, b)
			}
		}
	})
}

// A parsed eswitch has a device and a one-word mode, which is its "mode"
// attribute.
func FuzzParseEswitch(f *testing.F) {
	seedDrift(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		e, err := ParseEswitch(data)
		if err != nil {
			if e.Mode != "" || e.Dev != "" {
				t.Errorf("error %v with %+v", err, e)
			}
			return
		}
		if e.Mode == "" || strings.ContainsAny(e.Mode, " \t\n") || e.Attrs["mode"] != e.Mode {
			t.Errorf("mode %q of %+v", e.Mode, e)
		}
	})
}

// A parsed bond has a mode, members named once each with a one-word MII
// status, and its State counts the members up among all of them.
func FuzzParseBonding(f *testing.F) {
	seedDrift(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := ParseBonding(data)
		if err != nil {
			if b.Mode != "" || b.Members != nil {
				t.Errorf("error %v with %+v", err, b)
			}
			return
		}
		if b.Mode == "" {
			t.Errorf("no mode in %+v", b)
		}
		seen := map[string]bool{}
		up := 0
		for _, m := range b.Members {
			if m.Name == "" || seen[m.Name] || m.MIIStatus == "" || strings.ContainsAny(m.MIIStatus, " \t") {
				t.Errorf("member %+v", m)
			}
			seen[m.Name] = true
			if m.Up() {
				up++
			}
		}
		if want := fmt.Sprintf(", %d/%d members up", up, len(b.Members)); !strings.Contains(b.State(), want) {
			t.Errorf("State %q lacks %q", b.State(), want)
		}
	})
}

// The cut seeds of the VF-LAG host still lead UplinkOf from the
// representor to its uplink and BondOf to the bond, so the fuzzing starts
// from the paths that matter.
func TestDriftSeedsReachUplinkAndBond(t *testing.T) {
	name := filepath.Join("testdata", "ip-j-d-link-asap2-vflag.json")
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	reached := false
	for _, seed := range smallSeeds(t.Fatalf, name, b) {
		if len(seed) > maxSeedBytes {
			t.Errorf("seed of %d bytes", len(seed))
		}
		links, err := ParseLinks(seed)
		if err != nil {
			t.Fatalf("seed %s: %v", seed, err)
		}
		if up, err := UplinkOf(links, "enp1s0f0_0"); err == nil {
			if _, ok := BondOf(links, up); ok {
				reached = true
			}
		}
	}
	if !reached {
		t.Error("no seed leads from the representor to its uplink and bond")
	}
}

// A parsed device info has a device handle and a running version; a
// pending activation is two known firmware versions that differ.
func FuzzParseDevlinkInfo(f *testing.F) {
	seedDrift(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := ParseDevlinkInfo(data)
		if err != nil {
			if d.Dev != "" || d.Running != nil {
				t.Errorf("error %v with %+v", err, d)
			}
			return
		}
		if d.Dev == "" || len(d.Running) == 0 {
			t.Errorf("no device or running version in %+v", d)
		}
		r, s := d.FirmwareRunning(), d.FirmwareStored()
		if d.PendingActivation() != (r != "" && s != "" && r != s) {
			t.Errorf("PendingActivation %v with running %q stored %q", d.PendingActivation(), r, s)
		}
	})
}

func FuzzReadSteering(f *testing.F) {
	for _, g := range []string{"devlink-param-steering-*"} {
		files, err := filepath.Glob(filepath.Join("testdata", g))
		if err != nil || len(files) == 0 {
			f.Fatalf("no seeds %s: %v", g, err)
		}
		for _, name := range files {
			b, err := os.ReadFile(name)
			if err != nil {
				f.Fatal(err)
			}
			exit := uint8(0)
			if strings.HasSuffix(name, ".stderr") {
				exit = 1
			}
			if strings.Contains(name, "missing") {
				exit = 127
			}
			f.Add(b, exit, uint8(0))
			f.Add(b, exit, uint8(1))
		}
	}
	drivers := []string{"", "mlx5_core", "ice"}
	f.Fuzz(func(t *testing.T, data []byte, exit, driver uint8) {
		in := SteeringInput{ExitCode: int(exit), Driver: drivers[int(driver)%len(drivers)]}
		if exit == 0 {
			in.Stdout = data
		} else {
			in.Stderr = data
		}
		s, err := ReadSteering(in)
		if err != nil {
			if s != (Steering{}) {
				t.Errorf("error %v with a result %+v", err, s)
			}
			if exit == 127 {
				t.Errorf("exit 127 is no-devlink, never an error: %v", err)
			}
			return
		}
		known := s.Mode == "dmfs" || s.Mode == "smfs" || s.Mode == "hmfs"
		switch s.Status {
		case SteeringKnown:
			if !known {
				t.Errorf("known status with mode %q", s.Mode)
			}
		case SteeringOther:
			if s.Mode == "" || known {
				t.Errorf("other status with mode %q", s.Mode)
			}
		case SteeringNoValue, SteeringNoParam, SteeringNotMLX5, SteeringNoDevice, SteeringNoDevlink, SteeringNoDevlinkKernel:
			if s.Mode != "" {
				t.Errorf("%s with a mode %q", s.Status, s.Mode)
			}
		default:
			t.Errorf("unknown status %q", s.Status)
		}
		if s.Status == SteeringNotMLX5 && (in.Driver == "" || in.Driver == "mlx5_core") {
			t.Errorf("not-mlx5 for driver %q", in.Driver)
		}
		if s.Status == SteeringNoParam && in.Driver != "" && in.Driver != "mlx5_core" {
			t.Errorf("no-param for driver %q: should be not-mlx5", in.Driver)
		}
		if (exit == 127) != (s.Status == SteeringNoDevlink) {
			t.Errorf("exit %d gave %s", exit, s.Status)
		}
		if exit == 0 && (s.Status == SteeringNoDevice || s.Status == SteeringNoDevlinkKernel) {
			t.Errorf("exit 0 gave %s", s.Status)
		}
	})
}
