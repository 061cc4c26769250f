package report

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// FuzzDecode: tools/report reads results files from archives and other
// machines, so Decode is a parser of outside input like the others. Seeds:
// every results file in testdata/ (written by seed_test.go from the
// methodology's tables). A decoded file must survive everything the report
// command does with it: NewSet, thresholds, markdown, HTML and compare.
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
		f.Add(smallSeed(f, b))
	}
	f.Add([]byte(`{"schema_version":1}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := Decode(data)
		if err != nil {
			return
		}
		s, err := NewSet(r)
		if err != nil {
			return
		}
		var rules []ThresholdRule
		for _, id := range s.IDs() {
			for _, m := range ThresholdMetrics() {
				rules = append(rules, ThresholdRule{Profile: id, Path: string(PathASAP2), Metric: m, Op: ">=", Value: 1})
			}
		}
		opts := Options{Thresholds: EvaluateThresholds(rules, s)}
		_ = Markdown(s, opts)
		_ = HTML(s, opts)
		_ = Compare(s, s, CompareOptions{}).Markdown()
	})
}

// smallSeed keeps one TCP and one UDP profile of a results file: the fuzzer
// minimises every seed before it starts, and the whole 25 KB files left a
// 30-second run with four executions.
func smallSeed(f *testing.F, b []byte) []byte {
	f.Helper()
	r, err := Decode(b)
	if err != nil {
		f.Fatalf("seed: %v", err)
	}
	var keep []ProfileResult
	seen := map[string]bool{}
	for _, p := range r.Profiles {
		if !seen[p.Protocol] {
			seen[p.Protocol] = true
			p.Summary = Summary{} // recomputed by Decode; absent keeps the seed small
			keep = append(keep, p)
		}
	}
	r.Profiles = keep
	out, err := json.Marshal(r)
	if err != nil {
		f.Fatal(err)
	}
	return out
}
