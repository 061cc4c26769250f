package hostcpu

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func addTestdata(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.txt")
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
}

// FuzzParseStat: whatever it accepts has an aggregate and at least one
// per-CPU line of at least MinCPUFields counters each, and busy + idle +
// iowait is the total for every line.
func FuzzParseStat(f *testing.F) {
	addTestdata(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		st, err := ParseStat(data)
		if err != nil {
			return
		}
		if len(st.CPUs) == 0 || len(st.CPUs) != len(st.IDs) {
			t.Fatalf("accepted with %d per-CPU lines, %d ids", len(st.CPUs), len(st.IDs))
		}
		for _, x := range append([]Times{st.All}, st.CPUs...) {
			if x.Busy()+x.Idle+x.IOWait != x.Total() || x.Busy() > x.Total() {
				t.Fatalf("busy %d + idle %d + iowait %d != total %d", x.Busy(), x.Idle, x.IOWait, x.Total())
			}
		}
		for _, line := range strings.Split(string(data), "\n") {
			fl := strings.Fields(line)
			if len(fl) > 0 && strings.HasPrefix(fl[0], "cpu") && len(fl)-1 < MinCPUFields {
				t.Fatalf("accepted a cpu line with %d counters: %q", len(fl)-1, line)
			}
		}
	})
}

// FuzzParseTask: an accepted line has at least MinTaskFields fields after
// its comm, the comm is exactly what lies between the first "(" and the
// last ")", and the numbers read back as written.
func FuzzParseTask(f *testing.F) {
	addTestdata(f)
	f.Add([]byte("1 (a) b (c) S 1 2 3 4 5 6 7 8 9 10 11 12"))
	f.Fuzz(func(t *testing.T, data []byte) {
		line := string(data)
		p, err := ParseTask(line)
		if err != nil {
			return
		}
		s := strings.TrimSpace(line)
		open, closing := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if p.Comm != s[open+1:closing] {
			t.Fatalf("comm %q, line %q", p.Comm, s)
		}
		rest := strings.Fields(s[closing+1:])
		if len(rest) < MinTaskFields {
			t.Fatalf("accepted %d fields after the comm", len(rest))
		}
		if ut, _ := strconv.ParseUint(rest[11], 10, 64); ut != p.UTime {
			t.Fatalf("utime %d from %q", p.UTime, rest[11])
		}
		if st, _ := strconv.ParseUint(rest[12], 10, 64); st != p.STime {
			t.Fatalf("stime %d from %q", p.STime, rest[12])
		}
		if p.ID <= 0 {
			t.Fatalf("pid %d", p.ID)
		}
	})
}

// FuzzDelta: two readings built from fuzzed counters; whenever Delta
// accepts them, every part is >= 0, the parts add up to Busy, Busy is at
// most the number of CPUs, and OVS is never negative.
func FuzzDelta(f *testing.F) {
	f.Add(uint64(100), uint64(50), uint64(30), uint64(500), uint64(5), uint64(7), uint64(10), uint64(20), uint64(3), uint64(1000), uint64(100))
	f.Add(uint64(0), uint64(0), uint64(0), uint64(0), uint64(0), uint64(0), uint64(0), uint64(0), uint64(0), uint64(0), uint64(0))
	f.Fuzz(func(t *testing.T, du, dn, ds, di, dw, dirq, dsi, dst, dg, base, dovs uint64) {
		b := Times{User: base + 100, Nice: base, System: base, Idle: base, IOWait: base, IRQ: base, SoftIRQ: base, Steal: base, Guest: 10}
		a := Times{User: b.User + du, Nice: b.Nice + dn, System: b.System + ds, Idle: b.Idle + di, IOWait: b.IOWait + dw,
			IRQ: b.IRQ + dirq, SoftIRQ: b.SoftIRQ + dsi, Steal: b.Steal + dst, Guest: b.Guest + dg}
		mk := func(x Times, ovs uint64) Reading {
			return Reading{BootID: "b", Stat: Stat{All: x, CPUs: []Times{x, x}, IDs: []int{0, 1}},
				OVS: OVS{PID: 7, Source: "comm", Process: &Task{ID: 7, Comm: "ovs-vswitchd", UTime: ovs}}}
		}
		u, err := Delta(mk(b, base), mk(a, base+dovs))
		if err != nil {
			return
		}
		parts := []float64{u.User, u.Guest, u.System, u.IRQ, u.SoftIRQ, u.Steal}
		sum := 0.0
		for _, p := range parts {
			if p < 0 {
				t.Fatalf("negative part in %+v", u)
			}
			sum += p
		}
		if d := sum - u.Busy; d > 1e-6*max(1, u.Busy) || d < -1e-6*max(1, u.Busy) {
			t.Fatalf("parts %v != busy %v", sum, u.Busy)
		}
		if u.Busy < 0 || u.Busy > float64(u.CPUs)*(1+1e-9) {
			t.Fatalf("busy %v on %d CPUs", u.Busy, u.CPUs)
		}
		if u.OVS == nil || *u.OVS < 0 {
			t.Fatalf("ovs %v (%s)", u.OVS, u.OVSMissing)
		}
	})
}

// FuzzParseReading: an accepted reading has a boot id, a usable /proc/stat,
// and an OVS that is either found (pid, source, process line) or missing
// with a reason — never both, never neither.
func FuzzParseReading(f *testing.F) {
	addTestdata(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := ParseReading(data)
		if err != nil {
			return
		}
		if r.BootID == "" || len(r.Stat.CPUs) == 0 {
			t.Fatalf("accepted without boot id or CPUs: %+v", r)
		}
		found := r.OVS.PID > 0
		if found == (r.OVS.Missing != "") {
			t.Fatalf("ovs pid %d and missing %q", r.OVS.PID, r.OVS.Missing)
		}
		if found && (r.OVS.Process == nil || r.OVS.Process.ID != r.OVS.PID || r.OVS.Source == "") {
			t.Fatalf("ovs found without its process line: %+v", r.OVS)
		}
	})
}
