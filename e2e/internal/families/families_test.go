// Package families holds every layer's family registrations to each other:
// a measurement family (results.Families: latency, connection scale, small
// packets, rule scale, churn, aging, fragments, failover) registers itself
// in each layer's own file, or excuses itself there with a reason, and a
// family that forgot a layer fails here, named with the layer. The perf
// suite's specs are held to the same families by suites/perf's own test
// (its registry lives in its test files). Test files only: it imports
// every layer, which nothing else may.
package families

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/mosk-qa/asap2-e2e/e2e/config"
	"github.com/mosk-qa/asap2-e2e/e2e/history"
	"github.com/mosk-qa/asap2-e2e/e2e/plan"
	"github.com/mosk-qa/asap2-e2e/e2e/report"
	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// layer is one registry and the family ids it covers (registered or
// excused).
type layer struct {
	name   string
	covers []string
}

// missing is one sentence per family a layer does not cover, and per id a
// layer covers that is no family: every family is the union of the
// families' own tables, results' and config's.
func missing(layers []layer) []string {
	var all []string
	for _, l := range layers[:2] {
		for _, id := range l.covers {
			if !slices.Contains(all, id) {
				all = append(all, id)
			}
		}
	}
	slices.Sort(all)
	var out []string
	for _, l := range layers {
		for _, id := range all {
			if !slices.Contains(l.covers, id) {
				out = append(out, fmt.Sprintf("family %s: not registered in %s (register it in the family's own file there, or excuse it with the reason)", id, l.name))
			}
		}
		for _, id := range l.covers {
			if !slices.Contains(all, id) {
				out = append(out, fmt.Sprintf("%s: registers %q, which is no family of results.Families or of config's sections", l.name, id))
			}
		}
	}
	return out
}

// layers are the module's registries, results' and config's first.
func layers() []layer {
	return []layer{
		{"e2e/results (results.Families)", results.Families.Covers()},
		{"e2e/config (sections.go)", config.FamilySections()},
		{"e2e/plan (families.go)", plan.FamilyPlans()},
		{"e2e/history (families.go)", history.FamilySeries()},
		{"e2e/report (families.go)", report.FamilySections()},
	}
}

// TestEveryFamilyInEveryLayer: each family of results and config is in the
// plan, the history and the report, and in results and config both.
func TestEveryFamilyInEveryLayer(t *testing.T) {
	if got := missing(layers()); len(got) > 0 {
		t.Fatalf("families not wired through every layer:\n%s", strings.Join(got, "\n"))
	}
	if len(results.Families.Covers()) == 0 {
		t.Fatal("no family registered in results")
	}
}

// TestMissingNamesFamilyAndLayer: a family one layer forgot, and one a
// layer registers that results and config do not know, are named.
func TestMissingNamesFamilyAndLayer(t *testing.T) {
	ls := layers()
	ls[1].covers = append(slices.Clone(ls[1].covers), "jitter") // config knows a new family
	ls[3].covers = slices.DeleteFunc(slices.Clone(ls[3].covers), func(id string) bool { return id == results.FamilyAging })
	ls[4].covers = append(slices.Clone(ls[4].covers), "typo")
	got := strings.Join(missing(ls), "\n")
	for _, want := range []string{
		"family jitter: not registered in e2e/results (results.Families)",
		"family jitter: not registered in e2e/plan (families.go)",
		"family jitter: not registered in e2e/history (families.go)",
		"family jitter: not registered in e2e/report (families.go)",
		"family aging: not registered in e2e/history (families.go)",
		`e2e/report (families.go): registers "typo", which is no family`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in:\n%s", want, got)
		}
	}
	if strings.Contains(got, "family jitter: not registered in e2e/config") {
		t.Errorf("config registered jitter, yet it is named:\n%s", got)
	}
}
