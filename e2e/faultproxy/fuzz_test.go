package faultproxy

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

func jsonMarshal(v any) ([]byte, error) { return json.Marshal(v) }

// FuzzParse: malformed plans give an error, never a panic; a plan that
// parses compiles into an injector. Seeds: testdata/*.json.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.json")
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Parse(data)
		if err != nil {
			return
		}
		if _, err := NewInjector(p, nil); err != nil {
			t.Fatalf("Parse accepted a plan NewInjector refuses: %v", err)
		}
	})
}
