package layers

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
)

var update = flag.Bool("update", false, "rewrite docs/DESIGN.md's layer list from Layers")

const module = "github.com/mosk-qa/asap2-e2e"

// root is the module's root directory (the tests run in internal/layers).
var root = filepath.Join("..", "..")

// listed is one package as `go list -json` describes it.
type listed struct {
	ImportPath   string
	Dir          string
	Imports      []string
	TestImports  []string
	XTestImports []string
}

var (
	listOnce sync.Once
	listPkgs []listed
	listErr  error
)

// goList is `go list -json ./...` of the whole module, read once.
func goList(t *testing.T) []listed {
	t.Helper()
	listOnce.Do(func() {
		cmd := exec.Command("go", "list", "-e", "-json=ImportPath,Dir,Imports,TestImports,XTestImports", "./...")
		cmd.Dir = root
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			listErr = errors.New("go list -json ./...: " + err.Error() + ": " + stderr.String())
			return
		}
		dec := json.NewDecoder(bytes.NewReader(out))
		for {
			var p listed
			if err := dec.Decode(&p); err == io.EOF {
				break
			} else if err != nil {
				listErr = err
				return
			}
			listPkgs = append(listPkgs, p)
		}
	})
	if listErr != nil {
		t.Fatal(listErr)
	}
	return listPkgs
}

// rel is a project import path relative to the module ("" for an outside one).
func rel(path string) (string, bool) {
	if r, ok := strings.CutPrefix(path, module+"/"); ok {
		return r, true
	}
	return "", false
}

// graph is what the rules are checked on: for each package its project and outside imports,
// of its own files and of its tests (the package's own path left out of the tests' imports).
type graph struct {
	pkgs        []string
	imports     map[string][]string // project, non-test
	testImports map[string][]string // project, test files (internal and external)
	outside     map[string][]string // outside modules, non-test
	outsideTest map[string][]string // outside modules, test files
}

func newGraph(list []listed) graph {
	g := graph{imports: map[string][]string{}, testImports: map[string][]string{},
		outside: map[string][]string{}, outsideTest: map[string][]string{}}
	for _, p := range list {
		self, ok := rel(p.ImportPath)
		if !ok {
			continue
		}
		g.pkgs = append(g.pkgs, self)
		split := func(paths []string, proj, out map[string][]string) {
			for _, imp := range paths {
				if r, ok := rel(imp); ok {
					if r != self {
						proj[self] = append(proj[self], r)
					}
				} else if strings.Contains(strings.SplitN(imp, "/", 2)[0], ".") {
					out[self] = append(out[self], imp)
				}
			}
		}
		split(p.Imports, g.imports, g.outside)
		split(append(slices.Clone(p.TestImports), p.XTestImports...), g.testImports, g.outsideTest)
	}
	sort.Strings(g.pkgs)
	return g
}

