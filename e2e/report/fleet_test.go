package report

import (
	"encoding/xml"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/fleet"
	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// syntheticFleet is a ring of n nodes "computeNNN" judged by fleet.Judge:
// every pair delivers 16.4 Gbit/s in tcp-p1 and 9.5 in udp-p1, except the
// pairs sent by the slow nodes (rate × factor); soft's checks say
// software; drifted runs an older firmware.
func syntheticFleet(t *testing.T, n int, rule fleet.Rule, slow map[string]float64, soft, drifted string) *results.Results {
	t.Helper()
	var nodes []string
	for i := 1; i <= n; i++ {
		nodes = append(nodes, fmt.Sprintf("compute%03d", i))
	}
	pairs, err := fleet.Ring(nodes)
	if err != nil {
		t.Fatal(err)
	}
	f := &results.Fleet{Mode: results.FleetConcurrent, Shard: "1/1", Rule: fleet.StoredRule(rule),
		Nodes: []results.FleetNode{{Name: "compute999", Skipped: true, Reason: "status disabled"}}}
	for _, nd := range nodes {
		f.Nodes = append(f.Nodes, results.FleetNode{Name: nd, ServiceHost: "cmp-" + nd})
		fw := "22.39.1002"
		if nd == drifted {
			fw = "22.36.1010"
		}
		f.Drift = append(f.Drift, results.FleetNodeDrift{Node: nd, Values: map[string]string{
			results.DriftNICDriver: "mlx5_core", results.DriftNICFirmware: fw, results.DriftEswitchMode: "switchdev"}})
	}
	var prs []fleet.PairResult
	for _, p := range pairs {
		id := fleet.PairID(p)
		f.Pairs = append(f.Pairs, results.FleetPair{ID: id, Sender: p.Sender, Receiver: p.Receiver, Shard: "1/1"})
		for prof, bps := range map[string]float64{"tcp-p1": 16.4e9, "udp-p1": 9.5e9} {
			if k, ok := slow[p.Sender]; ok {
				bps *= k
			}
			f.Results = append(f.Results, results.FleetPairRate{Pair: id, Profile: prof, Repeats: 1, Delivered: results.Stat{N: 1, Median: bps, Min: bps, Max: bps, Mean: bps}})
			prs = append(prs, fleet.PairResult{Pair: p, Profile: prof, BPS: bps})
		}
		for _, nd := range []string{p.Sender, p.Receiver} {
			v, why := results.VerdictOffloaded, "in_hw on the representor"
			if nd == soft {
				v, why = results.VerdictSoftware, "not_in_hw: the flower rule stayed in software"
			}
			f.Checks = append(f.Checks, results.FleetCheck{Node: nd, Pair: id, Check: results.CheckTC, Flow: "tcp", Verdict: v, Reason: why})
		}
	}
	// Judge sees the profiles in a fixed order.
	slices.SortStableFunc(prs, func(a, b fleet.PairResult) int { return strings.Compare(a.Profile, b.Profile) })
	v, err := fleet.Judge(prs, rule)
	if err != nil {
		t.Fatal(err)
	}
	f.Rates, f.Notes = fleet.StoredRates(v), v.Notes
	results.MarkDrift(f.Drift)
	end := time.Date(2026, 12, 4, 2, 0, 0, 0, time.UTC)
	r := &results.Results{SchemaVersion: results.SchemaVersion, RunID: "fleet-synth", StartedAt: end.Add(-time.Hour), FinishedAt: &end,
		Config: results.ConfigSummary{ExpectedPath: results.PathASAP2, Profiles: []string{"tcp-p1", "udp-p1"}}, Fleet: f}
	if err := results.Validate(r); err != nil {
		t.Fatal(err)
	}
	return r
}

func render(t *testing.T, r *results.Results) (string, string) {
	t.Helper()
	s, err := NewSet(r)
	if err != nil {
		t.Fatal(err)
	}
	return Markdown(s, Options{}), string(HTML(s, Options{}))
}

// inOrder fails unless each string occurs in doc after the one before.
func inOrder(t *testing.T, doc string, parts ...string) {
	t.Helper()
	at := 0
	for _, p := range parts {
		i := strings.Index(doc[at:], p)
		if i < 0 {
			t.Errorf("%q missing after offset %d", p, at)
			return
		}
		at += i + len(p)
	}
}

func TestFleetReportFourNodes(t *testing.T) {
	// Four nodes: the ratio rule (the MAD rule's score of a quarter-rate
	// node among 4 is −3.2, not below −3.5).
	r := syntheticFleet(t, 4, fleet.Rule{Kind: fleet.RuleRatio, Ratio: 0.8}, map[string]float64{"compute004": 0.25}, "compute002", "compute003")
	md, html := render(t, r)
	inOrder(t, md, "## Fleet", "**Fleet verdict: FAIL**", "compute002", "### Outliers",
		"- compute004: tcp-p1 4.1 Gbit/s as sender, 0.25× the fleet median 16.4",
		"### Nodes whose offload proof failed",
		"- **compute002**: tc (tcp) in pair compute001→compute002 says software under an asap2 expectation: not_in_hw",
		"### Per node", "| compute001 |", "| compute003 |", "nic_firmware 22.36.1010 ≠", "| compute004 | ▼ 4.1 Gbit/s (0.25×)",
		"### Configuration drift", "| compute003 | mlx5_core | 22.36.1010 ≠ | switchdev |", "| fleet majority | mlx5_core | 22.39.1002 | switchdev |",
		"## Results")
	if !strings.Contains(md, "- compute999 skipped: status disabled") {
		t.Error("skipped node not listed")
	}
	inOrder(t, html, "<h2>Fleet</h2>", "<h3>Outliers</h3>", "<svg class=\"chart\"", "compute003 ≠", "</svg>", "<h3>Per node</h3>", "<h2>Results</h2>")
	if !strings.Contains(html, `stroke="#1a202c" stroke-width="2"><title>compute004: tcp-p1 4.1 Gbit/s as sender, 0.25× the fleet median 16.4</title>`) {
		t.Error("the outlier's heat cell is not outlined with its sentence")
	}
	v := FleetVerdictOf(r)
	if fmt.Sprint(v.Failed()) != "[compute001 compute002 compute004]" { // compute001 receives from compute004
		t.Errorf("verdict fails %v", v.Failed())
	}
}

// 100 nodes: every name legible in the chart, the chart and the documents
// bounded, the outliers first and lowest ratio first.
func TestFleetReportHundredNodes(t *testing.T) {
	r := syntheticFleet(t, 100, fleet.Rule{Kind: fleet.RuleMAD, Threshold: 3.5, MinDrop: 0.05}, map[string]float64{"compute042": 0.5, "compute077": 0.25}, "", "compute013")
	md, html := render(t, r)
	svg := html[strings.Index(html, "<svg"):]
	svg = svg[:strings.Index(svg, "</svg>")+6]
	for i := 1; i <= 100; i++ {
		name := fmt.Sprintf(">compute%03d", i)
		if !strings.Contains(svg, name) {
			t.Fatalf("%s missing from the heat map", name)
		}
	}
	if strings.Count(svg, "<rect") != 100*4+6 {
		t.Errorf("%d rects, want one per node per profile and role (400) and 6 in the legend", strings.Count(svg, "<rect"))
	}
	var w, h int
	fmt.Sscanf(svg, `<svg class="chart" xmlns="http://www.w3.org/2000/svg" width="%d" height="%d"`, &w, &h)
	if w > 1000 || h > 1600 || h < 100*12 {
		t.Errorf("heat map %d×%d: want at most 1000 wide (the page), rows of at least 12 px, at most 1600 high", w, h)
	}
	if len(svg) > 120_000 || len(html) > 400_000 || len(md) > 60_000 {
		t.Errorf("sizes: svg %d, html %d, md %d bytes", len(svg), len(html), len(md))
	}
	t.Logf("100 nodes: svg %d bytes (%d×%d px), html %d bytes, markdown %d bytes", len(svg), w, h, len(html), len(md))
	inOrder(t, md, "### Outliers",
		"- compute077: tcp-p1 4.1 Gbit/s as sender, 0.25× the fleet median 16.4",
		"- compute077: udp-p1",
		"- compute042: tcp-p1 8.2 Gbit/s as sender, 0.50× the fleet median 16.4",
		"### Nodes whose offload proof failed", "None.", "### Per node")
	if fmt.Sprint(FleetVerdictOf(r).Failed()) != "[compute042 compute043 compute077 compute078]" {
		t.Errorf("verdict fails %v, want the two slow senders and their receivers", FleetVerdictOf(r).Failed())
	}
}

// A node slow both ways is named; its neighbours' low rates say through whom.
func TestFleetReportExplainedNeighbours(t *testing.T) {
	r := syntheticFleet(t, 8, fleet.Rule{Kind: fleet.RuleRatio, Ratio: 0.8}, nil, "", "")
	f := r.Fleet
	for i := range f.Results {
		p := f.Pairs[slices.IndexFunc(f.Pairs, func(p results.FleetPair) bool { return p.ID == f.Results[i].Pair })]
		if p.Sender == "compute004" || p.Receiver == "compute004" {
			f.Results[i].Delivered.Median /= 4
		}
	}
	if err := fleet.Rejudge(f); err != nil {
		t.Fatal(err)
	}
	md, _ := render(t, r)
	inOrder(t, md, "**Fleet verdict: FAIL**: 1 node(s) failed: compute004.", "### Outliers",
		"- compute003: tcp-p1 4.1 Gbit/s as sender, 0.25× the fleet median 16.4 (through compute004, slow both ways: not named)",
		"- compute004: tcp-p1 4.1 Gbit/s as sender, 0.25× the fleet median 16.4\n",
		"compute005: tcp-p1 as receiver is low only through compute004")
}

// A set without a fleet section has no fleet words (the seed goldens hold
// the bytes; this holds the intent).
func TestNoFleetNoSection(t *testing.T) {
	s, err := NewSet(seedResults(results.PathASAP2))
	if err != nil {
		t.Fatal(err)
	}
	if md := Markdown(s, Options{}); strings.Contains(md, "Fleet") {
		t.Error("a single-pair report mentions the fleet")
	}
}

// The data path's drift (issue 21's eswitch mode, MTUs and bond state) is
// marked like the other keys: in the per-node table's Drift column, in the
// drift table next to the value, and on the chart's node name.
// compute002's eswitch is in legacy mode, compute003's bond has a member
// down, compute004's uplink is at MTU 1500; compute001 has none of it.
func TestFleetReportMarksDataPathDrift(t *testing.T) {
	r := syntheticFleet(t, 4, fleet.Rule{Kind: fleet.RuleRatio, Ratio: 0.8}, nil, "", "")
	healthyBond := "802.3ad, 2/2 members up (enp1s0f0 up, enp1s0f1 up)"
	oneDown := "802.3ad, 1/2 members up (enp1s0f0 down, enp1s0f1 up)"
	for i := range r.Fleet.Drift {
		d := &r.Fleet.Drift[i]
		d.Values = map[string]string{results.DriftNICDriver: "mlx5_core", results.DriftEswitchMode: "switchdev",
			results.DriftMTURep: "9000", results.DriftMTUUplink: "9000", results.DriftMTUBond: "9000", results.DriftBondState: healthyBond}
		switch d.Node {
		case "compute002":
			d.Values[results.DriftEswitchMode] = "legacy"
		case "compute003":
			d.Values[results.DriftBondState] = oneDown
		case "compute004":
			d.Values[results.DriftMTUUplink] = "1500"
		}
	}
	results.MarkDrift(r.Fleet.Drift)
	md, html := render(t, r)
	inOrder(t, md, "### Per node",
		"| compute001 |", " | — |\n", // no drift
		"| compute002 |", "eswitch_mode legacy ≠ |",
		"| compute003 |", "bond_state "+oneDown+" ≠ |",
		"| compute004 |", "mtu_uplink 1500 ≠ |",
		"### Configuration drift",
		"| Node | nic_driver | eswitch_mode | mtu_representor | mtu_uplink | mtu_bond | bond_state |",
		"| compute001 | mlx5_core | switchdev | 9000 | 9000 | 9000 | "+healthyBond+" |",
		"| compute002 | mlx5_core | legacy ≠ | 9000 | 9000 | 9000 | "+healthyBond+" |",
		"| compute003 | mlx5_core | switchdev | 9000 | 9000 | 9000 | "+oneDown+" ≠ |",
		"| compute004 | mlx5_core | switchdev | 9000 | 1500 ≠ | 9000 | "+healthyBond+" |",
		"| fleet majority | mlx5_core | switchdev | 9000 | 9000 | 9000 | "+healthyBond+" |")
	for _, n := range []string{"compute002", "compute003", "compute004"} {
		if !strings.Contains(html, n+" ≠") {
			t.Errorf("chart does not mark %s", n)
		}
	}
	if strings.Contains(html, "compute001 ≠") {
		t.Error("chart marks compute001, which has no drift")
	}
}

// The offload checks' rounds: each round's pairs, its flows' windows and
// its start skew against the goal, a failed pair named in its round; a
// file without rounds (written before them) has no such section.
func TestFleetReportRounds(t *testing.T) {
	r := syntheticFleet(t, 4, fleet.Rule{Kind: fleet.RuleRatio, Ratio: 0.8}, nil, "", "")
	if md, _ := render(t, r); strings.Contains(md, "Offload check rounds") {
		t.Error("a file without rounds shows them")
	}
	at := func(sec float64) time.Time {
		return time.Date(2026, 12, 4, 1, 10, 0, 0, time.UTC).Add(time.Duration(sec * float64(time.Second)))
	}
	end := func(sec float64) *time.Time { t := at(sec); return &t }
	r.Fleet.Rounds = []results.FleetRound{
		{Round: 1, Shard: "1/1", Pairs: []string{"compute001→compute002", "compute003→compute004"}, FlowSeconds: 20, SkewSeconds: 0.004,
			Windows: []results.FleetRoundWindow{
				{Flow: "tcp", Start: at(3), End: end(23.25), Pairs: []string{"compute001→compute002", "compute003→compute004"}, SkewSeconds: 0.004},
				{Flow: "udp", Start: at(27), End: end(47.1), Pairs: []string{"compute001→compute002", "compute003→compute004"}, SkewSeconds: 0.002}}},
		{Round: 2, Shard: "1/1", Pairs: []string{"compute002→compute003", "compute004→compute001"}, FlowSeconds: 20, SkewSeconds: 2.5,
			Error: "pair p04 compute004→compute001: the sustained tcp flow of the offload checks: iperf3 reported: control socket has closed unexpectedly",
			Windows: []results.FleetRoundWindow{
				{Flow: "tcp", Start: at(52), End: end(72.5), Pairs: []string{"compute002→compute003", "compute004→compute001"}, SkewSeconds: 2.5},
				{Flow: "udp", Start: at(76), Pairs: []string{"compute002→compute003"}}}},
	}
	if err := results.Validate(r); err != nil {
		t.Fatal(err)
	}
	md, html := render(t, r)
	inOrder(t, md, "### Configuration drift", "### Offload check rounds",
		"The checks of 4 pair(s) ran in 2 round(s) of pairs that share no node",
		"| Round | Pairs | Flow windows (UTC) | Start skew | Failed |",
		"| 1 | compute001→compute002, compute003→compute004 | tcp 01:10:03.000–01:10:23.250 (2 pair(s), skew 4 ms); udp 01:10:27.000–01:10:47.100 (2 pair(s), skew 2 ms) | 4 ms (goal 2 s) | — |",
		"| 2 | compute002→compute003, compute004→compute001 | tcp 01:10:52.000–01:11:12.500 (2 pair(s), skew 2.5 s); udp 01:11:16.000–not closed (1 pair(s), skew 0 ms) | **2.5 s, over the goal 2 s** | pair p04 compute004→compute001: the sustained tcp flow",
		"## Results")
	inOrder(t, html, "<h3>Configuration drift</h3>", "<h3>Offload check rounds</h3>", "<h2>Results</h2>")
}

// The fleet as JUnit, one test case per node: a failed node carries every
// reason, each node its verdicts, its pairs' results and its rates; a
// skipped node is a skipped case; WriteRun writes it beside the reports.
func TestFleetJUnitByNode(t *testing.T) {
	r := syntheticFleet(t, 4, fleet.Rule{Kind: fleet.RuleRatio, Ratio: 0.8}, map[string]float64{"compute004": 0.25}, "compute002", "")
	dir := t.TempDir()
	files, err := WriteRun(dir, *r)
	if err != nil || len(files) != 3 || filepath.Base(files[2]) != FleetJUnitFile {
		t.Fatalf("WriteRun: %v, %v", files, err)
	}
	data, err := os.ReadFile(files[2])
	if err != nil {
		t.Fatal(err)
	}
	var ju junitSuites
	if err := xml.Unmarshal(data, &ju); err != nil {
		t.Fatalf("not JUnit XML: %v\n%s", err, data)
	}
	if ju.Tests != 5 || ju.Failures != 3 || ju.Skipped != 1 || len(ju.Suites) != 1 {
		t.Fatalf("tests %d failures %d skipped %d suites %d, want 5 (4 nodes and the skipped one), 3, 1, 1", ju.Tests, ju.Failures, ju.Skipped, len(ju.Suites))
	}
	cases := map[string]junitCase{}
	var names []string
	for _, c := range ju.Suites[0].Cases {
		cases[c.Name] = c
		names = append(names, c.Name)
	}
	if fmt.Sprint(names) != "[compute001 compute002 compute003 compute004 compute999]" {
		t.Errorf("cases %v: want one per node, the skipped one last", names)
	}
	v := FleetVerdictOf(r)
	for _, fl := range v.Failures {
		c := cases[fl.Node]
		if c.Failure == nil || c.Failure.Text != strings.Join(fl.Reasons, "\n") || !strings.HasPrefix(c.Failure.Message, fl.Node+" failed: ") {
			t.Errorf("%s: failure %+v, want its reasons %q", fl.Node, c.Failure, fl.Reasons)
		}
	}
	if c := cases["compute003"]; c.Failure != nil || c.Skipped != nil {
		t.Errorf("compute003 passed: %+v", c)
	}
	out := cases["compute002"].SystemOut
	for _, want := range []string{
		"check tc (tcp) in pair compute001→compute002: software: not_in_hw",
		"check tc (tcp) in pair compute002→compute003: software: not_in_hw",
		"profile tcp-p1 in pair compute001→compute002 as receiver: delivered 16.4 Gbit/s over 1 repeat(s)",
		"profile udp-p1 in pair compute002→compute003 as sender: delivered 9.50 Gbit/s over 1 repeat(s)",
		"rate compute002: tcp-p1 16.4 Gbit/s as sender, 1.00× the fleet median 16.4",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("compute002's output lacks %q:\n%s", want, out)
		}
	}
	if c := cases["compute999"]; c.Skipped == nil || c.Skipped.Message != "skipped: status disabled" {
		t.Errorf("compute999: %+v", c)
	}
	// A single pair's run writes no JUnit by node.
	if files, err := WriteRun(t.TempDir(), *seedResults(results.PathASAP2)); err != nil || len(files) != 2 {
		t.Errorf("single pair: %v, %v", files, err)
	}
}
