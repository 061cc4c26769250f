package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mosk-qa/asap2-e2e/e2e/config"
	"github.com/mosk-qa/asap2-e2e/e2e/plan"
	"github.com/mosk-qa/asap2-e2e/tools/internal/cli/clitest"
)

// exampleConfig writes examples/mosk.yaml (with extra appended, each
// replace's old text by its new) into a
// temporary HOME that has the ~/.ssh files it names (a throw-away key),
// and returns the config's path.
func exampleConfig(t *testing.T, extra string, replace ...string) string {
	t.Helper()
	home := t.TempDir()
	t.Setenv("HOME", home)
	dir := filepath.Join(home, ".ssh")
	line := clitest.SSHKey(t, dir, "id_ed25519")
	if err := os.WriteFile(filepath.Join(dir, "known_hosts"), []byte("198.18.20.10 "+line), 0o600); err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("../../e2e/config/examples/mosk.yaml")
	if err != nil {
		t.Fatal(err)
	}
	text := strings.NewReplacer(replace...).Replace(string(src))
	if len(replace) > 0 && text == string(src) {
		t.Fatalf("examples/mosk.yaml has none of %q", replace)
	}
	path := filepath.Join(home, "mosk.yaml")
	if err := os.WriteFile(path, []byte(text+extra), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// fakeDist is a dist directory with the given executables (names under
// dist/, e.g. "suites/perf.test", "bin/budget").
func fakeDist(t *testing.T, files ...string) string {
	t.Helper()
	dist := t.TempDir()
	for _, f := range files {
		p := filepath.Join(dist, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("#!/bin/false\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dist
}

func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

// A suite run is make e2e's: the config's allowance as Ginkgo's timeout,
// the config and output dir in the environment, the JUnit report in the
// output dir, labels, focus and the dry run as the test binary's flags.
func TestSuiteCommandIsMakeE2E(t *testing.T) {
	cfgPath := exampleConfig(t, "")
	dist := fakeDist(t, "suites/perf.test", "suites/smoke.test")
	out := filepath.Join(t.TempDir(), "results")
	c, err := SuiteCommand(RunInput{Dist: dist, Suite: "perf", Config: cfgPath, Out: out, Labels: "offload || tcp-p1", Focus: "TCP", DryRun: true,
		Extra: []string{"-ginkgo.grace-period=1m"}}, env(nil))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(cfgPath, config.WithGetenv(env(nil)))
	if err != nil {
		t.Fatal(err)
	}
	timeout := plan.RunBudget(cfg).GinkgoTimeout()
	if timeout <= 0 {
		t.Fatalf("the example's allowance is %s", timeout)
	}
	want := []string{filepath.Join(dist, "suites", "perf.test"), "-ginkgo.v", "-ginkgo.timeout=" + timeout.String(),
		"-ginkgo.junit-report=" + filepath.Join(out, "junit-perf.xml"), "-ginkgo.label-filter=offload || tcp-p1", "-ginkgo.focus=TCP",
		"-ginkgo.dry-run", "-ginkgo.grace-period=1m"}
	if c.Path != want[0] || !slices.Equal(c.Argv, want) {
		t.Errorf("command\n got %q\nwant %q", c.Argv, want)
	}
	wantEnv := []string{"ASAP2E2E_CONFIG=" + cfgPath, "ASAP2E2E_OUTPUT_DIR=" + out}
	if !slices.Equal(c.Env, wantEnv) {
		t.Errorf("environment %q, want %q", c.Env, wantEnv)
	}

	// -timeout wins over the allowance; without -out the config's
	// run.output_dir takes the JUnit report and nothing overrides it.
	c, err = SuiteCommand(RunInput{Dist: dist, Suite: "smoke", Config: cfgPath, Timeout: 7 * 60e9}, env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(c.Argv, "-ginkgo.timeout=7m0s") || !slices.Contains(c.Argv, "-ginkgo.junit-report="+filepath.Join(cfg.Run.OutputDir, "junit-smoke.xml")) {
		t.Errorf("with -timeout 7m and no -out: %q", c.Argv)
	}
	if len(c.Env) != 1 {
		t.Errorf("without -out only the config is set, got %q", c.Env)
	}
}

// An Indexed Job's pod is a shard: the config sees $JOB_COMPLETION_INDEX
// and $ASAP2E2E_FLEET_SHARDS, the shard's JUnit file is its own (the
// shards share the output volume), and the allowance is the shard's.
func TestSuiteCommandOfAShard(t *testing.T) {
	cfgPath := exampleConfig(t, "\nfleet:\n  nodes: [cmp-asap2-01.mosk.lab, cmp-asap2-02.mosk.lab]\n  pairs: ring\n",
		"  hosts:\n    - cmp-asap2-01.mosk.lab\n    - cmp-asap2-02.mosk.lab\n", "") // a fleet pins its own pairs
	dist := fakeDist(t, "suites/fleet.test")
	out := t.TempDir()
	vars := map[string]string{config.EnvJobIndex: "1", config.EnvFleetShards: "2", config.EnvRunGroup: "nightly-42"}
	c, err := SuiteCommand(RunInput{Dist: dist, Suite: "fleet", Config: cfgPath, Out: out}, env(vars))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(c.Argv, "-ginkgo.junit-report="+filepath.Join(out, "junit-fleet-shard-2-of-2.xml")) {
		t.Errorf("shard 2/2's command %q has not its own JUnit file", c.Argv)
	}
	whole, err := SuiteCommand(RunInput{Dist: dist, Suite: "fleet", Config: cfgPath, Out: out}, env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(whole.Argv, "-ginkgo.junit-report="+filepath.Join(out, "junit-fleet.xml")) {
		t.Errorf("the unsharded fleet's command %q", whole.Argv)
	}
	if slices.Equal(c.Argv, whole.Argv) {
		t.Errorf("a shard of 2 pairs' run has the whole fleet's command: %q", c.Argv)
	}
}

func TestSuiteCommandRefuses(t *testing.T) {
	cfgPath := exampleConfig(t, "")
	dist := fakeDist(t, "suites/perf.test", "suites/smoke.test")
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("run:\n  no_such_key: 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		in   RunInput
		vars map[string]string
		want string
	}{
		{"unknown suite", RunInput{Dist: dist, Suite: "perff", Config: cfgPath}, nil, `no suite "perff" in ` + filepath.Join(dist, "suites") + " (suites here: perf, smoke)"},
		{"no config", RunInput{Dist: dist, Suite: "perf"}, nil, "no config: give -config FILE or $ASAP2E2E_CONFIG"},
		{"a bad config", RunInput{Dist: dist, Suite: "perf", Config: bad}, nil, "run.no_such_key"},
		{"too short a grace", RunInput{Dist: dist, Suite: "perf", Config: cfgPath}, map[string]string{EnvTerminationGrace: "300s"},
			"a SIGTERM's teardown may take 8m30s (3 × Ginkgo's grace period 30s (the interrupted node, the topology evidence, the reports) + tear down 7m0s (intervals delete + api_retry (leak check))), but $ASAP2E2E_TERMINATION_GRACE gives 5m0s before SIGKILL: raise the pod's terminationGracePeriodSeconds to 510 or more"},
		{"a grace that is no duration", RunInput{Dist: dist, Suite: "perf", Config: cfgPath}, map[string]string{EnvTerminationGrace: "600"}, "must be a duration"},
		{"a bad shard", RunInput{Dist: dist, Suite: "perf", Config: cfgPath}, map[string]string{config.EnvFleetShards: "2", config.EnvJobIndex: "0"}, "needs a fleet section"},
	} {
		_, err := SuiteCommand(c.in, env(c.vars))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one with %q", c.name, err, c.want)
		}
	}
	// $ASAP2E2E_CONFIG stands for -config; a grace as long as the
	// teardown's is enough.
	if _, err := SuiteCommand(RunInput{Dist: dist, Suite: "perf"}, env(map[string]string{config.EnvConfig: cfgPath, EnvTerminationGrace: "510s"})); err != nil {
		t.Errorf("with $ASAP2E2E_CONFIG and a grace of 510s: %v", err)
	}
}

// recorder is an execFunc that keeps what it was asked to run.
type recorder struct {
	path       string
	argv, envs []string
}

func (r *recorder) exec(path string, argv, env []string) error {
	r.path, r.argv, r.envs = path, argv, env
	return errRecorded
}

func TestLaunchRunsSuitesAndTools(t *testing.T) {
	cfgPath := exampleConfig(t, "")
	dist := fakeDist(t, "suites/smoke.test", "bin/budget", "bin/report", "bin/asap2-e2e")
	if err := os.WriteFile(filepath.Join(dist, "VERSION"), []byte("version=v0.0.0-20261205000000-abcdefabcdef\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv(EnvDist, dist)
	t.Setenv(config.EnvOutputDir, "/somewhere/else")
	out := filepath.Join(t.TempDir(), "made", "here")

	var r recorder
	var stdout, stderr bytes.Buffer
	if code := launch([]string{"run", "-config", cfgPath, "-out", out, "smoke"}, &stdout, &stderr, r.exec); code != 0 {
		t.Fatalf("run: exit %d, %s", code, stderr.String())
	}
	if r.path != filepath.Join(dist, "suites", "smoke.test") {
		t.Errorf("run executed %q", r.path)
	}
	if st, err := os.Stat(out); err != nil || !st.IsDir() {
		t.Errorf("run did not make the output dir: %v", err)
	}
	if n := slices.Index(r.envs, config.EnvOutputDir+"="+out); n < 0 || slices.Contains(r.envs, config.EnvOutputDir+"=/somewhere/else") {
		t.Errorf("the suite's environment does not replace $%s with -out: %q", config.EnvOutputDir, r.envs)
	}

	r = recorder{}
	if code := launch([]string{"budget", "-ginkgo-timeout", cfgPath}, &stdout, &stderr, r.exec); code != 0 {
		t.Fatalf("budget: exit %d, %s", code, stderr.String())
	}
	if r.path != filepath.Join(dist, "bin", "budget") || !slices.Equal(r.argv, []string{r.path, "-ginkgo-timeout", cfgPath}) {
		t.Errorf("a tool ran as %q %q", r.path, r.argv)
	}

	for _, c := range []struct {
		args       []string
		code       int
		out, inErr string
	}{
		{[]string{"suites"}, 0, "smoke\n", ""},
		{[]string{"tools"}, 0, "budget\nreport\n", ""},
		{[]string{"version"}, 0, "version=v0.0.0-20261205000000-abcdefabcdef\n", ""},
		{[]string{"sweeper"}, 2, "", `no command or tool "sweeper" (tools here: budget, report)`},
		{[]string{"run", "-config", cfgPath}, 2, "", "want a suite name"},
		{[]string{"run", "-config", cfgPath, "smoke", "-labels", "x"}, 2, "", "flags go before the suite name"},
		{[]string{"run", "-print", "-config", cfgPath, "-out", out, "smoke", "--", "-ginkgo.grace-period=1m"}, 0,
			"ASAP2E2E_CONFIG=" + cfgPath + "\nASAP2E2E_OUTPUT_DIR=" + out + "\n" + filepath.Join(dist, "suites", "smoke.test") + " -ginkgo.v", ""},
	} {
		stdout.Reset()
		stderr.Reset()
		r = recorder{}
		code := launch(c.args, &stdout, &stderr, r.exec)
		if code != c.code || !strings.HasPrefix(stdout.String(), c.out) || !strings.Contains(stderr.String(), c.inErr) {
			t.Errorf("asap2-e2e %q: exit %d, stdout %q, stderr %q; want exit %d, stdout starting %q, stderr with %q",
				c.args, code, stdout.String(), stderr.String(), c.code, c.out, c.inErr)
		}
		if r.path != "" {
			t.Errorf("asap2-e2e %q executed %s", c.args, r.path)
		}
	}
}

func TestFlagConvention(t *testing.T) {
	t.Setenv(EnvDist, fakeDist(t, "bin/budget"))
	clitest.HelpConvention(t, func(args []string, stdout, stderr io.Writer) int {
		return launch(args, stdout, stderr, (&recorder{}).exec)
	})
	clitest.HelpConvention(t, func(args []string, stdout, stderr io.Writer) int {
		return launch(append([]string{"run"}, args...), stdout, stderr, (&recorder{}).exec)
	})
}