// check holds g to Layers and Modules: every problem, one sentence each.
func check(g graph) []string {
	var problems []string
	add := func(s string) { problems = append(problems, s) }
	layerOf := map[string]int{}
	rule := map[string]Package{}
	for i, l := range Layers {
		for _, p := range l.Packages {
			if _, dup := layerOf[p.Path]; dup {
				add(p.Path + ": in Layers twice")
			}
			layerOf[p.Path] = i + 1
			rule[p.Path] = p
		}
	}
	for _, path := range g.pkgs {
		if _, ok := layerOf[path]; !ok {
			add(path + ": a package on no layer: give it one in internal/layers/layers.go")
		}
	}
	for path, p := range rule {
		if !slices.Contains(g.pkgs, path) {
			add(path + ": in internal/layers/layers.go but not a package of the module")
			continue
		}
		for _, imp := range p.Imports {
			if l, ok := layerOf[imp]; !ok || l >= layerOf[path] {
				add(path + " (layer " + itoa(layerOf[path]) + ") may not import " + imp + " (layer " + itoa(l) + "): only layers below")
			}
			if !slices.Contains(g.imports[path], imp) {
				add(path + ": allowed to import " + imp + " but does not: remove it from internal/layers/layers.go (and so from DESIGN.md)")
			}
		}
		for _, imp := range g.imports[path] {
			if !slices.Contains(p.Imports, imp) {
				add(path + " imports " + imp + ": not an import DESIGN.md allows it (internal/layers/layers.go)")
			}
		}
	}
	for _, path := range g.pkgs {
		for _, imp := range g.imports[path] {
			if rule[imp].OnlyTests {
				add(path + " imports " + imp + ", which only tests may import")
			}
		}
		for _, imp := range append(slices.Clone(g.imports[path]), g.testImports[path]...) {
			if only := rule[imp].OnlyImportedBy; len(only) > 0 && !slices.Contains(only, path) {
				add(path + " imports " + imp + ", which only " + strings.Join(only, ", ") + " may import")
			}
		}
		for _, m := range g.outside[path] {
			if r, ok := moduleRule(m); ok && !slices.Contains(r.By, path) {
				add(path + " imports " + m + ": only " + orNone(r.By) + " may (" + r.Prefix + ")")
			}
		}
		for _, m := range g.outsideTest[path] {
			if r, ok := moduleRule(m); ok && !slices.Contains(r.By, path) && !slices.Contains(r.TestsBy, path) {
				add(path + "'s tests import " + m + ": only the tests of " + orNone(append(slices.Clone(r.By), r.TestsBy...)) + " may (" + r.Prefix + ")")
			}
		}
	}
	sort.Strings(problems)
	return problems
}

func moduleRule(path string) (Module, bool) {
	best, found := Module{}, false
	for _, m := range Modules {
		if strings.HasPrefix(path+"/", m.Prefix) && len(m.Prefix) > len(best.Prefix) {
			best, found = m, true
		}
	}
	return best, found
}

func orNone(paths []string) string {
	if len(paths) == 0 {
		return "no package"
	}
	return strings.Join(paths, ", ")
}

func itoa(i int) string {
	if i == 0 {
		return "none"
	}
	return strconv.Itoa(i)
}

// TestImportLayers: every import of the module's code is one DESIGN.md allows, and every
// allowance is an import the code makes.
func TestImportLayers(t *testing.T) {
	for _, p := range check(newGraph(goList(t))) {
		t.Error(p)
	}
}

