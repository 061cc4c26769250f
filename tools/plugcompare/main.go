// Command plugcompare puts the lab's two guest plugging modes side by side
// with the second reference of the methodology
// (shared/seeds/ovs-internal-port-vs-veth.txt: the same iperf3 TCP test over
// OVS + VXLAN, 236 Mbit/s with veth vs 428 Mbit/s with an OVS internal port,
// 100-second runs).
//
//	plugcompare [-profile tcp-p1] [-o FILE.md] VETH_RESULTS.json INTERNAL_RESULTS.json
//
// Each results file is one lab run whose guests were plugged one way (flavor
// extra spec lab:plug). It prints a markdown table: delivered rate,
// retransmits and the per-interval spread of each mode, the ratio, and the
// reference's own figures; then each run's per-interval series, so a dip is
// seen, not averaged away. Whatever the lab measures is printed as measured.
package main

import (
	"errors"
	"flag"
	"fmt"
	"github.com/mosk-qa/asap2-e2e/tools/internal/cli"
	"io"
	"os"
	"strings"

	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// The reference's figures, as its author printed them (final sender lines of
// two 100-second iperf3 runs, Docker 1.12 containers on two hosts, OVS + VXLAN).
const (
	refVethMbps     = 236.0
	refInternalMbps = 428.0
	refSeconds      = 100
	refRetrVeth     = 6993
	refRetrInternal = 12010
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("plugcompare", flag.ContinueOnError)
	fs.SetOutput(stderr)
	profile := fs.String("profile", "tcp-p1", "profile ID compared in both files")
	out := fs.String("o", "", "also write the markdown to this file")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: plugcompare [-profile ID] [-o FILE.md] VETH_RESULTS.json INTERNAL_RESULTS.json")
		fs.PrintDefaults()
	}
	if done, code := cli.Parse(fs, args, stdout, stderr); done {
		return code
	}
	if fs.NArg() != 2 {
		fs.Usage()
		return 2
	}
	md, err := compare(fs.Arg(0), fs.Arg(1), *profile)
	if err != nil {
		fmt.Fprintf(stderr, "plugcompare: %v\n", err)
		return 1
	}
	fmt.Fprint(stdout, md)
	if *out != "" {
		if err := results.WriteFileAtomic(*out, []byte(md), 0o644); err != nil {
			fmt.Fprintf(stderr, "plugcompare: %v\n", err)
			return 1
		}
	}
	return 0
}

type side struct {
	label string
	file  string
	p     *results.ProfileResult
}

func compare(vethFile, internalFile, profile string) (string, error) {
	sides := []side{{label: "veth", file: vethFile}, {label: "OVS internal port", file: internalFile}}
	var errs []error
	for i := range sides {
		r, err := results.Load(sides[i].file)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for j := range r.Profiles {
			if r.Profiles[j].ID == profile {
				sides[i].p = &r.Profiles[j]
			}
		}
		switch {
		case sides[i].p == nil:
			errs = append(errs, fmt.Errorf("%s: no profile %s in run %s", sides[i].file, profile, r.RunID))
		case sides[i].p.Summary.Runs == 0:
			errs = append(errs, fmt.Errorf("%s: profile %s has no successful repeat", sides[i].file, profile))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return "", err
	}
	veth, internal := sides[0].p, sides[1].p

	var b strings.Builder
	fmt.Fprintf(&b, "## OVS internal port vs veth (%s)\n\n", veth.Name)
	b.WriteString("| guest plugged by | delivered (median of repeats) | retransmits | per-interval min / median / max | worst interval |\n")
	b.WriteString("|---|---|---|---|---|\n")
	for _, s := range sides {
		fmt.Fprintf(&b, "| lab: %s | %s | %.0f | %s | %s |\n", s.label, results.FormatBps(s.p.Summary.Delivered.Median),
			s.p.Summary.Retransmits.Median, spread(s.p.Summary.Intervals), worst(s.p.Summary.Intervals))
	}
	fmt.Fprintf(&b, "| reference: veth | %s | %d | — | 193 Mbit/s (96–97 s) |\n", results.FormatBps(refVethMbps*1e6), refRetrVeth)
	fmt.Fprintf(&b, "| reference: OVS internal port | %s | %d | — | 289 Mbit/s (88–89 s) |\n\n", results.FormatBps(refInternalMbps*1e6), refRetrInternal)
	ratio := internal.Summary.Delivered.Median / veth.Summary.Delivered.Median
	fmt.Fprintf(&b, "Internal port / veth: **%.2f×** in the lab, %.2f× in the reference (%d-second runs there, %.0f-second runs here).\n",
		ratio, refInternalMbps/refVethMbps, refSeconds, veth.DurationSeconds)
	switch {
	case ratio > 1.05:
		b.WriteString("The lab agrees in direction: the internal port is faster.\n")
	case ratio < 0.95:
		b.WriteString("The lab disagrees with the reference: veth is faster here.\n")
	default:
		b.WriteString("The lab shows no difference beyond 5 %.\n")
	}
	for _, s := range sides {
		fmt.Fprintf(&b, "\n### Per-interval series, %s\n\n| repeat | interval | rate |\n|---|---|---|\n", s.label)
		for _, r := range s.p.Runs {
			for _, iv := range r.Intervals {
				fmt.Fprintf(&b, "| %d | %.2f–%.2f s | %s |\n", r.Repeat, iv.Start, iv.End, results.FormatBps(iv.Bps))
			}
		}
	}
	return b.String(), nil
}

func spread(st *results.IntervalStats) string {
	if st == nil {
		return results.Dash
	}
	return fmt.Sprintf("%s / %s / %s", results.FormatBps(st.MinBps), results.FormatBps(st.MedianBps), results.FormatBps(st.MaxBps))
}

func worst(st *results.IntervalStats) string {
	if st == nil {
		return results.Dash
	}
	return fmt.Sprintf("%s (%.0f–%.0f s)", results.FormatBps(st.Worst.Bps), st.Worst.Start, st.Worst.End)
}
