package results

import (
	"reflect"
	"slices"
	"strings"
	"testing"
)

func panics(t *testing.T, want string, fn func()) {
	t.Helper()
	defer func() {
		t.Helper()
		r := recover()
		if r == nil {
			t.Fatalf("no panic, want one saying %q", want)
		}
		if msg, _ := r.(string); !strings.Contains(msg, want) {
			t.Fatalf("panic %v, want one saying %q", r, want)
		}
	}()
	fn()
}

// TestRegistryRejectsDuplicates: a family id registered (or excused) twice
// panics at init, naming the registry and the family.
func TestRegistryRejectsDuplicates(t *testing.T) {
	r := NewRegistry[int]("test.Sections")
	r.Register(2, 2, "b")
	r.Register(1, 1, "a", "a2")
	r.Excuse("nothing to show", "c")
	panics(t, `test.Sections: family "a2" registered twice`, func() { r.Register(3, 3, "a2") })
	panics(t, `test.Sections: family "c" registered twice`, func() { r.Register(3, 3, "c") })
	panics(t, `test.Sections: family "b" registered twice`, func() { r.Excuse("again", "b") })
	panics(t, "names no family", func() { r.Register(3, 3) })
	panics(t, "empty family id", func() { r.Register(3, 3, "") })
	panics(t, "needs its reason", func() { r.Excuse("", "d") })
	var order []int
	for _, e := range r.All() {
		order = append(order, e.Value)
	}
	if !slices.Equal(order, []int{1, 2}) {
		t.Errorf("All in order %v, want [1 2]", order)
	}
	if got := r.Covers(); !slices.Equal(got, []string{"a", "a2", "b", "c"}) {
		t.Errorf("Covers %v", got)
	}
}

// TestFamilyKeysAreResultsFields: each family's Key is a field of Results.
func TestFamilyKeysAreResultsFields(t *testing.T) {
	keys := map[string]bool{}
	rt := reflect.TypeFor[Results]()
	for i := range rt.NumField() {
		keys[strings.Split(rt.Field(i).Tag.Get("json"), ",")[0]] = true
	}
	for _, e := range Families.All() {
		if !keys[e.Value.Key] {
			t.Errorf("family %v: key %q is no field of Results", e.Families, e.Value.Key)
		}
	}
}
