package report

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// The committed fixtures testdata/seed-{asap2,baseline}.json are the seed's
// numbers (seed_test.go) written through Writer; tools/report's tests read
// them. Regenerate with -update.
func TestSeedFixturesWrittenByWriter(t *testing.T) {
	for _, path := range []results.Path{results.PathASAP2, results.PathBaseline} {
		want := seedResults(path)
		dir := t.TempDir()
		file := filepath.Join(dir, "results.json")
		init := *want
		init.Profiles = nil
		w, err := NewWriter(file, init)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range want.Profiles {
			if err := w.PutProfile(p); err != nil {
				t.Fatal(err)
			}
		}
		got, err := Load(file)
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
	w, err := NewWriter(file, init)
	if err != nil {
		t.Fatal(err)
	}
	if r, err := Load(file); err != nil || len(r.Profiles) != 0 || r.FinishedAt != nil {
		t.Fatalf("initial file: %v, %+v", err, r)
	}
	for i, p := range src.Profiles {
		if err := w.PutProfile(p); err != nil {
			t.Fatal(err)
		}
		r, err := Load(file)
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
	r, err := Load(file)
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

// Concurrent PutProfile calls (run with -race) all land, and the file is
// valid at the end.
func TestWriterConcurrent(t *testing.T) {
	file := filepath.Join(t.TempDir(), "results.json")
	w, err := NewWriter(file, results.Results{RunID: "conc", Config: results.ConfigSummary{ExpectedPath: results.PathASAP2}})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- w.PutProfile(results.ProfileResult{ID: fmt.Sprintf("p%d", i), Protocol: results.ProtoTCP, Streams: i + 1,
				Runs: []results.Run{{Repeat: 1, DeliveredBps: float64(i+1) * 1e9, OfferedBps: float64(i+1) * 1e9}}})
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	r, err := Load(file)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Profiles) != 20 {
		t.Errorf("%d profiles, want 20", len(r.Profiles))
	}
}

// A value JSON cannot hold is an error naming the file, not a panic and not
// a truncated file.
func TestWriterRejectsNaN(t *testing.T) {
	file := filepath.Join(t.TempDir(), "results.json")
	w, err := NewWriter(file, results.Results{RunID: "nan"})
	if err != nil {
		t.Fatal(err)
	}
	nan := 0.0
	nan /= nan
	err = w.PutProfile(results.ProfileResult{ID: "x", Protocol: results.ProtoTCP, Streams: 1, Path: results.PathASAP2, Runs: []results.Run{{DeliveredBps: nan}}})
	if err == nil || !strings.Contains(err.Error(), file) {
		t.Fatalf("err = %v, want an encode error naming %s", err, file)
	}
	if _, err := Load(file); err != nil {
		t.Errorf("file damaged by failed write: %v", err)
	}
}

func TestLoadProblems(t *testing.T) {
	dir := t.TempDir()
	cases := map[string]struct{ body, want string }{
		"not json":   {"{", "not a JSON object"},
		"no version": {`{"run_id":"x"}`, "schema_version missing"},
		"newer":      {`{"schema_version":2}`, "newer than this tool reads (1)"},
		"older":      {`{"schema_version":0}`, "schema_version 0 is not supported"},
		"unknown":    {`{"schema_version":1,"run_id":"x","bogus":1}`, `unknown field "bogus"`},
		"all problems": {`{"schema_version":1,"run_id":"","config":{"expected_path":"fast"},
			"profiles":[{"id":"","protocol":"sctp","streams":0,"path":"asap2","runs":[{"loss_percent":140,"delivered_bps":-1}],
			"offload":[{"name":"tc","verdict":"maybe"}]}]}`,
			"run_id: must be set; config.expected_path: must be asap2 or baseline, got \"fast\""},
	}
	for name, c := range cases {
		file := filepath.Join(dir, strings.ReplaceAll(name, " ", "_")+".json")
		if err := os.WriteFile(file, []byte(c.body), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Load(file)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), file) {
			t.Errorf("%s: err = %v, want it to name %s and contain %q", name, err, file, c.want)
		}
	}
	// Every problem at once.
	_, err := Load(filepath.Join(dir, "all_problems.json"))
	for _, want := range []string{"profiles[0].id", "profiles[0].protocol", "profiles[0].streams", "runs[0].loss_percent", "runs[0].delivered_bps", "offload[0].verdict"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("all problems: %v lacks %s", err, want)
		}
	}
	if _, err := Load(filepath.Join(dir, "absent.json")); err == nil {
		t.Error("no error for a missing file")
	}
}
