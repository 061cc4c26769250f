package envinfo

import (
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
