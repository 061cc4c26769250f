package envinfo

import (
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

// seedDrift seeds from every testdata file, the JSON recordings included.
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
		f.Add(b)
	}
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
