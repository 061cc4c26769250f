package results

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// Concurrent PutProfile calls (run with -race) all land, and the file is
// valid at the end.
func TestWriterConcurrent(t *testing.T) {
	file := filepath.Join(t.TempDir(), "json")
	w, err := NewWriter(file, Results{RunID: "conc", Config: ConfigSummary{ExpectedPath: PathASAP2}})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- w.PutProfile(ProfileResult{ID: fmt.Sprintf("p%d", i), Protocol: ProtoTCP, Streams: i + 1,
				Runs: []Run{{Repeat: 1, DeliveredBps: float64(i+1) * 1e9, OfferedBps: float64(i+1) * 1e9}}})
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
	file := filepath.Join(t.TempDir(), "json")
	w, err := NewWriter(file, Results{RunID: "nan"})
	if err != nil {
		t.Fatal(err)
	}
	nan := 0.0
	nan /= nan
	err = w.PutProfile(ProfileResult{ID: "x", Protocol: ProtoTCP, Streams: 1, Path: PathASAP2, Runs: []Run{{DeliveredBps: nan}}})
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
		"newer":      {`{"schema_version":3}`, "newer than this tool reads (2)"},
		"older":      {`{"schema_version":0}`, "schema_version 0 is not supported"},
		"unknown":    {`{"schema_version":1,"run_id":"x","bogus":1}`, `unknown field "bogus"`},
		"fleet in v1": {`{"schema_version":1,"run_id":"x","fleet":{"mode":"isolated","shard":"1/1","rule":{"kind":"mad"}}}`,
			"fleet: a fleet section needs schema_version 2 or later, got 1"},
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
