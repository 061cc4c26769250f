package envinfo

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func seedOVSBond(f *testing.F) {
	// A few recordings of each kind, small: the engine minimises a new
	// input in about n²/2 runs.
	for _, n := range []string{"active-backup-miimon-before.txt", "balance-slb-down.txt", "no-such-bond.txt",
		"active-backup-miimon-other-config.txt", "active-backup-carrier-link-resets-restored.txt", "bond-list.txt"} {
		b, err := os.ReadFile(filepath.Join("testdata", "ovsbond", n))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("---- a ----\nbond_mode: active-backup\n\nslave x: enabled\n\tactive slave\n"))
}

// A parsed OVS bond has a name and a mode, members named once each, at most
// one of them active and that one a member; the delays are -1 or >= 0.
func FuzzParseOVSBond(f *testing.F) {
	seedOVSBond(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := ParseOVSBond(data)
		if err != nil {
			if b.Name != "" || b.Members != nil {
				t.Errorf("error %v with %+v", err, b)
			}
			return
		}
		if b.Name == "" || b.Mode == "" || b.UpDelayMs < -1 || b.DownDelayMs < -1 {
			t.Errorf("%+v", b)
		}
		seen := map[string]bool{}
		for _, m := range b.Members {
			if m.Name == "" || seen[m.Name] || strings.ContainsAny(m.Name, " \t") {
				t.Errorf("member %+v", m)
			}
			seen[m.Name] = true
		}
		if b.Active != "" && !seen[b.Active] {
			t.Errorf("active %q is no member: %+v", b.Active, b)
		}
		if n := b.Enabled(); n < 0 || n > len(b.Members) {
			t.Errorf("Enabled %d of %d", n, len(b.Members))
		}
	})
}

// A parsed map has no empty key and no more entries than the input has "=".
func FuzzParseOVSMap(f *testing.F) {
	seedOVSBond(f)
	f.Add([]byte(`{a="x, \"y\"", b=c}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := ParseOVSMap(data)
		if err != nil {
			if m != nil {
				t.Errorf("error %v with %v", err, m)
			}
			return
		}
		for k := range m {
			if k == "" {
				t.Errorf("empty key from %q", data)
			}
		}
		if len(m) > strings.Count(string(data), "=") {
			t.Errorf("%d entries from %d \"=\" in %q", len(m), strings.Count(string(data), "="), data)
		}
	})
}

// The link monitoring read from /proc/net/bonding is -1 (not said) or a
// count, and so is every member's link failure count.
func FuzzParseBondingMonitoring(f *testing.F) {
	for _, n := range []string{"proc-net-bonding-ab-failed-derived.txt", "proc-net-bonding-8023ad-one-down.txt", "proc-net-bonding-rr-docs.txt"} {
		if b, err := os.ReadFile(filepath.Join("testdata", n)); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := ParseBonding(data)
		if err != nil {
			return
		}
		if b.MIIPollingMs < -1 || b.UpDelayMs < -1 || b.DownDelayMs < -1 {
			t.Errorf("%+v", b)
		}
		for _, m := range b.Members {
			if m.LinkFailures < -1 {
				t.Errorf("member %+v", m)
			}
		}
	})
}

// The bonds bond/list names are one word each, no more than the input's
// lines after its header.
func FuzzParseOVSBondList(f *testing.F) {
	seedOVSBond(f)
	f.Add([]byte("bond\ttype\trecircID\tmembers\nbond-ul\tbalance-tcp\t1\tul1, ul0\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		names, err := ParseOVSBondList(data)
		if err != nil {
			return
		}
		if len(names) > strings.Count(string(data), "\n") {
			t.Errorf("%d names from %q", len(names), data)
		}
		for _, n := range names {
			if n == "" || strings.ContainsAny(n, " \t\n") {
				t.Errorf("name %q", n)
			}
		}
	})
}

// Every count is >= 0 and every name one word, no more than the lines.
func FuzzParseOVSLinkResets(f *testing.F) {
	seedOVSBond(f)
	f.Add([]byte("ul0,0\n\"ul1\",4\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := ParseOVSLinkResets(data)
		if err != nil {
			return
		}
		if len(m) > strings.Count(string(data), ",") {
			t.Errorf("%d from %q", len(m), data)
		}
		for k, v := range m {
			if k == "" || strings.ContainsAny(k, " \t") || v < 0 {
				t.Errorf("%q: %d", k, v)
			}
		}
	})
}
