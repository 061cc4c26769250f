package main

import (
	"bufio"
	"bytes"
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// goCaches is the toolchain's caches, read before any test moves HOME
// (exampleConfig does, and under another HOME go would build from nothing
// and look for modules in an empty cache).
var goCaches []string

func TestMain(m *testing.M) {
	out, err := exec.Command("go", "env", "GOCACHE", "GOMODCACHE", "GOPATH").Output()
	if err != nil {
		panic(fmt.Sprintf("go env: %v", err))
	}
	if v := strings.Split(strings.TrimSpace(string(out)), "\n"); len(v) == 3 {
		goCaches = []string{"GOCACHE=" + v[0], "GOMODCACHE=" + v[1], "GOPATH=" + v[2]}
	}
	os.Exit(m.Run())
}

// goBuild builds pkg into out with the test's own toolchain.
func goBuild(t *testing.T, out, pkg string) {
	t.Helper()
	cmd := exec.Command("go", "build", "-o", out, pkg)
	cmd.Env = append(append(os.Environ(), goCaches...), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, b)
	}
}

// The launcher becomes the suite (execve): the suite has the launcher's
// pid, so in a container it is PID 1, and the SIGTERM the kubelet sends it
// reaches the suite's own handler (Ginkgo's, which runs the teardown) with
// the flags and environment run gave it.
func TestRunExecsTheSuiteWhichGetsSIGTERM(t *testing.T) {
	cfgPath := exampleConfig(t, "")
	dist := t.TempDir()
	goBuild(t, filepath.Join(dist, "bin", Self), ".")
	goBuild(t, filepath.Join(dist, "suites", "fake.test"), "./testdata/fakesuite")
	out := filepath.Join(t.TempDir(), "out")

	cmd := exec.Command(filepath.Join(dist, "bin", Self), "run", "-config", cfgPath, "-out", out, "-labels", "smoke", "fake")
	cmd.Env = append(os.Environ(), EnvDist+"=") // found from the binary's own path
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("the suite said nothing: %v; stderr %s", err, stderr.String())
	}
	pid, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "pid ")))
	if err != nil || pid != cmd.Process.Pid {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("the suite runs as %q, the launcher was pid %d: not the same process", line, cmd.Process.Pid)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("after SIGTERM: %v; stderr %s", err, stderr.String())
		}
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatal("the suite did not end within 30s of SIGTERM")
	}
	note, err := os.ReadFile(filepath.Join(out, "terminated"))
	if err != nil {
		t.Fatalf("the suite did not see SIGTERM in $ASAP2E2E_OUTPUT_DIR: %v", err)
	}
	for _, want := range []string{"terminated\n", "-ginkgo.label-filter=smoke\n", "-ginkgo.junit-report=" + filepath.Join(out, "junit-fake.xml") + "\n"} {
		if !strings.Contains(string(note), want) {
			t.Errorf("the suite's note %q has no %q", note, want)
		}
	}
}

// make dist's output runs with no Go toolchain, no module or build cache
// and no network: a PATH without go, GOPATH, GOMODCACHE and GOCACHE empty,
// GOPROXY off. tools/dist.sh builds a small dist here (the smoke suite and
// tools/budget: the same script, flags and linking as make dist's); every
// binary is static and carries the version dist/VERSION names.
func TestDistRunsWithoutGoToolchain(t *testing.T) {
	cfgPath := exampleConfig(t, "")
	dist := filepath.Join(t.TempDir(), "dist")
	build := exec.Command("bash", "../dist.sh", dist)
	build.Env = append(append(os.Environ(), goCaches...), "DIST_SUITES=smoke", "DIST_TOOLS=budget")
	if b, err := build.CombinedOutput(); err != nil {
		t.Fatalf("tools/dist.sh: %v\n%s", err, b)
	}

	version := map[string]string{}
	data, err := os.ReadFile(filepath.Join(dist, "VERSION"))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		k, v, _ := strings.Cut(l, "=")
		version[k] = v
	}
	if version["goos"] != "linux" || version["version"] == "" || version["revision"] == "" {
		t.Errorf("dist/VERSION: %q", data)
	}
	for _, f := range []string{"bin/asap2-e2e", "bin/budget", "suites/smoke.test"} {
		assertStatic(t, filepath.Join(dist, f))
		b, err := os.ReadFile(filepath.Join(dist, f))
		if err != nil {
			t.Fatal(err)
		}
		// The suites link e2e/buildinfo (the harness records the build in
		// results.json); the launcher and budget do not, so -X has nothing
		// to set in them.
		if !strings.HasPrefix(f, "suites/") {
			continue
		}
		for _, k := range []string{"revision", "version"} {
			if version[k] != "unknown" && !bytes.Contains(b, []byte(version[k])) {
				t.Errorf("%s does not carry the %s %s (-ldflags -X)", f, k, version[k])
			}
		}
	}
	if _, err := os.Stat(filepath.Join(dist, "examples", "mosk.yaml")); err != nil {
		t.Errorf("dist has no examples: %v", err)
	}

	empty := func() string { return t.TempDir() }
	bare := []string{"PATH=" + empty(), "HOME=" + os.Getenv("HOME"), "GOPATH=" + empty(), "GOMODCACHE=" + empty(),
		"GOCACHE=" + empty(), "GOPROXY=off", "GOTOOLCHAIN=local", "GOFLAGS=-mod=mod"}
	if _, err := exec.LookPath("go"); err != nil {
		t.Fatal("no go on the test's own PATH to hide")
	}
	run := func(args ...string) (string, error) {
		cmd := exec.Command(filepath.Join(dist, "bin", Self), args...)
		cmd.Env = bare
		b, err := cmd.CombinedOutput()
		return string(b), err
	}
	if out, err := run("version"); err != nil || !strings.Contains(out, "version="+version["version"]) {
		t.Errorf("asap2-e2e version: %v\n%s", err, out)
	}
	if out, err := run("budget", cfgPath); err != nil || !strings.Contains(out, "total") || !strings.Contains(out, "tear down") {
		t.Errorf("asap2-e2e budget %s: %v\n%s", cfgPath, err, out)
	}
	results := filepath.Join(t.TempDir(), "results")
	out, err := run("run", "-dry-run", "-config", cfgPath, "-out", results, "smoke")
	if err != nil || !strings.Contains(out, "puts two guests on different hypervisors") || !strings.Contains(out, "Ran 1 of 1 Specs") {
		t.Fatalf("asap2-e2e run -dry-run smoke: %v\n%s", err, out)
	}
	junit, err := os.ReadFile(filepath.Join(results, "junit-smoke.xml"))
	if err != nil || !bytes.Contains(junit, []byte("puts two guests on different hypervisors")) {
		t.Errorf("the dry run's JUnit report: %v\n%s", err, junit)
	}
}

// assertStatic fails unless path is an ELF executable with no interpreter
// and no shared library: it runs on a scratch image.
func assertStatic(t *testing.T, path string) {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Errorf("%s: %v", path, err)
		return
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			t.Errorf("%s is dynamically linked (program header %s)", path, p.Type)
		}
	}
	if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
		t.Errorf("%s needs shared libraries %q", path, libs)
	}
}
