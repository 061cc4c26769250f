package results

import (
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// fill sets every exported field of v, at every depth, to a value other
// than its zero: pointers point, slices and maps hold two elements, so a
// field added to the schema later is filled without a line here.
func fill(v reflect.Value, depth int) {
	if depth > 16 {
		return // a recursive type: deep enough
	}
	switch v.Kind() {
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		fill(p.Elem(), depth+1)
		v.Set(p)
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 2, 2)
		for i := range 2 {
			fill(s.Index(i), depth+1)
		}
		v.Set(s)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		for i := range 2 {
			k := reflect.New(v.Type().Key()).Elem()
			fill(k, depth+1)
			if k.Kind() == reflect.String {
				k.SetString(fmt.Sprintf("key%d", i))
			}
			e := reflect.New(v.Type().Elem()).Elem()
			fill(e, depth+1)
			m.SetMapIndex(k, e)
		}
		v.Set(m)
	case reflect.Array:
		for i := range v.Len() {
			fill(v.Index(i), depth+1)
		}
	case reflect.Struct:
		if v.Type() == timeType {
			v.Set(reflect.ValueOf(time.Date(2026, 12, 3, 4, 5, 6, 7, time.UTC).Add(time.Duration(depth) * time.Hour)))
			return
		}
		for i := range v.NumField() {
			if v.Field(i).CanSet() {
				fill(v.Field(i), depth+1)
			}
		}
	case reflect.String:
		v.SetString(fmt.Sprintf("s%d", depth))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(int64(depth + 1))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(uint64(depth + 1))
	case reflect.Float32, reflect.Float64:
		v.SetFloat(float64(depth) + 0.5)
	case reflect.Interface:
		if v.NumMethod() == 0 {
			v.Set(reflect.ValueOf(fmt.Sprintf("any%d", depth)))
		}
	}
}

// filled is a Results with every field populated.
func filled(t testing.TB) Results {
	var r Results
	fill(reflect.ValueOf(&r).Elem(), 0)
	if zero := zeroFields(reflect.ValueOf(r), "Results"); len(zero) > 0 {
		t.Fatalf("fill left fields zero: %s", strings.Join(zero, ", "))
	}
	return r
}

// zeroFields names the exported fields under v that hold their zero value.
func zeroFields(v reflect.Value, path string) []string {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return []string{path}
		}
		return zeroFields(v.Elem(), path)
	case reflect.Slice, reflect.Array:
		if v.Len() == 0 {
			return []string{path}
		}
		var out []string
		for i := range v.Len() {
			out = append(out, zeroFields(v.Index(i), fmt.Sprintf("%s[%d]", path, i))...)
		}
		return out
	case reflect.Map:
		if v.Len() == 0 {
			return []string{path}
		}
		var out []string
		for it := v.MapRange(); it.Next(); {
			out = append(out, zeroFields(it.Value(), fmt.Sprintf("%s[%v]", path, it.Key()))...)
		}
		return out
	case reflect.Struct:
		if v.Type() == timeType {
			if v.Interface().(time.Time).IsZero() {
				return []string{path}
			}
			return nil
		}
		var out []string
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				out = append(out, zeroFields(v.Field(i), path+"."+v.Type().Field(i).Name)...)
			}
		}
		return out
	}
	if v.IsZero() {
		return []string{path}
	}
	return nil
}

