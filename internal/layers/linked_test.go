package layers

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
)

var (
	depsOnce sync.Once
	depsMap  map[string][]string
	depsErr  error
)

// goListBuilds is every build of the module and the packages in it, from
// `go list -test -deps`'s view: "e2e/harness" is the package's own build,
// "e2e/harness.test" its test binary.
func goListBuilds(t *testing.T) map[string][]string {
	t.Helper()
	depsOnce.Do(func() {
		cmd := exec.Command("go", "list", "-e", "-test", "-json=ImportPath,Deps", "./...")
		cmd.Dir = root
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			depsErr = errors.New("go list -test -json ./...: " + err.Error() + ": " + stderr.String())
			return
		}
		depsMap = map[string][]string{}
		dec := json.NewDecoder(bytes.NewReader(out))
		for {
			var p struct {
				ImportPath string
				Deps       []string
			}
			if err := dec.Decode(&p); err == io.EOF {
				break
			} else if err != nil {
				depsErr = err
				return
			}
			// "P [P.test]" and "P_test [P.test]" are parts of the test binary "P.test".
			if strings.Contains(p.ImportPath, " ") {
				continue
			}
			if r, ok := rel(p.ImportPath); ok {
				depsMap[r] = p.Deps
			}
		}
	})
	if depsErr != nil {
		t.Fatal(depsErr)
	}
	return depsMap
}

// checkLinked holds builds to Heavy: a build that contains a Heavy module
// belongs to a package its rule names, and each package it names contains
// it (in its build or its test binary). Every problem, one sentence each.
func checkLinked(builds map[string][]string) []string {
	var problems []string
	names := make([]string, 0, len(builds))
	for b := range builds {
		names = append(names, b)
	}
	sort.Strings(names)
	for _, h := range Heavy {
		allowed := func(pkg string) bool {
			return slices.ContainsFunc(h.By, func(l Linker) bool { return l.Path == pkg })
		}
		used := map[string]bool{}
		for _, b := range names {
			var in []string
			for _, d := range builds[b] {
				if strings.HasPrefix(d, h.Prefix) {
					in = append(in, d)
				}
			}
			if len(in) == 0 {
				continue
			}
			// Name client-go first where it is there: the library the rule is about.
			if i := slices.IndexFunc(in, func(d string) bool { return strings.HasPrefix(d, "k8s.io/client-go/") }); i > 0 {
				in[0], in[i] = in[i], in[0]
			}
			pkg, test := strings.CutSuffix(b, ".test")
			used[pkg] = true
			if allowed(pkg) {
				continue
			}
			what := pkg + "'s build"
			if test {
				what = pkg + "'s test binary"
			}
			problems = append(problems, what+" contains "+strconv.Itoa(len(in))+" packages of "+h.Prefix+" (e.g. "+in[0]+
				"): only "+linkerPaths(h.By)+" may (internal/layers/layers.go, Heavy); take what needs it as an interface, as the harness takes kubeaccess.Open")
		}
		for _, l := range h.By {
			if !used[l.Path] {
				problems = append(problems, l.Path+": allowed to contain "+h.Prefix+" but neither its build nor its test binary does: remove it from Heavy")
			}
		}
	}
	return problems
}

func linkerPaths(ls []Linker) string {
	p := make([]string, len(ls))
	for i, l := range ls {
		p[i] = l.Path
	}
	return strings.Join(p, ", ")
}

// TestHeavyModulesLinked: client-go and its closure are only in the builds
// Heavy allows (a package that most tests build, such as the harness,
// pulling it back in would make every such test binary link it again).
func TestHeavyModulesLinked(t *testing.T) {
	for _, p := range checkLinked(goListBuilds(t)) {
		t.Error(p)
	}
}

// TestHeavyModulesLinkedCatch: the check fails on a build that gained
// client-go through an import, on a test binary that did, and on an
// allowance no build uses — on the module's own builds with one changed.
func TestHeavyModulesLinkedCatch(t *testing.T) {
	real := goListBuilds(t)
	if p := checkLinked(real); len(p) > 0 {
		t.Skip("the tree breaks the rule itself (TestHeavyModulesLinked says how)")
	}
	for _, tc := range []struct {
		name   string
		change func(b map[string][]string)
		want   string
	}{
		{"the harness through an import", func(b map[string][]string) {
			b["e2e/harness"] = append(b["e2e/harness"], "k8s.io/client-go/kubernetes", "k8s.io/api/core/v1")
		}, "e2e/harness's build contains 2 packages of k8s.io/ (e.g. k8s.io/client-go/kubernetes): only e2e/remote/kube, suites/perf"},
		{"a test binary", func(b map[string][]string) {
			b["e2e/framework.test"] = append(b["e2e/framework.test"], "k8s.io/client-go/kubernetes/fake")
		}, "e2e/framework's test binary contains 1 packages of k8s.io/"},
		{"an allowance no build uses", func(b map[string][]string) {
			b["tools/kubecheck"], b["tools/kubecheck.test"] = nil, nil
		}, "tools/kubecheck: allowed to contain k8s.io/ but neither"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := map[string][]string{}
			for k, v := range real {
				b[k] = slices.Clone(v)
			}
			tc.change(b)
			got := checkLinked(b)
			for _, p := range got {
				if strings.Contains(p, tc.want) {
					return
				}
			}
			t.Errorf("no problem containing %q; got %q", tc.want, got)
		})
	}
}
