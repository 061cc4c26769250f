package conntrack

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// FuzzParseJudge: whatever the listing, every entry Parse returns has two
// tuples with addresses and exactly one owner, hardware exactly when it
// carries [HW_OFFLOAD]; and judging the entries against the first entry's
// own flow counts every found connection once, never says offloaded unless
// every connection opened is hardware, and keeps the share in [0, found/opened].
func FuzzParseJudge(f *testing.F) {
	files, _ := filepath.Glob("testdata/*/*.txt")
	for _, name := range files {
		// Small seeds only: the engine minimises a new input in about n²/2
		// runs (tools/fuzz-all.sh).
		if b, err := os.ReadFile(name); err == nil && len(b) < 2048 {
			f.Add(b, uint8(2))
		}
	}
	f.Fuzz(func(t *testing.T, data []byte, opened uint8) {
		es, _ := Parse(data)
		lines := strings.Count(string(data), "\n") + 1
		for _, e := range es {
			if !e.Orig.Src.IsValid() || !e.Orig.Dst.IsValid() || !e.Reply.Src.IsValid() || !e.Reply.Dst.IsValid() {
				t.Fatalf("entry without addresses: %+v", e)
			}
			if (e.Offload == OffloadHardware) != e.HasFlag("HW_OFFLOAD") {
				t.Fatalf("owner %q with flags %v", e.Offload, e.Flags)
			}
			if e.Offload == OffloadFlowtable && !e.HasFlag("OFFLOAD") || e.Offload == OffloadNone && (e.HasFlag("OFFLOAD") || e.HasFlag("HW_OFFLOAD")) {
				t.Fatalf("owner %q with flags %v", e.Offload, e.Flags)
			}
			if e.Line < 1 || e.Line > lines {
				t.Fatalf("line %d of %d", e.Line, lines)
			}
		}
		if len(es) == 0 || (es[0].Proto != "tcp" && es[0].Proto != "udp") || opened == 0 {
			return
		}
		fl := Flow{Proto: es[0].Proto, Client: es[0].Orig.Src, Server: es[0].Orig.Dst, ServerPort: es[0].Orig.DPort, Opened: int(opened)}
		j, conns, err := Judge(es, []Flow{fl})
		if err != nil {
			t.Fatal(err)
		}
		if j.Found != len(conns) || j.Hardware+j.Flowtable+j.Software != j.Found {
			t.Fatalf("counts %+v over %d connections", j, len(conns))
		}
		if j.Offloaded && (j.Hardware != j.Opened || j.Found != j.Opened) {
			t.Fatalf("offloaded with %+v", j)
		}
		for _, c := range conns {
			for _, e := range c.Entries {
				if c.Offload == OffloadHardware && e.Offload != OffloadHardware {
					t.Fatalf("hardware connection with a %q entry", e.Offload)
				}
			}
		}
		if j.Share < 0 || j.Share > float64(j.Found)/float64(j.Opened)+1e-9 {
			t.Fatalf("share %v of %+v", j.Share, j)
		}
		// The same flow as iperf3's (issue 33): one of its connections is
		// the control connection, unplaced, or placed by the client ports
		// of the first connections as the streams'. Every connection found
		// is counted once (hardware, judged not in hardware, an idle control
		// connection, or one the table cannot place), and offloaded still
		// means every data connection is in hardware and none is missing.
		fl.Opened, fl.Control = int(opened)+1, 1
		for _, dp := range [][]uint16{nil, firstPorts(conns, int(opened))} {
			fl.DataPorts = dp
			j, conns, err := Judge(es, []Flow{fl})
			if err != nil {
				t.Fatal(err)
			}
			if j.Hardware+j.Flowtable+j.Software+j.Idle+j.Unsure != j.Found || j.Found != len(conns) {
				t.Fatalf("counts %+v over %d connections (data ports %v)", j, len(conns), dp)
			}
			data := 0
			for _, c := range conns {
				if c.Role == RoleData {
					data++
					if j.Offloaded && c.Offload != OffloadHardware {
						t.Fatalf("offloaded with data connection %d %q (data ports %v): %+v", c.ClientPort, c.Offload, dp, j)
					}
				}
				if c.Role == RoleUnknown && c.Offload != OffloadHardware && j.Offloaded {
					t.Fatalf("offloaded with an unplaced connection %d %q: %+v", c.ClientPort, c.Offload, j)
				}
			}
			if j.Offloaded && (j.Missing != 0 || j.Extra != 0 || (dp != nil && data != int(opened))) {
				t.Fatalf("offloaded with %+v, %d data connections (data ports %v)", j, data, dp)
			}
		}
	})
}

