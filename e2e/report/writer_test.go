package report

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// The committed fixtures testdata/seed-{asap2,baseline}.json are the seed's
// numbers (seed_test.go) written through results.Writer; tools/report's tests read
// them. Regenerate with -update.
func TestSeedFixturesWrittenByWriter(t *testing.T) {
	for _, path := range []results.Path{results.PathASAP2, results.PathBaseline} {
		want := seedResults(path)
		dir := t.TempDir()
		file := filepath.Join(dir, "results.json")
		init := *want
		init.Profiles = nil
		w, err := results.NewWriter(file, init)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range want.Profiles {
			if err := w.PutProfile(p); err != nil {
				t.Fatal(err)
			}
		}
		got, err := results.Load(file)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			a, _ := json.MarshalIndent(got, "", " ")
			b, _ := json.MarshalIndent(want, "", " ")
			t.Fatalf("%s: loaded results differ from written:\n%s\nwant\n%s", path, a, b)
		}
		fixture := filepath.Join("testdata", "seed-"+string(path)+".json")
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if *update {
			if err := os.WriteFile(fixture, data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		committed, err := os.ReadFile(fixture)
		if err != nil {
			t.Fatalf("%v (run go test -update once)", err)
		}
		if string(committed) != string(data) {
			t.Errorf("%s is stale: rerun go test -update and review", fixture)
		}
	}
}

// A killed run keeps everything it finished: after every PutProfile the
// file on disk is complete, valid and holds every profile so far; no
// temporary file is left behind.
func TestWriterFileCompleteAfterEveryProfile(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "results.json")
	src := seedResults(results.PathASAP2)
	init := *src
	init.Profiles, init.FinishedAt = nil, nil
	w, err := results.NewWriter(file, init)
	if err != nil {
		t.Fatal(err)
	}
	if r, err := results.Load(file); err != nil || len(r.Profiles) != 0 || r.FinishedAt != nil {
		t.Fatalf("initial file: %v, %+v", err, r)
	}
	for i, p := range src.Profiles {
		if err := w.PutProfile(p); err != nil {
			t.Fatal(err)
		}
		r, err := results.Load(file)
		if err != nil {
			t.Fatalf("after profile %d: %v", i, err)
		}
		if len(r.Profiles) != i+1 || r.Profiles[i].ID != p.ID {
			t.Fatalf("after profile %d: file has %d profiles", i, len(r.Profiles))
		}
	}
	// Re-putting a profile replaces it.
	p := src.Profiles[0]
	p.Runs = append(p.Runs, results.Run{Repeat: 2, OfferedBps: 15e9, DeliveredBps: 15e9})
	if err := w.PutProfile(p); err != nil {
		t.Fatal(err)
	}
	if err := w.Update(func(r *results.Results) {
		r.Timings = append(r.Timings, results.Timing{Phase: results.PhaseTeardown, Seconds: 1.5})
		r.Errors = append(r.Errors, "port p1: still bound")
	}); err != nil {
		t.Fatal(err)
	}
	if err := w.Finish(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)); err != nil {
		t.Fatal(err)
	}
	r, err := results.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Profiles) != len(src.Profiles) || r.Profiles[0].Summary.Delivered.N != 2 {
		t.Errorf("replace failed: %d profiles, first has %d runs", len(r.Profiles), r.Profiles[0].Summary.Delivered.N)
	}
	last := r.Timings[len(r.Timings)-1]
	if last.Phase != results.PhaseTeardown || last.Seconds != 1.5 || r.Errors[0] != "port p1: still bound" || r.FinishedAt == nil {
		t.Errorf("timing/error/finish not recorded: %+v %q %v", last, r.Errors, r.FinishedAt)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("leftover files: %v", names)
	}
	// Snapshot is a deep copy.
	snap := w.Snapshot()
	snap.Profiles[0].Runs[0].DeliveredBps = 1
	if w.Snapshot().Profiles[0].Runs[0].DeliveredBps == 1 {
		t.Error("Snapshot shares memory with the writer")
	}
}
