// Command asap2-e2e is dist/'s entry point (make dist; the image's
// entrypoint): it runs a suite's compiled test binary by name with a config
// and an output directory, or one of the bundled tools by name, with no Go
// toolchain, module cache or network but the cloud's.
//
//	asap2-e2e run -config mosk.yaml -out /results perf      # suites/perf.test
//	asap2-e2e run -config mosk.yaml -out /tmp/x -dry-run perf  # the specs it would run, nothing built
//	asap2-e2e run -config fleet.yaml -out /results -labels offload fleet -- -ginkgo.grace-period=1m
//	asap2-e2e budget mosk.yaml                                # bin/budget, as go run ./tools/budget
//	asap2-e2e suites | tools | version
//
// run does what make e2e does: Ginkgo's timeout is the config's allowance
// (plan.RunBudget, as tools/budget -ginkgo-timeout) unless -timeout gives
// one, the config and output dir go to the suite as $ASAP2E2E_CONFIG and
// $ASAP2E2E_OUTPUT_DIR, the JUnit report into the output dir (one file per
// suite and fleet shard). The config is loaded first, so a bad one is
// refused with every problem before anything starts. The suite (or tool)
// then replaces this process (execve): it keeps the pid, so in a container
// it is PID 1 and a SIGTERM reaches Ginkgo itself, which interrupts the
// running spec and runs the teardown (deletes, leak check, reports).
//
// In a pod, $ASAP2E2E_TERMINATION_GRACE is the pod's
// terminationGracePeriodSeconds (deploy/ sets both): a config whose
// teardown needs longer after SIGTERM (plan.AfterSIGTERM) is refused before
// anything is built, since the kubelet's SIGKILL would cut its deletes.
//
// The dist directory is the one above this binary's bin/ ($ASAP2E2E_DIST
// overrides it).
//
// run takes -config, -out, -labels, -focus, -timeout, -junit, -dry-run and
// -print, then SUITE and, after --, flags for the suite. SuiteCommand builds
// a suite's command (JUnitName names its JUnit file per suite and fleet
// shard), then syscall.Exec runs it; `asap2-e2e TOOL ARGS` execs
// dist/bin/TOOL. tools/dist.sh (make dist) builds dist/.
//
// Exit code: the suite's or tool's; 2 usage or config error.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/config"
	"github.com/mosk-qa/asap2-e2e/e2e/fleet"
	"github.com/mosk-qa/asap2-e2e/e2e/plan"
	"github.com/mosk-qa/asap2-e2e/tools/internal/cli"
)

// EnvDist overrides the dist directory (default: the parent of this
// binary's directory).
const EnvDist = "ASAP2E2E_DIST"

// EnvTerminationGrace is the time the process has between SIGTERM and
// SIGKILL (a Go duration; deploy/'s pods: terminationGracePeriodSeconds).
const EnvTerminationGrace = "ASAP2E2E_TERMINATION_GRACE"

// Self is this command's name in dist/bin.
const Self = "asap2-e2e"

func main() {
	os.Exit(launch(os.Args[1:], os.Stdout, os.Stderr, syscall.Exec))
}

// execFunc replaces the process (syscall.Exec); tests pass a recorder.
type execFunc func(path string, argv, env []string) error

const usage = `usage:
  asap2-e2e run [flags] SUITE [-- SUITE-FLAGS...]   run a suite (asap2-e2e run -h)
  asap2-e2e suites                                 the suites of this dist
  asap2-e2e tools                                  the tools of this dist
  asap2-e2e version                                dist/VERSION
  asap2-e2e TOOL [ARGS...]                         run a tool (budget, report, sweeper, ...)
`

func launch(args []string, stdout, stderr io.Writer, exec execFunc) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	if cli.IsHelp(args[0]) {
		fmt.Fprint(stdout, usage)
		return 0
	}
	dist, err := distDir()
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", Self, err)
		return 2
	}
	switch args[0] {
	case "run":
		return runSuite(dist, args[1:], stdout, stderr, exec)
	case "suites":
		return list(dist, "suites", ".test", stdout, stderr)
	case "tools":
		return list(dist, "bin", "", stdout, stderr)
	case "version":
		data, err := os.ReadFile(filepath.Join(dist, "VERSION"))
		if err != nil {
			fmt.Fprintf(stderr, "%s: %v\n", Self, err)
			return 2
		}
		stdout.Write(data)
		return 0
	}
	tools, _ := names(dist, "bin", "")
	if !slices.Contains(tools, args[0]) {
		fmt.Fprintf(stderr, "%s: no command or tool %q (tools here: %s)\n%s", Self, args[0], strings.Join(tools, ", "), usage)
		return 2
	}
	path := filepath.Join(dist, "bin", args[0])
	return execOrSay(exec, path, append([]string{path}, args[1:]...), os.Environ(), stderr)
}

