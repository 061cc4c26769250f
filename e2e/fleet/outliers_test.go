package fleet

import (
	"math"
	"strings"
	"testing"
)

const G = 1e9

// ringResults gives a ring over the nodes (sorted) where node k sends at
// rates[k]; in a ring node k also receives from node k-1 at rates[k-1].
func ringResults(t *testing.T, profile string, nodes []string, rates []float64) []PairResult {
	t.Helper()
	pairs, err := Ring(nodes)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]PairResult, len(pairs))
	for i, p := range pairs {
		out[i] = PairResult{Pair: p, Profile: profile, BPS: rates[i]}
	}
	return out
}

var mad = Rule{Kind: RuleMAD, Threshold: 3.5, MinDrop: 0.05}

func find(v Verdict, node string, role Role, profile string) NodeRate {
	for _, r := range v.Rates {
		if r.Node == node && r.Role == role && r.Profile == profile {
			return r
		}
	}
	return NodeRate{}
}

func outlierLines(v Verdict) []string {
	var out []string
	for _, r := range v.Outliers() {
		out = append(out, r.Line())
	}
	return out
}

func TestJudgeNamesTheSlowSender(t *testing.T) {
	nodes := names(8)
	rates := []float64{16.4 * G, 16.2 * G, 16.6 * G, 16.5 * G, 16.3 * G, 16.4 * G, 4.1 * G, 16.4 * G}
	v, err := Judge(ringResults(t, "tcp-p1", nodes, rates), mad)
	if err != nil {
		t.Fatal(err)
	}
	got := outlierLines(v)
	// compute07 sends at 4.1 to compute08; compute08 receives at 4.1: the
	// slow pair names both its ends, each in its role.
	want := []string{
		"compute07: tcp-p1 4.1 Gbit/s as sender, 0.25× the fleet median 16.4",
		"compute08: tcp-p1 4.1 Gbit/s as receiver, 0.25× the fleet median 16.4",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("outliers\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if r := find(v, "compute07", AsReceiver, "tcp-p1"); r.Outlier || r.BPS != 16.4*G {
		t.Errorf("compute07 as receiver: %+v", r)
	}
	if len(v.Rates) != 16 || len(v.Notes) != 0 {
		t.Errorf("%d rates, notes %v", len(v.Rates), v.Notes)
	}
}

func TestJudgeEdgeCases(t *testing.T) {
	ratio := Rule{Kind: RuleRatio, Ratio: 0.8}
	for _, tc := range []struct {
		name     string
		rates    []float64
		rule     Rule
		outliers []string // "node role"
		note     string
	}{
		{"two nodes, MAD cannot name", []float64{10 * G, 2 * G}, mad, nil, "2 nodes: the MAD rule cannot name an outlier"},
		{"two nodes, ratio names", []float64{10 * G, 2 * G}, ratio, []string{"compute02 sender", "compute01 receiver"}, ""},
		{"equal rates", []float64{9 * G, 9 * G, 9 * G, 9 * G}, mad, nil, ""},
		{"equal rates, ratio", []float64{9 * G, 9 * G, 9 * G}, ratio, nil, ""},
		{"a zero rate", []float64{10 * G, 10.1 * G, 0, 9.9 * G, 10 * G}, mad, []string{"compute03 sender", "compute04 receiver"}, ""},
		{"MAD 0: one node off, far", []float64{10 * G, 10 * G, 10 * G, 10 * G, 2 * G}, mad, []string{"compute05 sender", "compute01 receiver"}, ""},
		{"MAD 0: one node off by 1 %: min_drop keeps it", []float64{10 * G, 10 * G, 10 * G, 10 * G, 9.9 * G}, mad, nil, ""},
		{"faster node never named", []float64{10 * G, 10 * G, 10 * G, 10.2 * G, 30 * G}, mad, nil, ""},
		{"every rate 0", []float64{0, 0, 0}, mad, nil, "the fleet median is 0"},
		{"ratio at the bound is not named", []float64{10 * G, 10 * G, 8 * G}, ratio, nil, ""},
	} {
		v, err := Judge(ringResults(t, "udp-b0-p1", names(len(tc.rates)), tc.rates), tc.rule)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		var got []string
		for _, r := range v.Outliers() {
			got = append(got, r.Node+" "+string(r.Role))
		}
		if strings.Join(got, ",") != strings.Join(tc.outliers, ",") {
			t.Errorf("%s: outliers %v, want %v (rates %+v)", tc.name, got, tc.outliers, v.Rates)
		}
		notes := strings.Join(v.Notes, "\n")
		if (tc.note == "") != (notes == "") || !strings.Contains(notes, tc.note) {
			t.Errorf("%s: notes %q, want %q", tc.name, notes, tc.note)
		}
	}
}

func TestJudgeLineForZeroAndMedianUnits(t *testing.T) {
	v, err := Judge(ringResults(t, "tcp-p1", names(5), []float64{980 * 1e6, 990 * 1e6, 0, 1010 * 1e6, 1000 * 1e6}), mad)
	if err != nil {
		t.Fatal(err)
	}
	got := find(v, "compute03", AsSender, "tcp-p1")
	if !got.Outlier || got.Line() != "compute03: tcp-p1 0 bit/s as sender, 0.00× the fleet median 990 Mbit/s" {
		t.Errorf("zero rate: %q (%+v)", got.Line(), got)
	}
	slow := NodeRate{Node: "c9", Profile: "tcp-p15", Role: AsReceiver, BPS: 900e6, Median: 1.5e9, Ratio: 0.6}
	if slow.Line() != "c9: tcp-p15 900 Mbit/s as receiver, 0.60× the fleet median 1500" {
		t.Errorf("units: %q", slow.Line())
	}
}

func TestJudgeAveragesANodesPairsAndKeepsProfilesApart(t *testing.T) {
	res := []PairResult{
		{Pair{"a", "b"}, "tcp-p1", 10 * G}, {Pair{"a", "c"}, "tcp-p1", 6 * G},
		{Pair{"b", "a"}, "tcp-p1", 10 * G}, {Pair{"c", "a"}, "tcp-p1", 10 * G},
		{Pair{"a", "b"}, "udp-b0-p1", 3 * G},
	}
	v, err := Judge(res, Rule{Kind: RuleRatio, Ratio: 0.9})
	if err != nil {
		t.Fatal(err)
	}
	a := find(v, "a", AsSender, "tcp-p1")
	if a.BPS != 8*G || a.Pairs != 2 {
		t.Errorf("a as sender: %+v", a)
	}
	if u := find(v, "a", AsSender, "udp-b0-p1"); u.BPS != 3*G || u.Median != 3*G {
		t.Errorf("udp profile mixed with tcp: %+v", u)
	}
	if c := find(v, "c", AsReceiver, "tcp-p1"); !c.Outlier || math.Abs(c.Ratio-0.6) > 1e-9 {
		t.Errorf("c as receiver: %+v", c)
	}
}

func TestJudgeRefuses(t *testing.T) {
	ok := []PairResult{{Pair{"a", "b"}, "tcp-p1", G}}
	for _, tc := range []struct {
		res  []PairResult
		rule Rule
		want string
	}{
		{ok, Rule{Kind: "zscore"}, `outlier rule "zscore"`},
		{ok, Rule{Kind: RuleMAD}, "threshold must be > 0"},
		{ok, Rule{Kind: RuleRatio, Ratio: 1.2}, "ratio must be in (0, 1)"},
		{[]PairResult{{Pair{"a", "b"}, "tcp-p1", math.NaN()}}, mad, "pair a→b profile tcp-p1: rate NaN"},
		{[]PairResult{{Pair{"a", "b"}, "tcp-p1", -1}}, mad, "rate -1"},
	} {
		if _, err := Judge(tc.res, tc.rule); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.rule, err, tc.want)
		}
	}
}
