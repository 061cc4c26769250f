package layers

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// layoutPaths are the paths README.md's "## Layout" table names in its first column.
func layoutPaths(readme string) ([]string, bool) {
	_, section, ok := strings.Cut(readme, "\n## Layout\n")
	if !ok {
		return nil, false
	}
	if next := strings.Index(section, "\n## "); next >= 0 {
		section = section[:next]
	}
	code := regexp.MustCompile("`([^`]+)`")
	var paths []string
	for _, line := range strings.Split(section, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 3 || !strings.HasPrefix(line, "|") {
			continue
		}
		for _, m := range code.FindAllStringSubmatch(cells[1], -1) {
			paths = append(paths, strings.TrimSuffix(m[1], "/"))
		}
	}
	return paths, true
}

// TestReadmeLayout: README.md's layout table names every package of the module, and only
// directories that exist.
func TestReadmeLayout(t *testing.T) {
	path := filepath.Join(root, "README.md")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	paths, ok := layoutPaths(string(data))
	if !ok {
		t.Fatalf("%s: no \"## Layout\" section", path)
	}
	for _, p := range newGraph(goList(t)).pkgs {
		if !slices.Contains(paths, p) {
			t.Errorf("%s: the layout table has no row for the package %s", path, p)
		}
	}
	for _, p := range paths {
		if st, err := os.Stat(filepath.Join(root, p)); err != nil || !st.IsDir() {
			t.Errorf("%s: the layout table names %s, which is no directory of the tree", path, p)
		}
	}
}

// TestReadmeLayoutCatch: a package missing from the table is found.
func TestReadmeLayoutCatch(t *testing.T) {
	readme := "# x\n\n## Layout\n\n| path | what |\n|---|---|\n| `e2e/config` | config |\n| `tools/a`, `tools/b` | commands |\n| `lab/` | the lab |\n\n## Next\n| `e2e/other` | not the table |\n"
	got, ok := layoutPaths(readme)
	if !ok || !slices.Equal(got, []string{"e2e/config", "tools/a", "tools/b", "lab"}) {
		t.Fatalf("layoutPaths = %q, %v", got, ok)
	}
}