// distDir is $ASAP2E2E_DIST, else the directory above this binary's.
func distDir() (string, error) {
	if d := os.Getenv(EnvDist); d != "" {
		return filepath.Abs(d)
	}
	self, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("finding the dist directory: %w (set $%s)", err, EnvDist)
	}
	if self, err = filepath.EvalSymlinks(self); err != nil {
		return "", fmt.Errorf("finding the dist directory: %w (set $%s)", err, EnvDist)
	}
	return filepath.Dir(filepath.Dir(self)), nil
}

// names lists dist/sub's regular executable files ending in suffix, the
// suffix cut, sorted; bin/'s without this command.
func names(dist, sub, suffix string) ([]string, error) {
	entries, err := os.ReadDir(filepath.Join(dist, sub))
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		info, err := e.Info()
		if err != nil || !info.Mode().IsRegular() || info.Mode()&0o111 == 0 || !strings.HasSuffix(e.Name(), suffix) || e.Name() == Self {
			continue
		}
		out = append(out, strings.TrimSuffix(e.Name(), suffix))
	}
	slices.Sort(out)
	return out, nil
}

func list(dist, sub, suffix string, stdout, stderr io.Writer) int {
	n, err := names(dist, sub, suffix)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", Self, err)
		return 2
	}
	for _, s := range n {
		fmt.Fprintln(stdout, s)
	}
	return 0
}

// RunInput is what `run` was asked.
type RunInput struct {
	Dist, Suite, Config, Out, Labels, Focus, JUnit string
	Timeout                                        time.Duration // 0: the config's allowance
	DryRun                                         bool
	Extra                                          []string // after --, to the suite binary as they are
}

// Command is the suite's process: its binary, arguments and environment.
type Command struct {
	Path string
	Argv []string
	Env  []string // what run adds to its own environment
}

// SuiteCommand is the process of a suite run (pure but for reading and
// validating the config and finding the binary): what make e2e would run,
// as a compiled test binary's flags (-ginkgo.*).
func SuiteCommand(in RunInput, getenv func(string) string) (Command, error) {
	path := filepath.Join(in.Dist, "suites", in.Suite+".test")
	if st, err := os.Stat(path); err != nil || !st.Mode().IsRegular() {
		have, _ := names(in.Dist, "suites", ".test")
		return Command{}, fmt.Errorf("no suite %q in %s (suites here: %s)", in.Suite, filepath.Join(in.Dist, "suites"), strings.Join(have, ", "))
	}
	if in.Config == "" {
		in.Config = getenv(config.EnvConfig)
	}
	if in.Config == "" {
		return Command{}, fmt.Errorf("no config: give -config FILE or $%s", config.EnvConfig)
	}
	cfgPath, err := filepath.Abs(in.Config)
	if err != nil {
		return Command{}, err
	}
	cfg, err := config.Load(cfgPath, config.WithGetenv(getenv))
	if err != nil {
		return Command{}, err
	}
	if g := getenv(EnvTerminationGrace); g != "" {
		grace, err := time.ParseDuration(g)
		if err != nil {
			return Command{}, fmt.Errorf("$%s must be a duration (the pod's terminationGracePeriodSeconds, e.g. 600s), got %q", EnvTerminationGrace, g)
		}
		if need, rule := plan.AfterSIGTERM(cfg); need > grace {
			return Command{}, fmt.Errorf("%s: a SIGTERM's teardown may take %s (%s), but $%s gives %s before SIGKILL: raise the pod's terminationGracePeriodSeconds to %d or more",
				cfgPath, need, rule, EnvTerminationGrace, grace, int(need.Seconds()))
		}
	}
	timeout := in.Timeout
	if timeout == 0 {
		timeout = plan.RunBudget(cfg).GinkgoTimeout()
	}
	c := Command{Path: path, Env: []string{config.EnvConfig + "=" + cfgPath}}
	out := in.Out
	if out == "" {
		out = cfg.Run.OutputDir
	} else {
		if out, err = filepath.Abs(out); err != nil {
			return Command{}, err
		}
		c.Env = append(c.Env, config.EnvOutputDir+"="+out)
	}
	junit := in.JUnit
	if junit == "" {
		junit = filepath.Join(out, JUnitName(in.Suite, cfg))
	}
	if junit, err = filepath.Abs(junit); err != nil {
		return Command{}, err
	}
	c.Argv = []string{path, "-ginkgo.v", "-ginkgo.timeout=" + timeout.String(), "-ginkgo.junit-report=" + junit}
	if in.Labels != "" {
		c.Argv = append(c.Argv, "-ginkgo.label-filter="+in.Labels)
	}
	if in.Focus != "" {
		c.Argv = append(c.Argv, "-ginkgo.focus="+in.Focus)
	}
	if in.DryRun {
		c.Argv = append(c.Argv, "-ginkgo.dry-run")
	}
	c.Argv = append(c.Argv, in.Extra...)
	return c, nil
}

