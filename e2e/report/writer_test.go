package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// The committed fixtures testdata/seed-{asap2,baseline}.json are the seed's
// numbers (seed_test.go) written through results.Writer; tools/report's tests read
// them. Regenerate with -update. They stay schema version 1 files on purpose
// (the version is the only line the current writer writes differently): the
// golden reports are rendered from them, so they prove that files written
// before the fleet section load and render unchanged.
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
		data = bytes.Replace(data, []byte(fmt.Sprintf("\"schema_version\": %d,", results.SchemaVersion)), []byte(`"schema_version": 1,`), 1)
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
