// Command report renders harness results and gates releases on them.
//
//	go run ./tools/report render [flags] RESULTS.json [RESULTS.json ...]
//	go run ./tools/report compare [flags] ACCEPTED[,ACCEPTED2] CANDIDATE[,CANDIDATE2]
//	go run ./tools/report sgcost [-o FILE.md] OFF.json ON.json
//
// render writes <out>/<name>.md (the methodology's tables, evidence,
// repeats, thresholds, environment, timing) and <out>/<name>.html (the same
// with inline SVG charts; self-contained, works offline). Give one asap2 and
// one baseline results file to get the "approximate gain" column.
//
// compare prints the per-profile delta table of the candidate against the
// accepted run(s) and the environment differences, and exits 1 when any
// profile regressed beyond tolerance. It refuses (exit 2) runs measured in
// different port-security modes unless -across-modes is given.
//
// merge combines the shard results files of one fleet run (fleet.Merge:
// same run group — each shard with its own run id — config, mode and
// outlier rule, no shard twice, no node in two shards; each problem named)
// into one results file, one fleet report and one fleet verdict that names
// nodes and each shard not measured; it exits 1 when the fleet fails
// (a shard missing fails it).
// render given several shard files merges them the same way first.
//
// sgcost puts one build's runs with port security off and on side by side,
// profile by profile, with the cost of security groups as a ratio (rate,
// loss, retransmits, host CPU); it refuses files of the wrong modes,
// different paths or builds, naming each problem.
//
// Exit codes: 0 success / gate passed, 1 regression or failed threshold
// (with -fail-on-threshold), 2 usage or input error, or runs of different
// port-security modes.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"github.com/mosk-qa/asap2-e2e/tools/internal/cli"
	"io"
	"os"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/mosk-qa/asap2-e2e/e2e/fleet"
	"github.com/mosk-qa/asap2-e2e/e2e/report"
	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

const usage = `usage:
  report render  [-o DIR] [-name NAME] [-title TEXT] [-thresholds FILE] [-seed-layout] [-fail-on-threshold] RESULTS.json...
  report merge   [-o DIR] [-name NAME] [-title TEXT] [-results FILE.json] SHARD_RESULTS.json...
  report sgcost  [-o FILE.md] OFF_RESULTS.json ON_RESULTS.json
  report compare [-tolerance PCT] [-loss-tolerance POINTS] [-latency-tolerance PCT] [-ignore-loss] [-allow-missing] [-ignore-evidence] [-cpu-tolerance PCT] [-ignore-cpu] [-across-modes] [-json FILE] ACCEPTED[,...] CANDIDATE[,...]
`

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "render":
		return render(args[1:], stdout, stderr)
	case "compare":
		return compare(args[1:], stdout, stderr)
	case "sgcost":
		return sgcost(args[1:], stdout, stderr)
	case "merge":
		return merge(args[1:], stdout, stderr)
	}
	if cli.IsHelp(args[0]) {
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "report: unknown subcommand %q\n%s", args[0], usage)
	return 2
}

func loadSet(paths []string) (*report.Set, error) {
	var rs []*results.Results
	for _, p := range paths {
		r, err := results.Load(p)
		if err != nil {
			return nil, err
		}
		rs = append(rs, r)
	}
	rs, err := mergeFleets(paths, rs)
	if err != nil {
		return nil, err
	}
	s, err := report.NewSet(rs...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", strings.Join(paths, ", "), err)
	}
	return s, nil
}

