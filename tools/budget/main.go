// Command budget prints the wall-time allowance of a run of the
// performance suite under a harness config, step by step
// (plan.RunBudget: the cloud's waits at their bounds, every measured and
// evidence window at its length, one step at its bound, a margin).
// `make e2e` gives Ginkgo the total as --timeout. It also prints how much
// a run may write into run.output_dir (plan.ArtifactsEstimate), the room
// the harness checks for at start.
//
//	go run ./tools/budget lab/harness.yaml            # the table
//	go run ./tools/budget -ginkgo-timeout mosk.yaml   # e.g. "1h52m0s"
//
// Exit code: 0, 2 usage or config error.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"text/tabwriter"

	"github.com/mosk-qa/asap2-e2e/e2e/config"
	"github.com/mosk-qa/asap2-e2e/e2e/plan"
	"github.com/mosk-qa/asap2-e2e/tools/internal/cli"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("budget", flag.ContinueOnError)
	fs.SetOutput(stderr)
	timeoutOnly := fs.Bool("ginkgo-timeout", false, "print only the total, rounded up to a minute, in Go's duration syntax (for ginkgo --timeout)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: budget [-ginkgo-timeout] CONFIG")
		fs.PrintDefaults()
	}
	if done, code := cli.Parse(fs, args, stdout, stderr); done {
		return code
	}
	if fs.NArg() != 1 {
		fmt.Fprintln(stderr, "budget: want exactly one harness config file")
		fs.Usage()
		return 2
	}
	cfg, err := config.Load(fs.Arg(0))
	if err != nil {
		fmt.Fprintf(stderr, "budget: %v\n", err)
		return 2
	}
	b := plan.RunBudget(cfg)
	total := b.GinkgoTimeout()
	if *timeoutOnly {
		fmt.Fprintln(stdout, total)
		return 0
	}
	suite := "the performance suite"
	if cfg.Fleet != nil {
		suite = "the fleet suite"
	}
	fmt.Fprintf(stdout, "Allowance of a run of %s under %s (plan.RunBudget):\n\n", suite, cfg.File)
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	for _, l := range b.Lines {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", l.Step, l.Bound, l.Rule)
	}
	fmt.Fprintf(tw, "total\t%s\tmake e2e: ginkgo --timeout=%s\n", b.Total, total)
	tw.Flush()
	need, rule := plan.ArtifactsEstimate(cfg)
	fmt.Fprintf(stdout, "\nArtifacts: about %s in run.output_dir (%s); the harness refuses to start with less free.\n", plan.MiB(need), rule)
	return 0
}
