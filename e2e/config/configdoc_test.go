package config

import (
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// docKeyRow is a row of a key table in docs/CONFIG.md: its first cell is a
// key path in backquotes ("| `fleet.outlier.rule` | ...").
var docKeyRow = regexp.MustCompile("(?m)^\\| `([a-z_]+(?:\\.[a-z_]+|\\[\\]\\.[a-z_]+)+)` \\|")

// yamlKeys lists the key paths of t's yaml tags: a struct's fields by
// their tags, a pointer's target, a slice of structs as "key[].field"; a map
// and every other type is a leaf (its entries are named by the map's own
// table: intervals, hypervisors.hosts). A type inside itself (an endpoint's
// jump is an endpoint) is walked once: its row describes the rest.
func yamlKeys(t reflect.Type, prefix string, out map[string]bool, path ...reflect.Type) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if slices.Contains(path, t) {
		return
	}
	path = append(path, t)
	switch {
	case t.Kind() == reflect.Struct && t != reflect.TypeOf(time.Time{}):
		for i := range t.NumField() {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			if name == "-" || name == "" || !f.IsExported() {
				continue
			}
			key := name
			if prefix != "" {
				key = prefix + "." + name
			}
			out[key] = true
			yamlKeys(f.Type, key, out, path...)
		}
	case t.Kind() == reflect.Slice && elemStruct(t.Elem()):
		yamlKeys(t.Elem(), prefix+"[]", out, path...)
	}
}

func elemStruct(t reflect.Type) bool {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.Kind() == reflect.Struct
}

// TestConfigDocMatchesKeys holds docs/CONFIG.md to the config's yaml tags:
// every key a file can set has a row (or sits under a key whose row
// describes its parts, as the endpoint table does for hypervisors.jump), and
// every row names a key that exists. A key added without its row, or a row
// left behind by a renamed key, fails here.
func TestConfigDocMatchesKeys(t *testing.T) {
	doc, err := os.ReadFile("../../docs/CONFIG.md")
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]bool{}
	yamlKeys(reflect.TypeOf(Config{}), "", keys)
	documented := map[string]bool{}
	for _, m := range docKeyRow.FindAllStringSubmatch(string(doc), -1) {
		documented[m[1]] = true
	}
	coveredBy := func(k string) bool { // k or a key above it has a row; a section its heading
		if !strings.Contains(k, ".") {
			return strings.Contains(string(doc), "\n### "+k+"\n")
		}
		for p := k; ; {
			if documented[p] {
				return true
			}
			i := strings.LastIndexAny(p, ".")
			if i < 0 {
				return false
			}
			p = strings.TrimSuffix(p[:i], "[]")
		}
	}
	var undocumented, unknown []string
	parent := map[string]bool{}
	for k := range keys {
		if i := strings.LastIndex(k, "."); i > 0 {
			parent[strings.TrimSuffix(k[:i], "[]")] = true
		}
	}
	for k := range keys {
		if parent[k] {
			continue // a section or a group: its keys below have their rows
		}
		if !coveredBy(k) {
			undocumented = append(undocumented, k)
		}
	}
	for k := range documented {
		if !keys[k] {
			unknown = append(unknown, k)
		}
	}
	slices.Sort(undocumented)
	slices.Sort(unknown)
	if len(undocumented) > 0 {
		t.Errorf("docs/CONFIG.md has no row for %d key(s) the config reads: %s", len(undocumented), strings.Join(undocumented, ", "))
	}
	if len(unknown) > 0 {
		t.Errorf("docs/CONFIG.md has rows for %d key(s) the config does not read: %s", len(unknown), strings.Join(unknown, ", "))
	}
	if len(documented) < 100 {
		t.Errorf("found %d key rows in docs/CONFIG.md: is the table form (| `key` |) still the one this test reads?", len(documented))
	}
}