// JUnitName is the JUnit file of a suite's run: one per suite, and per
// shard of a sharded fleet (the shards of an Indexed Job share the output
// volume).
func JUnitName(suite string, cfg *config.Config) string {
	if cfg.Fleet != nil {
		if sh, err := fleet.ParseShard(cfg.Fleet.Shard); err == nil && sh.Count > 1 {
			return fmt.Sprintf("junit-%s-shard-%d-of-%d.xml", suite, sh.Index, sh.Count)
		}
	}
	return "junit-" + suite + ".xml"
}

func runSuite(dist string, args []string, stdout, stderr io.Writer, exec execFunc) int {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	in := RunInput{Dist: dist}
	fs.StringVar(&in.Config, "config", "", "the harness config file (default $"+config.EnvConfig+")")
	fs.StringVar(&in.Out, "out", "", "the output directory: run.output_dir ($"+config.EnvOutputDir+") and the JUnit report (default the config's run.output_dir)")
	fs.StringVar(&in.Labels, "labels", "", "Ginkgo's label filter, as make e2e LABELS=")
	fs.StringVar(&in.Focus, "focus", "", "Ginkgo's focus regexp, as make e2e FOCUS=")
	fs.StringVar(&in.JUnit, "junit", "", "the JUnit report (default OUT/junit-SUITE.xml, a fleet shard's OUT/junit-SUITE-shard-I-of-N.xml)")
	fs.DurationVar(&in.Timeout, "timeout", 0, "Ginkgo's timeout (default the config's allowance, as tools/budget -ginkgo-timeout)")
	fs.BoolVar(&in.DryRun, "dry-run", false, "list the specs the run would run (Ginkgo's dry run): nothing is built, no cloud is called")
	printOnly := fs.Bool("print", false, "print the command and the environment it adds, and run nothing")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: asap2-e2e run [flags] SUITE [-- SUITE-FLAGS...]")
		fs.PrintDefaults()
	}
	if done, code := cli.Parse(fs, args, stdout, stderr); done {
		return code
	}
	rest := fs.Args()
	if len(rest) == 0 || strings.HasPrefix(rest[0], "-") {
		fmt.Fprintln(stderr, "asap2-e2e run: want a suite name (asap2-e2e suites lists them)")
		fs.Usage()
		return 2
	}
	in.Suite, rest = rest[0], rest[1:]
	if len(rest) > 0 {
		if rest[0] != "--" {
			fmt.Fprintf(stderr, "asap2-e2e run: flags go before the suite name; suite flags after --, got %q\n", rest)
			return 2
		}
		in.Extra = rest[1:]
	}
	c, err := SuiteCommand(in, os.Getenv)
	if err != nil {
		fmt.Fprintf(stderr, "asap2-e2e run: %v\n", err)
		return 2
	}
	if *printOnly {
		for _, e := range c.Env {
			fmt.Fprintln(stdout, e)
		}
		fmt.Fprintln(stdout, strings.Join(c.Argv, " "))
		return 0
	}
	for _, e := range c.Env {
		if k, _, _ := strings.Cut(e, "="); k == config.EnvOutputDir {
			if err := os.MkdirAll(strings.TrimPrefix(e, k+"="), 0o755); err != nil {
				fmt.Fprintf(stderr, "asap2-e2e run: %v\n", err)
				return 2
			}
		}
	}
	return execOrSay(exec, c.Path, c.Argv, withEnv(os.Environ(), c.Env), stderr)
}

// withEnv is base with each of add set (replacing the same name's value).
func withEnv(base, add []string) []string {
	out := make([]string, 0, len(base)+len(add))
	set := map[string]bool{}
	for _, e := range add {
		k, _, _ := strings.Cut(e, "=")
		set[k] = true
	}
	for _, e := range base {
		if k, _, _ := strings.Cut(e, "="); !set[k] {
			out = append(out, e)
		}
	}
	return append(out, add...)
}

func execOrSay(exec execFunc, path string, argv, env []string, stderr io.Writer) int {
	err := exec(path, argv, env)
	if errors.Is(err, errRecorded) {
		return 0
	}
	fmt.Fprintf(stderr, "%s: running %s: %v\n", Self, path, err)
	return 2
}

// errRecorded is what a test's execFunc returns: the exec was recorded, not
// done (syscall.Exec returns only on failure).
var errRecorded = errors.New("recorded")
