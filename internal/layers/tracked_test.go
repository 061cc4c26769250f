package layers

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// ignoredTracked lists the files git tracks in the work tree at dir that its
// .gitignore excludes: a built binary committed by mistake (two of 46 MB sat at
// the root once, listed in .gitignore all along).
func ignoredTracked(dir string) ([]string, error) {
	out, err := exec.Command("git", "-C", dir, "ls-files", "--cached", "--ignored", "--exclude-standard", "-z").Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			return nil, &gitError{err: err, stderr: strings.TrimSpace(string(ee.Stderr))}
		}
		return nil, err
	}
	var files []string
	for _, f := range strings.Split(string(out), "\x00") {
		if f != "" {
			files = append(files, f)
		}
	}
	return files, nil
}

type gitError struct {
	err    error
	stderr string
}

func (e *gitError) Error() string { return "git ls-files: " + e.err.Error() + ": " + e.stderr }

func TestNoIgnoredFileTracked(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git here: the check that no file .gitignore excludes is tracked did not run")
	}
	if _, err := os.Stat(filepath.Join(root, ".git")); err != nil {
		t.Skipf("%s is not a git work tree (a source archive?): the tracked-files check did not run", root)
	}
	files, err := ignoredTracked(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) > 0 {
		t.Errorf("%d file(s) tracked although .gitignore excludes them (git rm --cached them): %s", len(files), strings.Join(files, ", "))
	}
}

// The check finds a file committed despite .gitignore (git add -f), and
// passes a tree without one.
func TestIgnoredTrackedFindsForcedAdd(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git here")
	}
	dir := t.TempDir()
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.email=t@example.invalid", "-c", "user.name=t"}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
	}
	git("init", "-q")
	write := func(name, data string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(".gitignore", "/sweeper\n*.test\n")
	write("main.go", "package main\n")
	git("add", ".gitignore", "main.go")
	git("commit", "-qm", "clean")
	if files, err := ignoredTracked(dir); err != nil || len(files) != 0 {
		t.Fatalf("clean tree: %v, %v; want none", files, err)
	}
	write("sweeper", "\x7fELF")
	write("x.test", "\x7fELF")
	git("add", "-f", "sweeper", "x.test")
	git("commit", "-qm", "binaries")
	files, err := ignoredTracked(dir)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(files, ",") != "sweeper,x.test" {
		t.Errorf("got %v, want [sweeper x.test]", files)
	}
}
