package report

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

var update = flag.Bool("update", false, "rewrite golden files and fixtures in testdata/")

// mdTables parses the rendered markdown into table title -> rows of cells
// (header excluded).
func mdTables(t *testing.T, md string) map[string][][]string {
	t.Helper()
	out := map[string][][]string{}
	title := ""
	inTable := false
	for _, line := range strings.Split(md, "\n") {
		switch {
		case strings.HasPrefix(line, "### "):
			title, inTable = strings.TrimPrefix(line, "### "), false
		case strings.HasPrefix(line, "## "):
			title, inTable = strings.TrimPrefix(line, "## "), false
		case strings.HasPrefix(line, "|---"):
			inTable = true
		case strings.HasPrefix(line, "| ") && inTable:
			inner := strings.TrimSuffix(strings.TrimPrefix(line, "| "), " |")
			out[title] = append(out[title], strings.Split(inner, " | "))
		}
	}
	return out
}

func seedSet(t *testing.T) *Set {
	t.Helper()
	s, err := NewSet(seedResults(results.PathASAP2), seedResults(results.PathBaseline))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// The seed's numbers in, the seed's table cells out (source: the seed's
// Results section, see seed_test.go).
func TestMarkdownReproducesSeedTables(t *testing.T) {
	md := Markdown(seedSet(t), Options{SeedLayout: true})
	tables := mdTables(t, md)
	titles := map[string]string{
		"tcp":    "TCP throughput, 30-second runs, ASAP² versus kernel OVS baseline",
		"udp-b0": "UDP unlimited offered load (`-u -b0`), 30-second runs, offered versus delivered",
		"udp-5":  "UDP capped load (500 Mbit/s per stream)",
	}
	labels := map[string]string{
		"tcp-p1": "1 stream (`-P1`)", "tcp-p15": "15 streams (`-P15`)", "tcp-p30": "30 streams (`-P30`)",
		"udp-b0-p1": "1 stream (`-P1`)", "udp-b0-p15": "15 streams (`-P15`)", "udp-b0-p30": "30 streams (`-P30`)",
		"udp-b0-p15-l700": "15 streams, 700 B (`-P15 -l700`)", "udp-b0-p30-l700": "30 streams, 700 B (`-P30 -l700`)",
		"udp-500m-p1": "1 stream", "udp-500m-p15": "15 streams", "udp-500m-p30": "30 streams",
		"udp-500m-p1-l700": "1 stream, 700 B", "udp-500m-p15-l700": "15 streams, 700 B", "udp-500m-p30-l700": "30 streams, 700 B",
	}
	rowIndex := map[string]int{}
	for _, s := range seedRows {
		key := "tcp"
		if strings.HasPrefix(s.id, "udp-b0") {
			key = "udp-b0"
		} else if strings.HasPrefix(s.id, "udp-500m") {
			key = "udp-5"
		}
		rows, ok := tables[titles[key]]
		if !ok {
			t.Fatalf("table %q missing in:\n%s", titles[key], md)
		}
		i := rowIndex[key]
		rowIndex[key]++
		if i >= len(rows) {
			t.Fatalf("%s: table %q has only %d rows", s.id, titles[key], len(rows))
		}
		got := rows[i]
		if len(got) != 4 {
			t.Fatalf("%s: seed layout must have 4 columns, got %q", s.id, got)
		}
		wantG := s.wantG
		if dev, ok := seedGainDeviations[s.id]; ok {
			wantG = dev
		}
		want := []string{labels[s.id], s.wantA, s.wantB, wantG}
		for c := range want {
			if got[c] != want[c] {
				t.Errorf("%s column %d: got %q, want %q (seed order row %d)", s.id, c, got[c], want[c], i)
			}
		}
	}
	for key, n := range map[string]int{"tcp": 3, "udp-b0": 5, "udp-5": 6} {
		if got := len(tables[titles[key]]); got != n {
			t.Errorf("table %s: %d rows, want %d", key, got, n)
		}
	}
	note := "UDP, per-stream cap -b 500M, 30-second runs. Aggregate caps are 0.5 Gbit/s (1 stream), 7.5 Gbit/s (15 streams), and 15 Gbit/s (30 streams). Hitting those caps is not 25 GbE line rate."
	if !strings.Contains(md, note) {
		t.Errorf("capped note missing; want %q", note)
	}
	for _, h := range []string{
		"| Profile | ASAP² (`NIC asap2`) | Baseline (`NIC standard`) | Approximate gain |",
		"| Profile | ASAP² offered / delivered / loss | Baseline offered / delivered / loss | Approximate delivered gain |",
	} {
		if !strings.Contains(md, h) {
			t.Errorf("header %q missing", h)
		}
	}
}

// The whole document is pinned by a golden file (regenerate with -update
// after an intended change, and review the diff).
func TestMarkdownGolden(t *testing.T) {
	md := Markdown(seedSet(t), Options{})
	golden := filepath.Join("testdata", "seed-report.md")
	if *update {
		if err := os.WriteFile(golden, []byte(md), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -update once)", err)
	}
	if md != string(want) {
		t.Errorf("markdown differs from %s; got:\n%s", golden, md)
	}
}

// Default layout: each row states the evidence of both paths; a missing
// path is shown as "—" and "not run", never dropped.
func TestMarkdownEvidenceAndMissing(t *testing.T) {
	a := seedResults(results.PathASAP2)
	b := seedResults(results.PathBaseline)
	// Baseline lost its 30-stream TCP row; ASAP² lost the dpctl check.
	b.Profiles = b.Profiles[:2:2]
	b.Profiles = append(b.Profiles, seedResults(results.PathBaseline).Profiles[3:]...)
	a.Offload = a.Offload[:2]
	s, err := NewSet(a, b)
	if err != nil {
		t.Fatal(err)
	}
	tables := mdTables(t, Markdown(s, Options{}))
	tcp := tables["TCP throughput, 30-second runs, ASAP² versus kernel OVS baseline"]
	if len(tcp) != 3 {
		t.Fatalf("tcp rows: %q", tcp)
	}
	row := tcp[2]
	if row[0] != "30 streams (`-P30`)" || row[1] != "22.8 Gbit/s" || row[2] != results.Dash || row[3] != results.Dash {
		t.Errorf("row with missing baseline: %q", row)
	}
	if !strings.Contains(row[4], "Baseline: not run") {
		t.Errorf("evidence cell %q does not say the baseline did not run", row[4])
	}
	if !strings.Contains(tcp[0][4], "ASAP²: unproven (expected offload proven)") ||
		!strings.Contains(tcp[0][4], "Baseline: software") {
		t.Errorf("evidence cell %q", tcp[0][4])
	}
}

// With only one path, both columns are still there; gain is "—".
func TestMarkdownSinglePath(t *testing.T) {
	s, err := NewSet(seedResults(results.PathASAP2))
	if err != nil {
		t.Fatal(err)
	}
	tables := mdTables(t, Markdown(s, Options{SeedLayout: true}))
	row := tables["TCP throughput, 30-second runs, ASAP² versus kernel OVS baseline"][0]
	if row[1] != "16.5 Gbit/s" || row[2] != results.Dash || row[3] != results.Dash {
		t.Errorf("got %q", row)
	}
}

// The seed layout has no Evidence column: when the checks proved the ASAP²
// side software (here the seed's asap2 file with every check turned
// software), its gain must not read as a clean "~6×".
func TestSeedLayoutMarksUnprovenGain(t *testing.T) {
	a := seedResults(results.PathASAP2)
	for i := range a.Offload {
		a.Offload[i].Verdict = results.VerdictSoftware
	}
	s, err := NewSet(a, seedResults(results.PathBaseline))
	if err != nil {
		t.Fatal(err)
	}
	rows := mdTables(t, Markdown(s, Options{SeedLayout: true}))
	found := 0
	for title, table := range rows {
		for _, row := range table {
			if len(row) == 4 && row[3] != results.Dash {
				found++
				if !strings.Contains(row[3], UnprovenGainNote) {
					t.Errorf("%s %s: gain %q lacks %q", title, row[0], row[3], UnprovenGainNote)
				}
			}
		}
	}
	if found == 0 {
		t.Fatal("no gain cell rendered")
	}
	// Proven paths (the seed's own files) keep the seed's cells exactly:
	// TestMarkdownReproducesSeedTables.
}

// Issue 19 point 6: the offload section names what a tc or dpctl verdict
// looked at, check by check; a file without it (older harness) shows none.
func TestMarkdownOffloadBasis(t *testing.T) {
	a := seedResults(results.PathASAP2)
	line := "hv-1: enp8s0f0_1: direction fa:16:3e:4a:11:01 -> fa:16:3e:4a:11:02: offloaded, over 2 samples in 4.1s: chain 0 pref 2 handle 0x1 -> chain 1 pref 3 handle 0x1"
	for i := range a.Offload {
		if a.Offload[i].Name == results.CheckTC {
			a.Offload[i].Basis = []string{line}
			break
		}
	}
	s, err := NewSet(a)
	if err != nil {
		t.Fatal(err)
	}
	md := Markdown(s, Options{})
	if !strings.Contains(md, "What the tc and dpctl verdicts looked at") || !strings.Contains(md, "- tc, ") || !strings.Contains(md, line) {
		t.Errorf("basis missing from the offload section:\n%s", md)
	}
	s, err = NewSet(seedResults(results.PathASAP2))
	if err != nil {
		t.Fatal(err)
	}
	if md := Markdown(s, Options{}); strings.Contains(md, "looked at") {
		t.Errorf("a file without basis shows a basis section")
	}
}
