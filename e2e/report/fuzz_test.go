package report

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// FuzzDecode: tools/report reads results files from archives and other
// machines, so results.Decode is a parser of outside input like the others. Seeds:
// every results file in testdata/ (written by seed_test.go from the
// methodology's tables), cut down by smallSeeds, and the inputs in
// testdata/fuzz/FuzzDecode. A decoded file must survive everything the
// report command does with it: NewSet, thresholds, markdown, HTML and
// compare.
func FuzzDecode(f *testing.F) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.json"))
	if err != nil || len(files) == 0 {
		f.Fatalf("seeds in testdata/: %v (%d files)", err, len(files))
	}
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		for _, seed := range smallSeeds(f, b) {
			if len(seed) > maxSeedBytes {
				f.Fatalf("%s: a %d-byte seed, over maxSeedBytes (%d): %s", name, len(seed), maxSeedBytes, seed)
			}
			f.Add(seed)
		}
	}
	f.Add([]byte(`{"schema_version":1}`))
	// A fleet section (schema version 2): the fleet report and verdict.
	f.Add([]byte(`{"schema_version":2,"run_id":"x","config":{"expected_path":"asap2"},"fleet":{"mode":"isolated","shard":"1/1","rule":{"kind":"ratio","ratio":0.8},` +
		`"nodes":[{"name":"a"},{"name":"b"}],"pairs":[{"id":"p","sender":"a","receiver":"b","shard":"1/1"}],"results":[{"pair":"p","profile":"t","repeats":0,"delivered_bps":{},"offered_bps":{}}],` +
		`"checks":[{"node":"a","check":"tc","verdict":"software","reason":"r"}],"rates":[{"node":"a","profile":"t","role":"sender","bps":1,"pairs":1,"median_bps":2,"ratio":0.5,"outlier":true}],"drift":[{"node":"b","values":{"k":"v"}}]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := results.Decode(data)
		if err != nil {
			return
		}
		s, err := NewSet(r)
		if err != nil {
			return
		}
		var rules []results.ThresholdRule
		for _, id := range s.IDs() {
			for _, m := range results.ThresholdMetrics() {
				rules = append(rules, results.ThresholdRule{Profile: id, Path: string(results.PathASAP2), Metric: m, Op: ">=", Value: 1})
			}
		}
		opts := Options{Thresholds: results.EvaluateThresholds(rules, s.Files...)}
		_ = Markdown(s, opts)
		_ = HTML(s, opts)
		_ = Compare(s, s, CompareOptions{}).Markdown()
	})
}

// maxSeedBytes bounds each seed of FuzzDecode. When a mutation of a seed
// reaches new code, the fuzzing engine minimises it before it fuzzes on:
// its minimiser tries every cut v[:i]+v[j:], about n²/2 runs of the target
// for an n-byte input, and the run shows 0 execs/sec until it is done
// (-fuzzminimizetime bounds it, 60 s by default). Measured with
// GODEBUG=fuzzdebug=1 on the 2-core lab machine (~15,000 runs a second):
// a mutation of the former 11 KB seed (the lab results file cut to one
// TCP and one UDP profile) was still being minimised when a 20 s run
// ended, after 6 executions of new input; 567- and 408-byte inputs took
// 9.6 s and 6.3 s; with seeds under 400 bytes the longest took 2 to 6.6 s.
const maxSeedBytes = 400

// smallSeeds cuts a results file into seeds of at most maxSeedBytes. Per
// profile protocol (the file's first profile of each): the delivered rate
// and loss of its first two repeats (spread and CV), and its first repeat
// with two intervals (interval statistics and charts). Then the file's
// other parts in two seeds: environment, timings and errors; configured
// checks, one result per offload check, and a threshold. Zero values are
// left out; results.Decode recomputes the summaries.
func smallSeeds(f *testing.F, b []byte) [][]byte {
	f.Helper()
	r, err := results.Decode(b)
	if err != nil {
		f.Fatalf("seed: %v", err)
	}
	head := func() results.Results {
		return results.Results{SchemaVersion: r.SchemaVersion, RunID: r.RunID, Config: results.ConfigSummary{ExpectedPath: r.Config.ExpectedPath}}
	}
	var seeds [][]byte
	seen := map[string]bool{}
	for _, p := range r.Profiles {
		if seen[p.Protocol] {
			continue
		}
		seen[p.Protocol] = true
		p.Name, p.DurationSeconds, p.Summary, p.Offload = "", 0, results.Summary{}, nil
		runs := p.Runs
		repeats := head()
		repeats.Config.CVLimitPercent = r.Config.CVLimitPercent
		p.Runs = nil
		for _, run := range runs[:min(2, len(runs))] {
			p.Runs = append(p.Runs, results.Run{Repeat: run.Repeat, DeliveredBps: run.DeliveredBps, LossPercent: run.LossPercent, Error: run.Error})
		}
		repeats.Profiles = []results.ProfileResult{p}
		seeds = append(seeds, compactSeed(f, repeats))
		if len(runs) > 0 {
			run := runs[0]
			intervals := head()
			p.Runs = []results.Run{{Repeat: run.Repeat, OfferedBps: run.OfferedBps, DeliveredBps: run.DeliveredBps,
				LossPercent: run.LossPercent, Retransmits: run.Retransmits, Error: run.Error,
				Intervals: run.Intervals[:min(2, len(run.Intervals))]}}
			intervals.Profiles = []results.ProfileResult{p}
			seeds = append(seeds, compactSeed(f, intervals))
		}
	}
	env := head()
	env.StartedAt, env.FinishedAt = r.StartedAt, r.FinishedAt
	env.Environment.MTU = r.Environment.MTU
	for _, h := range r.Environment.Hypervisors[:min(1, len(r.Environment.Hypervisors))] {
		env.Environment.Hypervisors = append(env.Environment.Hypervisors, results.Hypervisor{Name: h.Name, NICDriver: h.NICDriver})
	}
	env.Timings = r.Timings[:min(2, len(r.Timings))]
	env.Errors = r.Errors[:min(1, len(r.Errors))]
	checks := head()
	checks.Config.Checks, checks.Config.PartialProof, checks.Config.LineRateBps = r.Config.Checks, r.Config.PartialProof, r.Config.LineRateBps
	seenCheck := map[string]bool{}
	for _, c := range r.Offload {
		if !seenCheck[c.Name] {
			seenCheck[c.Name] = true
			checks.Offload = append(checks.Offload, results.CheckResult{Name: c.Name, Verdict: c.Verdict})
		}
	}
	for _, t := range r.Thresholds[:min(1, len(r.Thresholds))] {
		checks.Thresholds = append(checks.Thresholds, results.ThresholdResult{Profile: t.Profile, Path: t.Path, Metric: t.Metric, Op: t.Op, Value: t.Value, Pass: t.Pass})
	}
	return append(seeds, compactSeed(f, env), compactSeed(f, checks))
}

// compactSeed marshals r without zero values (0, "", false, null, empty
// lists and objects, the zero time) and with numbers rounded to four
// significant digits.
func compactSeed(f *testing.F, r results.Results) []byte {
	f.Helper()
	b, err := json.Marshal(r)
	if err != nil {
		f.Fatal(err)
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		f.Fatal(err)
	}
	out, err := json.Marshal(compactValue(v))
	if err != nil {
		f.Fatal(err)
	}
	return out
}

func compactValue(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if x = compactValue(x); x == nil {
				delete(v, k)
			} else {
				v[k] = x
			}
		}
		if len(v) == 0 {
			return nil
		}
	case []any:
		var out []any
		for _, x := range v {
			if x = compactValue(x); x != nil {
				out = append(out, x)
			}
		}
		if len(out) == 0 {
			return nil
		}
		return out
	case string:
		if v == "" || v == (time.Time{}).Format(time.RFC3339) {
			return nil
		}
	case float64:
		if v == 0 {
			return nil
		}
		// four significant digits: 1169064138.410309 -> 1169000000
		r, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 4, 64), 64)
		return r
	case bool:
		if !v {
			return nil
		}
	}
	return v
}
