package config

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// FuzzLoad feeds arbitrary bytes through Parse, Validate and Redacted. Seeds
// are every file in testdata/ and examples/ (written for these tests). The
// property: no panic, and every failure is a non-empty Problems whose entries
// name the file.
func FuzzLoad(f *testing.F) {
	for _, pattern := range []string{"testdata/*.yaml", "examples/*.yaml"} {
		files, err := filepath.Glob(pattern)
		if err != nil {
			f.Fatal(err)
		}
		for _, file := range files {
			data, err := os.ReadFile(file)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(data)
		}
	}
	f.Add([]byte("a: &a [*a]\n"))
	f.Add([]byte("run: &r {expected_path: asap2}\ncloud: {<<: *r}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := Parse("fuzz.yaml", data)
		if err != nil {
			checkProblems(t, err)
			return
		}
		if err := cfg.Validate(WithGetenv(noEnv), KnownProfiles("tcp-p1")); err != nil {
			checkProblems(t, err)
		}
		_ = cfg.Redacted()
		for _, name := range IntervalNames() {
			_ = cfg.Interval(name)
		}
	})
}

func checkProblems(t *testing.T, err error) {
	t.Helper()
	var probs Problems
	if !errors.As(err, &probs) || len(probs) == 0 {
		t.Fatalf("want a non-empty Problems, got %T %v", err, err)
	}
	for _, p := range probs {
		if p.File != "fuzz.yaml" {
			t.Fatalf("problem without the file name: %#v", p)
		}
	}
}
