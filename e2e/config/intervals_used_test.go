package config

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A config key that nothing reads is a defect (issue 14: intervals.command
// was declared, documented and bounded nothing). Every named interval must
// be read by production code: its Interval* constant appears in a non-test
// file outside this package (this package only declares and validates it).
func TestEveryIntervalIsReadByProductionCode(t *testing.T) {
	consts := map[string]string{} // constant name -> interval name
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "config.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, spec := range g.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, n := range vs.Names {
				if strings.HasPrefix(n.Name, "Interval") && i < len(vs.Values) {
					if lit, ok := vs.Values[i].(*ast.BasicLit); ok {
						consts[n.Name] = strings.Trim(lit.Value, `"`)
					}
				}
			}
		}
	}
	if len(consts) != len(DefaultIntervals) {
		t.Fatalf("found %d Interval* constants in config.go, DefaultIntervals has %d", len(consts), len(DefaultIntervals))
	}
	used := map[string][]string{}
	root := filepath.Join("..", "..")
	err = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata" || path == filepath.Join(root, "e2e", "config")) {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for c := range consts {
			if strings.Contains(string(src), "config."+c) {
				used[c] = append(used[c], path)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for c, name := range consts {
		if len(used[c]) == 0 {
			t.Errorf("intervals.%s (config.%s) is read by no production code: bound something with it or remove it", name, c)
		}
	}
}