// firstPorts are the client ports of the first n connections.
func firstPorts(conns []Connection, n int) []uint16 {
	var out []uint16
	for _, c := range conns {
		if len(out) == n {
			break
		}
		out = append(out, c.ClientPort)
	}
	return out
}

// FuzzParseDPCtl: every entry has both tuples' addresses, is software
// (OVS prints no offload status) and a known line.
func FuzzParseDPCtl(f *testing.F) {
	files, _ := filepath.Glob("testdata/ovs/dump-conntrack-*.txt")
	for _, name := range files {
		if b, err := os.ReadFile(name); err == nil && len(b) < 2048 {
			f.Add(b)
		}
	}
	f.Add([]byte("udp,orig=(src=1.1.1.1,dst=1.1.1.2,sport=1,dport=2),reply=(src=1.1.1.2,dst=1.1.1.1,sport=2,dport=1),zone=1\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		es, _ := ParseDPCtl(data)
		lines := strings.Count(string(data), "\n") + 1
		for _, e := range es {
			if !e.Orig.Src.IsValid() || !e.Orig.Dst.IsValid() || !e.Reply.Src.IsValid() || !e.Reply.Dst.IsValid() || e.Offload != OffloadNone || e.Line < 1 || e.Line > lines {
				t.Fatalf("entry %+v", e)
			}
		}
	})
}

// FuzzSampleOf: whatever the two tables hold, a sample is either an error
// with no counts or counts with hardware at most found; OVS's userspace
// table is never hardware; and Summarize of it never claims a time until
// offloaded unless the sample had every opened connection in hardware.
func FuzzSampleOf(f *testing.F) {
	for _, pair := range [][2]string{
		{"hw/proc-hw-offload-mlx5-2020.txt", ""},
		{"ovs/proc-nf_conntrack-hv.txt", "ovs/dump-conntrack-tcp.txt"},
		{"sw/conntrack-L-established.txt", "ovs/dump-conntrack-udp.txt"},
	} {
		k, _ := os.ReadFile(filepath.Join("testdata", pair[0]))
		var o []byte
		if pair[1] != "" {
			o, _ = os.ReadFile(filepath.Join("testdata", pair[1]))
		}
		f.Add(k, o, uint8(2))
	}
	f.Fuzz(func(t *testing.T, kernel, ovs []byte, streams uint8) {
		if streams == 0 {
			return
		}
		flows := IperfFlows(false, int(streams), mlxClient, mlxServer, 5001)
		s := SampleOf(kernel, ovs, flows)
		if s.Error != "" && (s.Found != 0 || s.Hardware != 0) {
			t.Fatalf("an error with counts: %+v", s)
		}
		if s.Hardware > s.Found || s.Found < 0 {
			t.Fatalf("hardware %d of found %d", s.Hardware, s.Found)
		}
		if s.Source == SourceOVS && s.Hardware != 0 {
			t.Fatalf("OVS's userspace table as hardware: %+v", s)
		}
		o := Summarize([]Sample{s}, int(streams)+1, time.Second)
		if o.TimeToOffload != nil && (s.Hardware != int(streams)+1 || s.Found != int(streams)+1) {
			t.Fatalf("a time until offloaded from %+v", s)
		}
		if o.Share < 0 || o.Share > 1 {
			t.Fatalf("share %v", o.Share)
		}
	})
}
