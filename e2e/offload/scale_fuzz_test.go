package offload

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"
)

// Fuzz targets of the rule-scale parsers and the insertion timeline,
// seeded from testdata/scale (recorded on a private OVS 3.1, and the
// source formats; see its README). Malformed input gives an error, never
// a panic; what parses holds what the parser promises.

// formatUpcall writes datapaths in OVS's own layout (upcall_unixctl_show).
func formatUpcall(dps []UpcallDatapath) string {
	var b strings.Builder
	for _, d := range dps {
		fmt.Fprintf(&b, "%s:\n  flows         : (current %d) (avg %d) (max %d) (limit %d)\n", d.Name, d.Current, d.Avg, d.Max, d.Limit)
		if d.HasOffloaded {
			fmt.Fprintf(&b, "  offloaded flows : %d\n", d.Offloaded)
		}
		fmt.Fprintf(&b, "  dump duration : %dms\n  ufid enabled : %v\n\n", d.DumpDuration.Milliseconds(), d.UFID)
		for _, r := range d.Revalidators {
			fmt.Fprintf(&b, "  %d: (keys %d)\n", r.ID, r.Keys)
		}
	}
	return b.String()
}

func FuzzParseUpcallShow(f *testing.F) {
	seed(f, "scale/upcall-show-*.txt", "scale/timeline/upcall-show-0*.txt")
	f.Fuzz(func(t *testing.T, data []byte) {
		dps, err := ParseUpcallShow(string(data))
		if err != nil {
			if dps != nil {
				t.Errorf("error %v with datapaths %+v", err, dps)
			}
			return
		}
		if len(dps) == 0 {
			t.Fatalf("success without a datapath for %q", data)
		}
		for _, d := range dps {
			if !strings.Contains(d.Name, "@") || d.DumpDuration < 0 || (!d.HasOffloaded && d.Offloaded != 0) {
				t.Errorf("datapath %+v breaks the parser's promises", d)
			}
			ids := map[int]bool{}
			var sum uint64
			for _, r := range d.Revalidators {
				if ids[r.ID] || r.ID < 0 {
					t.Errorf("%s: revalidator %d twice or negative", d.Name, r.ID)
				}
				ids[r.ID] = true
				sum += r.Keys
			}
			if d.Keys() != sum || d.AtLimit() != (d.Limit > 0 && d.Current >= d.Limit) {
				t.Errorf("%s: Keys %d (sum %d), AtLimit %v", d.Name, d.Keys(), sum, d.AtLimit())
			}
		}
		// What parsed, written back in OVS's layout, parses to the same.
		again, err := ParseUpcallShow(formatUpcall(dps))
		if err != nil || fmt.Sprint(again) != fmt.Sprint(dps) {
			t.Errorf("round trip:\n got %+v, %v\nwant %+v", again, err, dps)
		}
	})
}

func FuzzParseScaleLog(f *testing.F) {
	// One line a seed (the engine minimises every seed that reaches new
	// code, at a cost that grows with its square): each line of the source
	// formats, and the recorded log's lines of the two kinds it holds.
	for _, name := range []string{"scale/ovs-vswitchd-source-formats.log", "scale/ovs-vswitchd.log"} {
		for _, l := range strings.Split(string(readTestdata(f, name)), "\n") {
			if k, _, _, _ := logKindOf(lastField(l)); k != "" || strings.Contains(l, "Dropped") {
				f.Add([]byte(l))
			}
		}
	}
	f.Add([]byte("2026-12-06T04:32:13Z|1|bridge|INFO|bridge o38-br: added interface\n  continuation"))
	f.Fuzz(func(t *testing.T, data []byte) {
		in := string(data)
		log, err := ParseScaleLog(in)
		if err != nil {
			if log.Kinds != nil || log.Dropped != nil {
				t.Errorf("error %v with a result %+v", err, log)
			}
			return
		}
		all := strings.Split(strings.TrimRight(in, "\n"), "\n")
		if log.Lines != len(all) {
			t.Errorf("Lines %d, input has %d", log.Lines, len(all))
		}
		total := 0
		for i, k := range log.Kinds {
			if k.Count() == 0 || (i > 0 && kindIndex(log.Kinds[i-1].Kind) >= kindIndex(k.Kind)) {
				t.Errorf("kind %s: %d events, or out of order", k.Kind, k.Count())
			}
			total += k.Count()
			prev := 0
			for _, e := range k.Events {
				if e.LineNo <= prev || e.LineNo > len(all) || all[e.LineNo-1] != e.Line {
					t.Errorf("%s: event at line %d is not that line of the input (or out of order): %q", k.Kind, e.LineNo, e.Line)
					continue
				}
				prev = e.LineNo
				f := strings.SplitN(e.Line, "|", 5)
				kind, v, detail, err := logKindOf(strings.TrimRight(f[4], "\r"))
				if kind != k.Kind || v != e.Value || detail != e.Detail || err != nil {
					t.Errorf("line %d: re-read as %s %d %q %v, recorded as %s %d %q", e.LineNo, kind, v, detail, err, k.Kind, e.Value, e.Detail)
				}
				at, err := time.Parse(time.RFC3339Nano, f[0])
				if err != nil || !at.Equal(e.Time) {
					t.Errorf("line %d: time %v, recorded %v", e.LineNo, at, e.Time)
				}
			}
		}
		if total > log.Lines {
			t.Errorf("%d events in %d lines", total, log.Lines)
		}
	})
}

