package offload

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// churnOf builds reads from bytes, 4 a read: the gap to the previous read
// (seconds), which of three flows are present (bits 0..2), their packets'
// step (signed: a step below zero is a counter going backwards), and the
// coverage's deletions (bit 7 of the 4th byte: the counter moves) with the
// representor's packets in the low bits. flags choose ufid changes and
// whether coverage and the representor are read.
func churnOf(data []byte, flags uint8) []ChurnSample {
	var out []ChurnSample
	at := time.Duration(0)
	pk := [3]uint64{1000, 1000, 1000}
	var del, rep uint64 = 10, 50
	for i := 0; i+3 < len(data) && len(out) < 64; i += 4 {
		at += time.Duration(data[i]%20+1) * time.Second
		s := ChurnSample{At: at}
		step := int64(int8(data[i+2]))
		for f := 0; f < 3; f++ {
			if data[i+1]&(1<<f) == 0 {
				continue
			}
			pk[f] = uint64(max(0, int64(pk[f])+step*int64(f+1)))
			ufid := fmt.Sprintf("ufid:%d", f)
			if flags&1 != 0 && data[i+1]&(8<<f) != 0 {
				ufid = fmt.Sprintf("ufid:%d-%d", f, i)
			}
			fl := DpctlFlow{UFID: ufid, Match: []MatchField{{"udp", fmt.Sprintf("src=%d", f)}}, Packets: pk[f]}
			if data[i+1]&64 != 0 {
				fl.Offloaded, fl.DP = "yes", "tc"
			}
			s.Flows = append(s.Flows, fl)
		}
		if flags&2 != 0 {
			if data[i+3]&128 != 0 {
				del++
			}
			s.Coverage = &Coverage{Totals: map[string]uint64{CoverageDeleted: del}}
		}
		if flags&4 != 0 {
			rep += uint64(data[i+3] & 127)
			r := rep
			s.RepPackets = &r
		}
		out = append(out, s)
	}
	return out
}

func FuzzJudgeChurn(f *testing.F) {
	// A steady flow; one that vanishes for two reads; one whose counters
	// restart with and without deletions; one that leaves hardware.
	f.Add([]byte{10, 1, 50, 1, 10, 1, 50, 1, 10, 1, 50, 1}, uint8(6), uint16(1000), false, "3.1.0")
	f.Add([]byte{10, 1, 50, 1, 10, 0, 0, 1, 10, 0, 0, 1, 10, 1, 50, 129}, uint8(6), uint16(1000), false, "2.17.9")
	f.Add([]byte{10, 3, 50, 1, 10, 3, 200, 129, 10, 3, 200, 1, 10, 11, 5, 1}, uint8(7), uint16(100), true, "3.3.0")
	f.Add([]byte{10, 65, 50, 1, 10, 1, 50, 1}, uint8(4), uint16(0), false, "")
	f.Fuzz(func(t *testing.T, data []byte, flags uint8, pps uint16, software bool, version string) {
		in := ChurnInput{Samples: churnOf(data, flags), FlowPPS: float64(pps), Software: software, OVSVersion: version,
			Rules: ChurnRules{SlowPathShare: 0.01, Period: 10 * time.Second}}
		c, err := JudgeChurn(in)
		if len(in.Samples) < 2 {
			if err == nil {
				t.Fatal("fewer than two reads, no error")
			}
			return
		}
		if err != nil {
			t.Fatalf("valid reads refused: %v", err)
		}
		counted := 0
		last := in.Samples[len(in.Samples)-1].At
		for _, e := range c.Events {
			if e.Counted {
				counted++
			}
			// Every event sits between two reads, in the window.
			if e.After < 0 || e.Before <= e.After || e.Before > last {
				t.Errorf("event %+v outside the reads (last %v)", e, last)
			}
			// Only these kinds count; the others never do.
			switch e.Kind {
			case ChurnReadded, ChurnGone, ChurnLeftHardware:
				if !e.Counted {
					t.Errorf("%s not counted: %+v", e.Kind, e)
				}
			case ChurnModified, ChurnUnresolved, ChurnIdle:
				if e.Counted {
					t.Errorf("%s counted: %+v", e.Kind, e)
				}
			default:
				t.Errorf("unknown kind %q", e.Kind)
			}
		}
		if counted != c.Count || c.Stable != (c.Count == 0 && c.SlowPathOver == 0 && c.Flows > 0) {
			t.Errorf("count %d of %d counted events, stable %v, slow path over %d", c.Count, counted, c.Stable, c.SlowPathOver)
		}
		// The software datapath's slow path is never judged.
		if software && c.SlowPathOver != 0 {
			t.Errorf("software: %d periods over", c.SlowPathOver)
		}
		want := map[bool]string{true: "stable", false: "churned"}[c.Stable]
		if c.Flows == 0 {
			want = "not judged"
		}
		if c.Reads != len(in.Samples) || !strings.HasPrefix(c.Statement, want) || c.BlindSpot == "" {
			t.Errorf("reads %d, statement %q, blind spot %q", c.Reads, c.Statement, c.BlindSpot)
		}
		// A window where every flow keeps its ufid and counters only grow,
		// always present, is stable of churn.
		if steady(in.Samples) && c.Count != 0 {
			t.Errorf("steady reads counted %d: %s", c.Count, kindsOf(c))
		}
	})
}

func steady(ss []ChurnSample) bool {
	prev := map[string]DpctlFlow{}
	for i, s := range ss {
		if i > 0 && len(s.Flows) != len(prev) {
			return false
		}
		now := map[string]DpctlFlow{}
		for _, f := range s.Flows {
			k := churnKey(f)
			if p, ok := prev[k]; i > 0 && (!ok || p.UFID != f.UFID || f.Packets < p.Packets || InHardware(p) && !InHardware(f)) {
				return false
			}
			now[k] = f
		}
		prev = now
	}
	return true
}

func kindsOf(c Churn) string {
	var k []string
	for _, e := range c.Events {
		k = append(k, string(e.Kind))
	}
	return strings.Join(k, " ")
}