func render(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("render", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("o", "", "output directory (default: the first results file's directory)")
	name := fs.String("name", "report", "base name of the .md and .html files")
	title := fs.String("title", "", "document title")
	thresholds := fs.String("thresholds", "", "YAML file with a top-level `thresholds:` list (the harness config works); evaluated on the merged results")
	seed := fs.Bool("seed-layout", false, "markdown tables with exactly the seed's four columns (no Evidence column)")
	failOn := fs.Bool("fail-on-threshold", false, "exit 1 when a threshold fails")
	failOnFleet := fs.Bool("fail-on-fleet", false, "exit 1 when the fleet verdict fails (results with a fleet section)")
	fs.Usage = func() { fmt.Fprint(fs.Output(), usage); fs.PrintDefaults() }
	if done, code := cli.Parse(fs, args, stdout, stderr); done {
		return code
	}
	if fs.NArg() == 0 {
		fmt.Fprintf(stderr, "report render: no results file given\n%s", usage)
		return 2
	}
	s, err := loadSet(fs.Args())
	if err != nil {
		fmt.Fprintf(stderr, "report render: %v\n", err)
		return 2
	}
	opt := report.Options{Title: *title, SeedLayout: *seed}
	if *thresholds != "" {
		rules, err := loadRules(*thresholds)
		if err != nil {
			fmt.Fprintf(stderr, "report render: %v\n", err)
			return 2
		}
		opt.Thresholds = results.EvaluateThresholds(rules, s.Files...)
	}
	dir := *out
	if dir == "" {
		dir = filepath.Dir(fs.Arg(0))
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		fmt.Fprintf(stderr, "report render: %v\n", err)
		return 2
	}
	md, html, err := report.WriteFiles(dir, *name, s, opt)
	if err != nil {
		fmt.Fprintf(stderr, "report render: %v\n", err)
		return 2
	}
	fmt.Fprintf(stdout, "wrote %s\nwrote %s\n", md, html)
	failed := 0
	for _, t := range opt.Thresholds {
		if !t.Pass {
			failed++
			fmt.Fprintf(stdout, "threshold FAIL: %s: %s\n", t.Name, t.Reason)
		}
	}
	if failed > 0 && *failOn {
		return 1
	}
	if !printFleetVerdicts(stdout, s) && *failOnFleet {
		return 1
	}
	return 0
}

// loadRules reads the `thresholds:` list of a YAML file, ignoring other
// top-level keys (so the harness config can be given) but rejecting unknown
// keys inside a rule.
func loadRules(path string) ([]results.ThresholdRule, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("thresholds: %w", err)
	}
	var top map[string]yaml.Node
	if err := yaml.Unmarshal(data, &top); err != nil {
		return nil, fmt.Errorf("thresholds %s: %w", path, err)
	}
	node, ok := top["thresholds"]
	if !ok {
		return nil, fmt.Errorf("thresholds %s: no top-level \"thresholds:\" key", path)
	}
	raw, err := yaml.Marshal(&node)
	if err != nil {
		return nil, fmt.Errorf("thresholds %s: %w", path, err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	dec.KnownFields(true)
	var rules []results.ThresholdRule
	if err := dec.Decode(&rules); err != nil {
		return nil, fmt.Errorf("thresholds %s: thresholds: %w", path, err)
	}
	var problems []string
	for i, r := range rules {
		if err := results.ValidateRule(r); err != nil {
			problems = append(problems, fmt.Sprintf("thresholds[%d]: %v", i, err))
		}
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("thresholds %s: %s", path, strings.Join(problems, "; "))
	}
	return rules, nil
}

func compare(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("compare", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o report.CompareOptions
	fs.Float64Var(&o.TolerancePercent, "tolerance", 5, "allowed drop of the delivered median, percent")
	fs.Float64Var(&o.LossTolerancePoints, "loss-tolerance", 1, "allowed rise of the UDP loss median, percentage points")
	fs.Float64Var(&o.LatencyTolerancePercent, "latency-tolerance", 25, "allowed rise of a latency profile's p99 (first packet: its median), percent")
	fs.BoolVar(&o.IgnoreLoss, "ignore-loss", false, "do not gate on UDP loss")
	fs.BoolVar(&o.AllowMissing, "allow-missing", false, "a profile missing from the candidate is not a regression")
	fs.BoolVar(&o.IgnoreEvidence, "ignore-evidence", false, "an offload evidence downgrade is not a regression")
	fs.Float64Var(&o.CPUTolerancePercent, "cpu-tolerance", 25, "allowed rise of the host cores per 10 Gbit/s median, percent (when both runs have host CPU readings)")
	fs.BoolVar(&o.IgnoreCPU, "ignore-cpu", false, "do not gate on host CPU")
	fs.BoolVar(&o.AcrossModes, "across-modes", false, "compare runs of different port-security modes (security groups off vs on) on purpose: said at the top of the comparison instead of refused")
	jsonOut := fs.String("json", "", "also write the comparison as JSON to this file")
	fs.Usage = func() { fmt.Fprint(fs.Output(), usage); fs.PrintDefaults() }
	if done, code := cli.Parse(fs, args, stdout, stderr); done {
		return code
	}
	if fs.NArg() != 2 {
		fmt.Fprintf(stderr, "report compare: want ACCEPTED and CANDIDATE, got %d argument(s)\n%s", fs.NArg(), usage)
		return 2
	}
	if o.TolerancePercent < 0 || o.LossTolerancePoints < 0 || o.CPUTolerancePercent < 0 || o.LatencyTolerancePercent < 0 {
		fmt.Fprintf(stderr, "report compare: tolerances must be >= 0, got -tolerance %v -loss-tolerance %v -cpu-tolerance %v -latency-tolerance %v\n", o.TolerancePercent, o.LossTolerancePoints, o.CPUTolerancePercent, o.LatencyTolerancePercent)
		return 2
	}
	acc, err := loadSet(strings.Split(fs.Arg(0), ","))
	if err != nil {
		fmt.Fprintf(stderr, "report compare: accepted: %v\n", err)
		return 2
	}
	cand, err := loadSet(strings.Split(fs.Arg(1), ","))
	if err != nil {
		fmt.Fprintf(stderr, "report compare: candidate: %v\n", err)
		return 2
	}
	c := report.Compare(acc, cand, o)
	if c.Refused {
		fmt.Fprintf(stderr, "report compare: refused: the runs were measured in different port-security modes (%s); a delta between them is the cost of security groups, not a regression: compare runs of one mode, or pass -across-modes\n", strings.Join(c.ModeDifferences, "; "))
		return 2
	}
	fmt.Fprint(stdout, c.Markdown())
	if *jsonOut != "" {
		data, err := json.MarshalIndent(c, "", "  ")
		if err == nil {
			err = results.WriteFileAtomic(*jsonOut, append(data, '\n'), 0o644)
		}
		if err != nil {
			fmt.Fprintf(stderr, "report compare: %s: %v\n", *jsonOut, err)
			return 2
		}
	}
	if c.Failed() {
		return 1
	}
	return 0
}

// sgcost: port security off and on side by side (report.SecurityGroupCost).
func sgcost(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("report sgcost", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("o", "", "also write the markdown to this file")
	fs.Usage = func() { fmt.Fprint(fs.Output(), usage); fs.PrintDefaults() }
	if done, code := cli.Parse(fs, args, stdout, stderr); done {
		return code
	}
	if fs.NArg() != 2 {
		fmt.Fprintf(stderr, "report sgcost: want OFF_RESULTS.json and ON_RESULTS.json, got %d argument(s)\n%s", fs.NArg(), usage)
		return 2
	}
	var rs [2]*results.Results
	for i := range rs {
		r, err := results.Load(fs.Arg(i))
		if err != nil {
			fmt.Fprintf(stderr, "report sgcost: %v\n", err)
			return 2
		}
		rs[i] = r
	}
	c, err := report.NewSecurityGroupCost(rs[0], rs[1])
	if err != nil {
		fmt.Fprintf(stderr, "report sgcost: %s, %s: %v\n", fs.Arg(0), fs.Arg(1), err)
		return 2
	}
	md := c.Markdown()
	fmt.Fprint(stdout, md)
	if *out != "" {
		if err := results.WriteFileAtomic(*out, []byte(md), 0o644); err != nil {
			fmt.Fprintf(stderr, "report sgcost: %s: %v\n", *out, err)
			return 2
		}
	}
	return 0
}

// mergeFleets merges the files holding a fleet section into one
// (fleet.Merge) when there are several, keeping the others in order; each
// file is named by its path in a refusal.
func mergeFleets(paths []string, rs []*results.Results) ([]*results.Results, error) {
	var labels []string
	var shards, out []*results.Results
	at := -1
	for i, r := range rs {
		if r.Fleet == nil {
			out = append(out, r)
			continue
		}
		if at < 0 {
			at = len(out)
			out = append(out, nil)
		}
		labels, shards = append(labels, paths[i]), append(shards, r)
	}
	switch len(shards) {
	case 0:
		return rs, nil
	case 1:
		out[at] = shards[0]
		return out, nil
	}
	m, err := fleet.Merge(labels, shards)
	if err != nil {
		return nil, err
	}
	out[at] = m
	return out, nil
}

// printFleetVerdicts prints each fleet verdict of the set, naming the
// failed nodes with every reason; false when one fails.
func printFleetVerdicts(w io.Writer, s *report.Set) bool {
	pass := true
	for _, f := range s.Files {
		if f.Fleet == nil {
			continue
		}
		v := report.FleetVerdictOf(f)
		if v.Pass() {
			fmt.Fprintf(w, "fleet verdict PASS: run %s, %d node(s)\n", f.RunID, len(f.Fleet.MeasuredNodes()))
			continue
		}
		pass = false
		fmt.Fprintf(w, "fleet verdict FAIL: run %s: %s\n", f.RunID, v.Headline())
		for _, fl := range v.Failures {
			for _, why := range fl.Reasons {
				fmt.Fprintf(w, "  %s: %s\n", fl.Node, why)
			}
		}
	}
	return pass
}

// merge: shard files of one fleet run into one results file, report and verdict.
func merge(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("merge", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("o", "", "output directory (default: the first shard file's directory)")
	name := fs.String("name", "fleet-report", "base name of the .md and .html files")
	title := fs.String("title", "", "document title")
	resultsOut := fs.String("results", "", "also write the merged results file here")
	fs.Usage = func() { fmt.Fprint(fs.Output(), usage); fs.PrintDefaults() }
	if done, code := cli.Parse(fs, args, stdout, stderr); done {
		return code
	}
	if fs.NArg() == 0 {
		fmt.Fprintf(stderr, "report merge: no shard results file given\n%s", usage)
		return 2
	}
	var rs []*results.Results
	for _, p := range fs.Args() {
		r, err := results.Load(p)
		if err != nil {
			fmt.Fprintf(stderr, "report merge: %v\n", err)
			return 2
		}
		rs = append(rs, r)
	}
	m, err := fleet.Merge(fs.Args(), rs)
	if err != nil {
		fmt.Fprintf(stderr, "report merge: refused: %v\n", err)
		return 2
	}
	if *resultsOut != "" {
		data, err := json.MarshalIndent(m, "", "  ")
		if err == nil {
			// Its directory as -o's: made when missing (-o DIR -results DIR/results.json).
			err = os.MkdirAll(filepath.Dir(*resultsOut), 0o755)
		}
		if err == nil {
			err = results.WriteFileAtomic(*resultsOut, append(data, '\n'), 0o644)
		}
		if err != nil {
			fmt.Fprintf(stderr, "report merge: %s: %v\n", *resultsOut, err)
			return 2
		}
		fmt.Fprintf(stdout, "wrote %s\n", *resultsOut)
	}
	s, err := report.NewSet(m)
	if err != nil {
		fmt.Fprintf(stderr, "report merge: %v\n", err)
		return 2
	}
	dir := *out
	if dir == "" {
		dir = filepath.Dir(fs.Arg(0))
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		fmt.Fprintf(stderr, "report merge: %v\n", err)
		return 2
	}
	md, html, err := report.WriteFiles(dir, *name, s, report.Options{Title: *title})
	if err != nil {
		fmt.Fprintf(stderr, "report merge: %v\n", err)
		return 2
	}
	fmt.Fprintf(stdout, "wrote %s\nwrote %s\n", md, html)
	if !printFleetVerdicts(stdout, s) {
		return 1
	}
	return 0
}
