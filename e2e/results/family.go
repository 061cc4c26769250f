package results

import (
	"cmp"
	"fmt"
	"slices"
)

// A measurement family (latency, connection scale, small packets, rule
// scale, churn, aging, fragments, failover) is one registration per layer:
// its own file in each package registers what the layer needs of it (this
// package: its results' key and validation; config: defaults and checks;
// plan: budget and artifacts; history: points; report: sections; the perf
// suite: specs) in a Registry, and the layer's shared code ranges over the
// registry instead of naming the families. e2e/internal/families holds
// every layer's registry to the families registered here.

// Registry is one layer's table of family registrations, ordered by an
// explicit key (a report's sections, a budget's lines and a suite's specs
// keep their order). An entry covers one or more family ids (the report's
// hold section is rule_scale's and churn's); a family with nothing for the
// layer says why instead (Excuse), so that a forgotten registration is
// told from a deliberate one. A family id registered twice panics at init.
type Registry[T any] struct {
	name    string
	entries []Entry[T]
	covered map[string]string // family id -> "registered" or the excuse
}

// Entry is one registration: the families it covers, its order and what
// it contributes.
type Entry[T any] struct {
	Families []string
	Order    int
	Value    T
}

// NewRegistry is an empty registry; name says whose it is in a panic.
func NewRegistry[T any](name string) *Registry[T] {
	return &Registry[T]{name: name, covered: map[string]string{}}
}

// Register adds v for families at order. It panics on no family id, an
// empty one or one already registered.
func (r *Registry[T]) Register(order int, v T, families ...string) {
	r.claim(families, "")
	r.entries = append(r.entries, Entry[T]{Families: families, Order: order, Value: v})
	slices.SortStableFunc(r.entries, func(a, b Entry[T]) int { return cmp.Compare(a.Order, b.Order) })
}

// Excuse records that families contribute nothing to this layer, and why.
func (r *Registry[T]) Excuse(why string, families ...string) {
	if why == "" {
		panic(fmt.Sprintf("%s: an excuse of %v needs its reason", r.name, families))
	}
	r.claim(families, why)
}

func (r *Registry[T]) claim(families []string, why string) {
	if len(families) == 0 {
		panic(fmt.Sprintf("%s: a registration names no family", r.name))
	}
	for _, f := range families {
		if f == "" {
			panic(fmt.Sprintf("%s: a registration names an empty family id", r.name))
		}
		if _, dup := r.covered[f]; dup {
			panic(fmt.Sprintf("%s: family %q registered twice", r.name, f))
		}
		r.covered[f] = why
	}
}

// All is every registration with a contribution, by order (equal orders
// in registration order).
func (r *Registry[T]) All() []Entry[T] { return r.entries }

// Name is the registry's name.
func (r *Registry[T]) Name() string { return r.name }

// Covers is every family id registered or excused, sorted.
func (r *Registry[T]) Covers() []string {
	ids := make([]string, 0, len(r.covered))
	for id := range r.covered {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// Family is what this package knows of a measurement family: the key of
// its results in Results (a JSON key) and the check of them in a file
// being loaded (Load's problems, in registration order).
type Family struct {
	Key      string
	Validate func(r *Results, add func(string, ...any))
}

// Families are the measurement families' results.
var Families = NewRegistry[Family]("results.Families")