// lastField is the message of an OVS log line ("" when it is not one).
func lastField(l string) string {
	f := strings.SplitN(l, "|", 5)
	if len(f) != 5 {
		return ""
	}
	return f[4]
}

func kindIndex(k LogKind) int {
	for i, x := range logKinds {
		if x == k {
			return i
		}
	}
	return -1
}

// samplesOf builds a valid timeline from bytes: each 3 bytes are the time
// step (1..256 ms), the change of the count (-64..191) and the share in
// hardware (0..255 of 255).
func samplesOf(data []byte, software bool) []InsertionSample {
	var out []InsertionSample
	var at time.Duration
	flows := 0
	for i := 0; i+2 < len(data); i += 3 {
		at += time.Duration(int(data[i])+1) * time.Millisecond
		flows = max(0, flows+int(data[i+1])-64)
		hw := flows * int(data[i+2]) / 255
		if software {
			hw = 0
		}
		out = append(out, InsertionSample{At: at, Flows: flows, InHardware: hw})
	}
	return out
}

func FuzzJudgeInsertion(f *testing.F) {
	// The recorded ramp as bytes (steps of ~1 s do not fit a byte: the
	// shape, not the times), a table that fills and catches up, and one
	// that stops early.
	f.Add([]byte{200, 64, 0, 200, 224, 0, 200, 255, 0, 200, 255, 0, 200, 64, 0, 200, 64, 0, 200, 64, 0}, uint16(500), true, uint8(3), uint8(1), uint8(97))
	f.Add([]byte{10, 255, 20, 10, 255, 120, 10, 255, 250, 10, 64, 255, 10, 64, 255, 10, 64, 255}, uint16(600), false, uint8(3), uint8(1), uint8(97))
	f.Add([]byte{5, 100, 0, 5, 66, 0, 5, 65, 0, 5, 64, 0, 5, 64, 0}, uint16(1000), false, uint8(2), uint8(5), uint8(50))
	f.Fuzz(func(t *testing.T, data []byte, target uint16, software bool, plateau, growthPct, sharePct uint8) {
		rules := InsertionRules{PlateauSamples: int(plateau%8) + 1, PlateauGrowth: float64(growthPct%99+1) / 100, HardwareShare: float64(sharePct%100+1) / 100}
		in := InsertionInput{Samples: samplesOf(data, software), Target: int(target) + 1, Software: software, Rules: rules}
		got, err := JudgeInsertion(in)
		if len(in.Samples) == 0 {
			if err == nil {
				t.Fatal("no samples, no error")
			}
			return
		}
		if err != nil {
			t.Fatalf("a valid timeline refused: %v", err)
		}
		last := in.Samples[len(in.Samples)-1]
		if got.FinalFlows != last.Flows || got.FinalInHardware != last.InHardware || got.Grown < 0 || got.Rate < 0 || math.IsNaN(got.Rate) || math.IsInf(got.Rate, 0) {
			t.Errorf("final %d/%d (last %+v), grown %d, rate %v", got.FinalFlows, got.FinalInHardware, last, got.Grown, got.Rate)
		}
		// rate × duration ≈ growth, within rounding.
		if d := (got.GrowthTo - got.GrowthFrom).Seconds(); math.Abs(got.Rate*d-float64(got.Grown)) > 1e-6*math.Max(1, float64(got.Grown)) {
			t.Errorf("rate %v × %v s = %v, grown %d", got.Rate, d, got.Rate*d, got.Grown)
		}
		if got.GrowthFrom > got.GrowthTo || got.GrowthTo > last.At || (got.Grown > 0) != (got.GrowthTo > got.GrowthFrom && got.Rate > 0) {
			t.Errorf("growth from %v to %v (last %v), grown %d", got.GrowthFrom, got.GrowthTo, last.At, got.Grown)
		}
		// The hardware time is a sample's, at most the last, and that sample
		// has the share; software is never in hardware.
		if !got.HardwareNever {
			ok := false
			for _, s := range in.Samples {
				if s.At == got.HardwareAt && float64(s.InHardware) >= rules.HardwareShare*float64(last.Flows) {
					ok = true
				}
			}
			if !ok || got.HardwareAt > last.At || software || last.Flows == 0 {
				t.Errorf("hardware at %v (last %v, software %v, final %d): no such sample with %v", got.HardwareAt, last.At, software, last.Flows, rules.HardwareShare)
			}
		} else if got.HardwareAt != 0 {
			t.Errorf("never, yet at %v", got.HardwareAt)
		}
		if got.Plateau {
			found := false
			for _, s := range in.Samples {
				if s.At == got.PlateauAt && s.Flows == got.PlateauFlows && s.Flows > 0 {
					found = true
				}
			}
			if !found || got.PlateauAt != got.GrowthTo && got.Grown > 0 {
				t.Errorf("plateau %d at %v is not a sample's, or not the growth's end %v", got.PlateauFlows, got.PlateauAt, got.GrowthTo)
			}
		}
		most := 0
		for _, s := range in.Samples {
			most = max(most, s.Flows)
		}
		if got.BelowTarget != (got.Plateau && float64(most) < float64(in.Target)*(1-in.Rules.PlateauGrowth)) {
			t.Errorf("below target %v: plateau %v at %d, at most %d, target %d", got.BelowTarget, got.Plateau, got.PlateauFlows, most, in.Target)
		}
		if got.Statement == "" || software && !strings.Contains(got.Statement, "by construction") {
			t.Errorf("statement %q", got.Statement)
		}
	})
}