// TestImportLayersCatch: the check fails on each kind of edge DESIGN.md forbids, shown on the
// module's own graph with one edge changed.
func TestImportLayersCatch(t *testing.T) {
	real := newGraph(goList(t))
	if p := check(real); len(p) > 0 {
		t.Skip("the tree breaks the rules itself (TestImportLayers says how)")
	}
	clone := func() graph {
		g := graph{pkgs: slices.Clone(real.pkgs), imports: map[string][]string{}, testImports: map[string][]string{},
			outside: map[string][]string{}, outsideTest: map[string][]string{}}
		for k, v := range real.imports {
			g.imports[k] = slices.Clone(v)
		}
		for k, v := range real.testImports {
			g.testImports[k] = slices.Clone(v)
		}
		for k, v := range real.outside {
			g.outside[k] = slices.Clone(v)
		}
		for k, v := range real.outsideTest {
			g.outsideTest[k] = slices.Clone(v)
		}
		return g
	}
	for _, tc := range []struct {
		name   string
		change func(g *graph)
		want   string
	}{
		{"an import upwards", func(g *graph) { g.imports["e2e/offload"] = append(g.imports["e2e/offload"], "e2e/harness") },
			"e2e/offload imports e2e/harness: not an import DESIGN.md allows"},
		{"an import on the same layer", func(g *graph) { g.imports["e2e/iperf3"] = append(g.imports["e2e/iperf3"], "e2e/offload") },
			"e2e/iperf3 imports e2e/offload: not an import"},
		{"an import below the allowed ones", func(g *graph) { g.imports["e2e/evidence"] = append(g.imports["e2e/evidence"], "fixtures") },
			"e2e/evidence imports fixtures: not an import"},
		{"the report below the top", func(g *graph) { g.testImports["e2e/harness"] = append(g.testImports["e2e/harness"], "e2e/report") },
			"e2e/harness imports e2e/report, which only e2e/framework, tools/report, e2e/internal/families may import"},
		{"a fake in non-test code", func(g *graph) { g.imports["e2e/harness"] = append(g.imports["e2e/harness"], "fixtures/fakecloud") },
			"e2e/harness imports fixtures/fakecloud, which only tests may import"},
		{"client-go outside the transport", func(g *graph) { g.outside["fixtures"] = append(g.outside["fixtures"], "k8s.io/client-go/kubernetes") },
			"fixtures imports k8s.io/client-go/kubernetes: only e2e/remote/kube, lab/oidc/plainclient may"},
		{"client-go's fake in a test that is not allowed it", func(g *graph) {
			g.outsideTest["e2e/offload"] = append(g.outsideTest["e2e/offload"], "k8s.io/client-go/kubernetes/fake")
		},
			"e2e/offload's tests import k8s.io/client-go/kubernetes/fake"},
		{"the CRI server in non-test code", func(g *graph) {
			g.outside["e2e/remote/kube"] = append(g.outside["e2e/remote/kube"], "k8s.io/cri-streaming/pkg/streaming")
		},
			"e2e/remote/kube imports k8s.io/cri-streaming/pkg/streaming: only no package may"},
		{"Ginkgo in fixtures", func(g *graph) { g.outside["fixtures"] = append(g.outside["fixtures"], "github.com/onsi/ginkgo/v2") },
			"fixtures imports github.com/onsi/ginkgo/v2"},
		{"an allowance no code uses", func(g *graph) {
			g.imports["e2e/sockperf"] = slices.DeleteFunc(g.imports["e2e/sockperf"], func(s string) bool { return s == "e2e/wait" })
		},
			"e2e/sockperf: allowed to import e2e/wait but does not"},
		{"a package on no layer", func(g *graph) { g.pkgs = append(g.pkgs, "e2e/newthing") },
			"e2e/newthing: a package on no layer"},
		{"a layer entry with no package", func(g *graph) { g.pkgs = slices.DeleteFunc(g.pkgs, func(s string) bool { return s == "e2e/ndr" }) },
			"e2e/ndr: in internal/layers/layers.go but not a package"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := clone()
			tc.change(&g)
			got := check(g)
			for _, p := range got {
				if strings.Contains(p, tc.want) {
					return
				}
			}
			t.Errorf("no problem containing %q; got %q", tc.want, got)
		})
	}
}

// The markers around DESIGN.md's layer list, which is Render's text.
const (
	designBegin = "<!-- layers: generated from internal/layers/layers.go; go test ./internal/layers -update rewrites it -->\n"
	designEnd   = "<!-- end of layers -->\n"
)

// TestDesignLayers: DESIGN.md's layer list is the one the rules are (-update writes it).
func TestDesignLayers(t *testing.T) {
	path := filepath.Join(root, "docs", "DESIGN.md")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	before, rest, ok1 := strings.Cut(text, designBegin)
	current, after, ok2 := strings.Cut(rest, designEnd)
	if !ok1 || !ok2 {
		t.Fatalf("%s: no layer list between %q and %q", path, strings.TrimSpace(designBegin), strings.TrimSpace(designEnd))
	}
	want := Render()
	if current == want {
		return
	}
	if *update {
		if err := os.WriteFile(path, []byte(before+designBegin+want+designEnd+after), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("%s: the layer list is not internal/layers/layers.go's (go test ./internal/layers -update rewrites it):\n--- DESIGN.md\n%s--- layers.go\n%s", path, current, want)
}
