package offload

import (
	"math"
	"strconv"
	"strings"
	"testing"
	"time"
)

// timelineRows reads testdata/scale/timeline/counts.tsv (the recorded
// ramp: seconds since the sender started, all datapath flows, the UDP
// flows of the ramp) as samples of the ramp's flows, none in hardware.
func timelineRows(t testing.TB) []InsertionSample {
	t.Helper()
	var out []InsertionSample
	for i, line := range strings.Split(strings.TrimSpace(string(readTestdata(t, "scale/timeline/counts.tsv"))), "\n") {
		if strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Split(line, "\t")
		if len(f) != 3 {
			t.Fatalf("counts.tsv line %d: %q", i+1, line)
		}
		secs, err1 := strconv.ParseFloat(f[0], 64)
		udp, err2 := strconv.Atoi(f[2])
		if err1 != nil || err2 != nil {
			t.Fatalf("counts.tsv line %d: %q", i+1, line)
		}
		out = append(out, InsertionSample{At: time.Duration(math.Round(secs*1000)) * time.Millisecond, Flows: udp})
	}
	return out
}

func s(at float64, flows, hw int) InsertionSample {
	return InsertionSample{At: time.Duration(at * float64(time.Second)), Flows: flows, InHardware: hw}
}

// Expectations computed by hand (the arithmetic is in each comment).
func TestJudgeInsertion(t *testing.T) {
	rules := DefaultInsertionRules()
	for _, tc := range []struct {
		name     string
		in       InsertionInput
		want     Insertion // Statement checked apart
		sentence string
	}{{
		// The recorded ramp on the software lab (testdata/scale): growth
		// from sample 1 (0.929 s, 0 flows, the last before the first
		// increase) to sample 6 (6.348 s, 2000: the next three stay at 2000 <
		// 2020); 2000 / 5.419 s = 369.07 rules/s; in hardware never.
		name: "recorded software ramp",
		in:   InsertionInput{Samples: nil, Target: 2000, Software: true, Rules: rules},
		want: Insertion{FinalFlows: 2000, GrowthFrom: 929 * time.Millisecond, GrowthTo: 6348 * time.Millisecond,
			Grown: 2000, Rate: 2000 / 5.419, Plateau: true, PlateauAt: 6348 * time.Millisecond, PlateauFlows: 2000, HardwareNever: true},
		sentence: "2000 of 2000 flows at the last sample; inserted at 369 rules/s (2000 flows from 0.929 s to 6.348 s); " +
			"growth stopped at 2000 flows (6.348 s); in hardware: never 97 % (software datapath: none in hardware by construction)",
	}, {
		// 10000 flows in 4 s (2500/s), growth stops at 4 s (10000: next
		// three < 10100); 97 % of 10000 = 9700, first reached at 5 s (9800).
		name: "hardware catches up",
		in: InsertionInput{Target: 10000, Rules: rules, Samples: []InsertionSample{
			s(0, 0, 0), s(1, 1000, 200), s(2, 5000, 3000), s(3, 9000, 8000), s(4, 10000, 9500), s(5, 10000, 9800), s(6, 10000, 9900), s(7, 10000, 9950)}},
		want: Insertion{FinalFlows: 10000, FinalInHardware: 9950, GrowthTo: 4 * time.Second, Grown: 10000, Rate: 2500,
			Plateau: true, PlateauAt: 4 * time.Second, PlateauFlows: 10000, HardwareAt: 5 * time.Second},
		sentence: "10000 of 10000 flows at the last sample; inserted at 2500 rules/s (10000 flows from 0.000 s to 4.000 s); " +
			"growth stopped at 10000 flows (4.000 s); in hardware: 97 % of the final count after 5.000 s",
	}, {
		// Stops at 5000 (2 s: 5010, 5020, 5030 < 5050) below the target
		// 10000; 5000 / 2 s = 2500/s; nothing in hardware on a hardware
		// datapath: never, with the counts.
		name: "plateau below target",
		in: InsertionInput{Target: 10000, Rules: rules, Samples: []InsertionSample{
			s(0, 0, 0), s(1, 3000, 0), s(2, 5000, 0), s(3, 5010, 0), s(4, 5020, 0), s(5, 5030, 0)}},
		want: Insertion{FinalFlows: 5030, GrowthTo: 2 * time.Second, Grown: 5000, Rate: 2500,
			Plateau: true, PlateauAt: 2 * time.Second, PlateauFlows: 5000, BelowTarget: true, HardwareNever: true},
		sentence: "5030 of 10000 flows at the last sample; inserted at 2500 rules/s (5000 flows from 0.000 s to 2.000 s); " +
			"growth stopped at 5000 flows (2.000 s), below the target 10000; in hardware: never 97 % (0 of 5030 at the last sample)",
	}, {
		// 300 in 3 s = 100/s; only sample 0 has three after it, and it has
		// no flows: no plateau. 97 % of 300 = 291: first reached at 3 s
		// (100 and 200 in hardware before are all there were, but not 97 %
		// of the final count).
		name: "still growing",
		in: InsertionInput{Target: 1000, Rules: rules, Samples: []InsertionSample{
			s(0, 0, 0), s(1, 100, 100), s(2, 200, 200), s(3, 300, 300)}},
		want: Insertion{FinalFlows: 300, FinalInHardware: 300, GrowthTo: 3 * time.Second, Grown: 300, Rate: 100,
			HardwareAt: 3 * time.Second},
		sentence: "300 of 1000 flows at the last sample; inserted at 100 rules/s (300 flows from 0.000 s to 3.000 s); " +
			"still growing at the last sample (3.000 s); in hardware: 97 % of the final count after 3.000 s",
	}, {
		// Growth of exactly 1 % (1000 → 1010) is growth: no plateau at 1 s;
		// 1010 / 4 s = 252.5/s.
		name: "one percent is growth",
		in: InsertionInput{Target: 1000, Rules: rules, Samples: []InsertionSample{
			s(0, 0, 0), s(1, 1000, 0), s(2, 1005, 0), s(3, 1009, 0), s(4, 1010, 0)}},
		want: Insertion{FinalFlows: 1010, GrowthTo: 4 * time.Second, Grown: 1010, Rate: 252.5, HardwareNever: true},
	}, {
		// Flat from the first sample: plateau at 0 s with 500, no growth
		// phase; all 500 in hardware at 0 s.
		name: "never grew",
		in: InsertionInput{Target: 500, Rules: rules, Samples: []InsertionSample{
			s(0, 500, 500), s(1, 500, 500), s(2, 500, 500), s(3, 500, 500)}},
		want: Insertion{FinalFlows: 500, FinalInHardware: 500, Plateau: true, PlateauFlows: 500},
		sentence: "500 of 500 flows at the last sample; the count did not grow; " +
			"growth stopped at 500 flows (0.000 s); in hardware: 97 % of the final count after 0.000 s",
	}, {
		name: "no flows at all",
		in: InsertionInput{Target: 100, Rules: rules, Samples: []InsertionSample{
			s(0, 0, 0), s(1, 0, 0), s(2, 0, 0), s(3, 0, 0), s(4, 0, 0)}},
		want: Insertion{HardwareNever: true},
		sentence: "0 of 100 flows at the last sample; the count did not grow; " +
			"in hardware: nothing to offload (no flows at the last sample)",
	}} {
		if tc.in.Samples == nil {
			tc.in.Samples = timelineRows(t)
		}
		got, err := JudgeInsertion(tc.in)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if math.Abs(got.Rate-tc.want.Rate) > 1e-9*math.Max(1, tc.want.Rate) {
			t.Errorf("%s: rate %v, want %v", tc.name, got.Rate, tc.want.Rate)
		}
		sentence := got.Statement
		got.Statement, got.Rate, tc.want.Rate = "", 0, 0
		if got != tc.want {
			t.Errorf("%s:\n got %+v\nwant %+v", tc.name, got, tc.want)
		}
		if tc.sentence != "" && sentence != tc.sentence {
			t.Errorf("%s: statement\n got %q\nwant %q", tc.name, sentence, tc.sentence)
		}
	}
}