// shared names where a and b, equal values, share memory: the same
// pointer, the same backing array of a slice, the same map.
func shared(a, b reflect.Value, path string) []string {
	switch a.Kind() {
	case reflect.Pointer:
		if a.IsNil() || b.IsNil() {
			return nil
		}
		if a.Pointer() == b.Pointer() {
			return []string{path}
		}
		return shared(a.Elem(), b.Elem(), path)
	case reflect.Interface:
		if a.IsNil() || b.IsNil() {
			return nil
		}
		return shared(a.Elem(), b.Elem(), path)
	case reflect.Slice:
		if a.Cap() > 0 && b.Cap() > 0 && a.UnsafePointer() == b.UnsafePointer() {
			return []string{path}
		}
		var out []string
		for i := range min(a.Len(), b.Len()) {
			out = append(out, shared(a.Index(i), b.Index(i), fmt.Sprintf("%s[%d]", path, i))...)
		}
		return out
	case reflect.Array:
		var out []string
		for i := range a.Len() {
			out = append(out, shared(a.Index(i), b.Index(i), fmt.Sprintf("%s[%d]", path, i))...)
		}
		return out
	case reflect.Map:
		if a.IsNil() || b.IsNil() {
			return nil
		}
		if a.Pointer() == b.Pointer() {
			return []string{path}
		}
		var out []string
		for it := a.MapRange(); it.Next(); {
			if e := b.MapIndex(it.Key()); e.IsValid() {
				out = append(out, shared(it.Value(), e, fmt.Sprintf("%s[%v]", path, it.Key()))...)
			}
		}
		return out
	case reflect.Struct:
		if a.Type() == timeType {
			return nil // a value; its location is immutable and shared on purpose
		}
		var out []string
		for i := range a.NumField() {
			if a.Type().Field(i).IsExported() {
				out = append(out, shared(a.Field(i), b.Field(i), path+"."+a.Type().Field(i).Name)...)
			}
		}
		return out
	}
	return nil
}

// TestCloneSharesNoMemory: the writer's copy of a Results with every field
// populated is equal to it and shares no pointer, slice or map with it, so
// a field added to the schema needs no copy code and cannot alias.
func TestCloneSharesNoMemory(t *testing.T) {
	r := filled(t)
	c := clone(r)
	if !reflect.DeepEqual(r, c) {
		t.Fatal("clone differs from the original")
	}
	if s := shared(reflect.ValueOf(r), reflect.ValueOf(c), "Results"); len(s) > 0 {
		t.Fatalf("clone shares memory with the original at %s", strings.Join(s, ", "))
	}
	p := r.Profiles[0]
	if q := deepCopy(p); !reflect.DeepEqual(p, q) || len(shared(reflect.ValueOf(p), reflect.ValueOf(q), "ProfileResult")) > 0 {
		t.Fatal("deepCopy of a ProfileResult is not a deep copy")
	}
}

// TestSharedFindsAliases: the walk above names a copy that aliases, at any
// depth, so TestCloneSharesNoMemory can fail.
func TestSharedFindsAliases(t *testing.T) {
	r := filled(t)
	for _, c := range []struct {
		want  string
		alias func(c *Results)
	}{
		{"Results.Profiles", func(c *Results) { c.Profiles = r.Profiles }},
		{"Results.FinishedAt", func(c *Results) { c.FinishedAt = r.FinishedAt }},
		{"Results.Aging", func(c *Results) { c.Aging = r.Aging }},
		{"Results.Failover[1].Reoffload", func(c *Results) { c.Failover[1].Reoffload = r.Failover[1].Reoffload }},
		{"Results.Profiles[0].Runs[1].OVSDrops[0].Drops", func(c *Results) { c.Profiles[0].Runs[1].OVSDrops[0].Drops = r.Profiles[0].Runs[1].OVSDrops[0].Drops }},
	} {
		got := clone(r)
		c.alias(&got)
		if s := shared(reflect.ValueOf(r), reflect.ValueOf(got), "Results"); !strings.Contains(strings.Join(s, " "), c.want) {
			t.Errorf("alias at %s not found, got %v", c.want, s)
		}
	}
}

// BenchmarkSnapshot is the writer's deep copy of a results file whose
// every field holds two elements at every level.
func BenchmarkSnapshot(b *testing.B) {
	w, err := NewWriter(filepath.Join(b.TempDir(), "results.json"), Results{RunID: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	r := filled(b)
	w.res = r
	b.ReportAllocs()
	for b.Loop() {
		_ = w.Snapshot()
	}
}