func TestJudgeInsertionRefuses(t *testing.T) {
	_, err := JudgeInsertion(InsertionInput{Target: 0, Software: true,
		Rules:   InsertionRules{PlateauSamples: 0, PlateauGrowth: 1, HardwareShare: 0},
		Samples: []InsertionSample{s(1, 5, 0), s(1, 6, 0), s(2, -1, 0), s(3, 4, 5), s(4, 9, 2)}})
	for _, want := range []string{
		"target must be > 0 flows, got 0",
		"plateau samples must be ≥ 1, got 0",
		"plateau growth must be in (0, 1), got 1",
		"hardware share must be in (0, 1], got 0",
		"sample 1: time 1s is not after sample 0's 1s",
		"sample 2: negative count",
		"sample 3: 5 in hardware of only 4 flows",
		"sample 4: 2 in hardware on a software datapath",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("want %q in %v", want, err)
		}
	}
	if _, err := JudgeInsertion(InsertionInput{Target: 1, Rules: DefaultInsertionRules()}); err == nil || !strings.Contains(err.Error(), "no samples") {
		t.Errorf("no samples: %v", err)
	}
	if _, err := JudgeInsertion(InsertionInput{Target: 1, Rules: DefaultInsertionRules(), Samples: []InsertionSample{s(-1, 0, 0)}}); err == nil || !strings.Contains(err.Error(), "before the start") {
		t.Errorf("negative time: %v", err)
	}
}

// The lab's conntrack table at N = 10000 (port security on, 2026-12-06):
// growth under 1 % per read near 9900 (a plateau by the rule), then 9979.
// Growth slowed within 1 % of N: no stop below the target.
func TestInsertionPlateauNearTarget(t *testing.T) {
	var ss []InsertionSample
	for i, n := range []int{0, 4200, 8100, 9400, 9860, 9900, 9950, 9979, 9979} {
		ss = append(ss, InsertionSample{At: time.Duration(i) * time.Second, Flows: n})
	}
	got, err := JudgeInsertion(InsertionInput{Samples: ss, Target: 10000, Software: true, Rules: DefaultInsertionRules()})
	if err != nil {
		t.Fatal(err)
	}
	if !got.Plateau || got.PlateauFlows < 9860 || got.BelowTarget || strings.Contains(got.Statement, "below the target") {
		t.Errorf("%+v", got)
	}
	ss[len(ss)-1].Flows, ss[len(ss)-2].Flows, ss[len(ss)-3].Flows = 9860, 9860, 9860
	ss[len(ss)-4].Flows, ss[len(ss)-5].Flows = 9860, 9860
	if got, _ := JudgeInsertion(InsertionInput{Samples: ss, Target: 10000, Software: true, Rules: DefaultInsertionRules()}); !got.BelowTarget {
		t.Errorf("a table that stopped at 9860 of 10000 (1.4 %% short): %+v", got)
	}
}
