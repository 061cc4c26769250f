// Command history keeps the nightly series of results files and finds the
// regressions in it by change point (issue 37; docs/HISTORY.md).
//
//	go run ./tools/history [--store PATH] ingest RESULTS.json...
//	go run ./tools/history [--store PATH] show [-json] [SERIES_FILTER]
//	go run ./tools/history [--store PATH] check [--junit FILE]
//	go run ./tools/history [--store PATH] ack -series KEY -run RUN_ID -reason TEXT
//	go run ./tools/history [--store PATH] trend [-o FILE.html] [-title TEXT] [SERIES_FILTER]
//
// The store is a SQLite file or a postgres:// URL (--store, else
// $ASAP2E2E_HISTORY). ingest adds
// every point of each file (a single run, a fleet run, merged or shard
// files) and the run's environment identity (history.Identity), idempotent
// by run id. show prints each series matching the filter with its change
// points. check judges the newest run: it exits 1 when a series' newest
// point sits after an unacknowledged regression change point among its
// last 60 runs and no more than 10 runs old (history.Open), naming the
// series, the change point's run and build, the step and its confidence;
// --junit writes one test case per series. Both name what changed in the
// environment between the change point's run and the series' run before
// it (history.EnvNote), where anything did. ack acknowledges a
// change point (kept in the store). trend writes the offline trend page
// (history.Trend: the regressions on top, a chart per series family, the
// runs whose environment changed marked on the x axis).
//
// Exit codes: 0 success / no regression, 1 regression, 2 usage or input error.
package main

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/history"
	"github.com/mosk-qa/asap2-e2e/e2e/history/store"
	"github.com/mosk-qa/asap2-e2e/e2e/results"
	"github.com/mosk-qa/asap2-e2e/tools/internal/cli"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// EnvStore names the store when --store is not given.
const EnvStore = "ASAP2E2E_HISTORY"

const usage = `usage:
  history [--store PATH] ingest RESULTS.json...
  history [--store PATH] show [-json] [SERIES_FILTER]
  history [--store PATH] check [--junit FILE]
  history [--store PATH] ack -series KEY -run RUN_ID -reason TEXT
  history [--store PATH] trend [-o FILE.html] [-title TEXT] [SERIES_FILTER]
the store is a SQLite file or a postgres:// URL; without --store it is $` + EnvStore + `
`

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("history", flag.ContinueOnError)
	path := fs.String("store", os.Getenv(EnvStore), "the history: a SQLite file or a postgres:// URL (default $"+EnvStore+")")
	fs.Usage = func() { fmt.Fprint(fs.Output(), usage); fs.PrintDefaults() }
	if done, code := cli.Parse(fs, args, stdout, stderr); done {
		return code
	}
	rest := fs.Args()
	if len(rest) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	if cli.IsHelp(rest[0]) {
		fmt.Fprint(stdout, usage)
		return 0
	}
	cmds := map[string]func(context.Context, *store.Store, []string, io.Writer, io.Writer) int{
		"ingest": ingest, "show": show, "check": check, "ack": ack, "trend": trend,
	}
	cmd, ok := cmds[rest[0]]
	if !ok {
		fmt.Fprintf(stderr, "history: unknown command %q\n%s", rest[0], usage)
		return 2
	}
	if *path == "" {
		fmt.Fprintf(stderr, "history: no store: give --store PATH or set %s\n", EnvStore)
		return 2
	}
	ctx := context.Background()
	s, err := store.Open(ctx, *path)
	if err != nil {
		fmt.Fprintf(stderr, "history: %v\n", err)
		return 2
	}
	defer s.Close()
	return cmd(ctx, s, rest[1:], stdout, stderr)
}

func ingest(ctx context.Context, s *store.Store, args []string, stdout, stderr io.Writer) int {
	fs := subFlags("ingest", "ingest RESULTS.json...")
	if done, code := cli.Parse(fs, args, stdout, stderr); done {
		return code
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return 2
	}
	code := 0
	for _, f := range fs.Args() {
		r, err := results.Load(f)
		if err != nil {
			fmt.Fprintf(stderr, "history: %v\n", err)
			code = 2
			continue
		}
		facts, err := history.Identity(r)
		if err != nil {
			for _, line := range strings.Split(err.Error(), "\n") {
				fmt.Fprintf(stderr, "history: %s: %s\n", f, line)
			}
			code = 2
			continue
		}
		pts := history.Extract(r)
		n, err := s.Ingest(ctx, history.RunOf(r), facts, pts)
		if err != nil {
			fmt.Fprintf(stderr, "history: %s: %v\n", f, err)
			code = 2
			continue
		}
		fmt.Fprintf(stdout, "%s: run %s, %d points, %d new, %d environment facts\n", f, r.RunID, len(pts), n, len(facts))
	}
	return code
}

// seriesView is one series as show -json writes it.
type seriesView struct {
	Series       string                `json:"series"`
	Points       []store.Entry         `json:"points"`
	ChangePoints []history.ChangePoint `json:"change_points"`
	// EnvChanges are the environment's changes at each change point's run
	// from the run before it in the series, where any.
	EnvChanges []envChange `json:"environment_changes,omitempty"`
	points     []history.Point
}

// envChange is what changed in the environment at a change point's run.
type envChange struct {
	Index   int              `json:"index"` // the change point's
	RunID   string           `json:"run_id"`
	Changes []history.Change `json:"changes"`
	Note    string           `json:"note"`
}

// envFacts reads each run's environment facts from the store once.
type envFacts struct {
	s    *store.Store
	runs map[string]history.Facts
}

// change is what changed in the environment between the point before i
// and point i of es; ok false when nothing did (or i is the first point).
func (f *envFacts) change(ctx context.Context, es []store.Entry, i int) (envChange, bool, error) {
	if i < 1 || i >= len(es) {
		return envChange{}, false, nil
	}
	var fs [2]history.Facts
	for k, id := range []string{es[i-1].Run.ID, es[i].Run.ID} {
		if _, ok := f.runs[id]; !ok {
			got, err := f.s.Facts(ctx, id)
			if err != nil {
				return envChange{}, false, err
			}
			f.runs[id] = got
		}
		fs[k] = f.runs[id]
	}
	note := history.EnvNote(fs[0], fs[1])
	if note == "" {
		return envChange{}, false, nil
	}
	return envChange{Index: i, RunID: es[i].Run.ID, Changes: history.Changes(fs[0], fs[1]), Note: note}, true, nil
}

func load(ctx context.Context, s *store.Store, key string) (seriesView, history.Metric, error) {
	ser, err := history.ParseKey(key)
	if err != nil {
		return seriesView{}, history.Metric{}, err
	}
	m, err := history.MetricOf(ser.Metric)
	if err != nil {
		return seriesView{}, m, fmt.Errorf("series %s: %w", key, err)
	}
	es, err := s.Points(ctx, key)
	if err != nil {
		return seriesView{}, m, err
	}
	pts := make([]history.Point, len(es))
	for i, e := range es {
		pts[i] = e.Point
	}
	return seriesView{Series: key, Points: es, points: pts}, m, nil
}

// loadAll is every series whose key contains filter, with its metric.
func loadAll(ctx context.Context, s *store.Store, filter string) ([]seriesView, []history.Metric, error) {
	keys, err := s.Series(ctx, filter)
	if err != nil {
		return nil, nil, err
	}
	views := make([]seriesView, len(keys))
	metrics := make([]history.Metric, len(keys))
	for i, k := range keys {
		if views[i], metrics[i], err = load(ctx, s, k); err != nil {
			return nil, nil, err
		}
	}
	return views, metrics, nil
}

func show(ctx context.Context, s *store.Store, args []string, stdout, stderr io.Writer) int {
	fs := subFlags("show", "show [-json] [SERIES_FILTER]")
	asJSON := fs.Bool("json", false, "write the series as JSON")
	if done, code := cli.Parse(fs, args, stdout, stderr); done {
		return code
	}
	views, metrics, err := loadAll(ctx, s, fs.Arg(0))
	if err != nil {
		fmt.Fprintf(stderr, "history: %v\n", err)
		return 2
	}
	env := &envFacts{s: s, runs: map[string]history.Facts{}}
	for i := range views {
		v, m := &views[i], metrics[i]
		v.ChangePoints = history.Detect(v.points, m, history.Options{})
		notes := map[int]string{}
		for _, c := range v.ChangePoints {
			ec, ok, err := env.change(ctx, v.Points, c.Index)
			if err != nil {
				fmt.Fprintf(stderr, "history: %v\n", err)
				return 2
			}
			if ok {
				v.EnvChanges = append(v.EnvChanges, ec)
				notes[c.Index] = ec.Note
			}
		}
		if *asJSON {
			continue
		}
		fmt.Fprintf(stdout, "%s\n", v.Series)
		cps := map[int]history.ChangePoint{}
		for _, c := range v.ChangePoints {
			cps[c.Index] = c
		}
		for i, e := range v.Points {
			mark := ""
			if c, ok := cps[i]; ok {
				mark = "  ← " + describe(c, m)
				if n := notes[i]; n != "" {
					mark += "; " + n
				}
			}
			if e.Inconclusive(m) {
				mark += "  (inconclusive: interval wider than the minimum effect)"
			}
			fmt.Fprintf(stdout, "  %s  %-32s %-20s %14.6g [%g, %g] n=%d%s\n",
				e.Run.StartedAt.Format(time.DateOnly), e.Run.ID, e.Run.BuildName(), e.Value, e.Lo, e.Hi, e.N, mark)
		}
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(views); err != nil {
			fmt.Fprintf(stderr, "history: %v\n", err)
			return 2
		}
	}
	return 0
}

func describe(c history.ChangePoint, m history.Metric) string {
	kind := "improvement"
	if c.Regression {
		kind = "regression"
	}
	step := fmt.Sprintf("%+.1f %%", c.Step*100)
	if m.Absolute || m.Verdict {
		step = fmt.Sprintf("%+g", c.Step)
	}
	return fmt.Sprintf("%s %s (%g → %g), confidence %.3f", kind, step, c.Before, c.After, c.Confidence)
}

// Finding is one series judged by check.
type Finding struct {
	Series string
	Run    history.Run // the change point's run
	Change history.ChangePoint
	Text   string
	Acked  bool
}

func check(ctx context.Context, s *store.Store, args []string, stdout, stderr io.Writer) int {
	fs := subFlags("check", "check [--junit FILE]")
	junit := fs.String("junit", "", "write the series' verdicts as JUnit XML to `FILE`")
	if done, code := cli.Parse(fs, args, stdout, stderr); done {
		return code
	}
	newest, ok, err := s.Newest(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "history: %v\n", err)
		return 2
	}
	if !ok {
		fmt.Fprintln(stderr, "history: the store holds no run")
		return 2
	}
	keys, err := s.Series(ctx, "")
	if err != nil {
		fmt.Fprintf(stderr, "history: %v\n", err)
		return 2
	}
	var cases []junitCase
	failed := 0
	env := &envFacts{s: s, runs: map[string]history.Facts{}}
	for _, k := range keys {
		v, m, err := load(ctx, s, k)
		if err != nil {
			fmt.Fprintf(stderr, "history: %v\n", err)
			return 2
		}
		if len(v.Points) == 0 || v.Points[len(v.Points)-1].Run.ID != newest.ID {
			continue // the newest run did not measure this series
		}
		tc := junitCase{Name: k, Class: "history"}
		if c, ok := history.Open(v.points, m, history.Options{}); ok {
			at := v.Points[c.Index].Run
			acked, err := s.Acked(ctx, k, at.ID)
			if err != nil {
				fmt.Fprintf(stderr, "history: %v\n", err)
				return 2
			}
			text := fmt.Sprintf("%s: %s since run %s (build %q, %s)", k, describe(c, m), at.ID, at.BuildName(), at.StartedAt.Format(time.DateOnly))
			ec, changed, err := env.change(ctx, v.Points, c.Index)
			if err != nil {
				fmt.Fprintf(stderr, "history: %v\n", err)
				return 2
			}
			if changed {
				text += "; " + ec.Note
			}
			if acked {
				fmt.Fprintf(stdout, "acknowledged %s\n", text)
				tc.Skipped = &junitMsg{Message: "acknowledged: " + text}
			} else {
				failed++
				fmt.Fprintf(stdout, "REGRESSION %s\n", text)
				tc.Failure = &junitMsg{Message: text}
			}
		}
		cases = append(cases, tc)
	}
	fmt.Fprintf(stdout, "newest run %s (build %q): %d series, %d unacknowledged regressions\n", newest.ID, newest.BuildName(), len(cases), failed)
	if *junit != "" {
		suite := junitSuite{Name: "history check " + newest.ID, Tests: len(cases), Failures: failed, Cases: cases}
		data, err := xml.MarshalIndent(suite, "", "  ")
		if err == nil {
			err = results.WriteFileAtomic(*junit, append([]byte(xml.Header), append(data, '\n')...), 0o644)
		}
		if err != nil {
			fmt.Fprintf(stderr, "history: junit %s: %v\n", *junit, err)
			return 2
		}
	}
	if failed > 0 {
		return 1
	}
	return 0
}

type junitSuite struct {
	XMLName  xml.Name    `xml:"testsuite"`
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name    string    `xml:"name,attr"`
	Class   string    `xml:"classname,attr"`
	Failure *junitMsg `xml:"failure,omitempty"`
	Skipped *junitMsg `xml:"skipped,omitempty"`
}

type junitMsg struct {
	Message string `xml:"message,attr"`
}

func ack(ctx context.Context, s *store.Store, args []string, stdout, stderr io.Writer) int {
	fs := subFlags("ack", "ack -series KEY -run RUN_ID -reason TEXT")
	series := fs.String("series", "", "the series key (as show and check print it)")
	runID := fs.String("run", "", "the run id of the change point")
	reason := fs.String("reason", "", "why it is accepted")
	if done, code := cli.Parse(fs, args, stdout, stderr); done {
		return code
	}
	var missing []string
	for _, f := range []struct{ name, v string }{{"-series", *series}, {"-run", *runID}, {"-reason", *reason}} {
		if f.v == "" {
			missing = append(missing, f.name)
		}
	}
	if len(missing) > 0 {
		fmt.Fprintf(stderr, "history ack: missing %v\n", missing)
		fs.Usage()
		return 2
	}
	if err := s.Ack(ctx, *series, *runID, *reason); err != nil {
		fmt.Fprintf(stderr, "history: %v\n", err)
		return 2
	}
	fmt.Fprintf(stdout, "acknowledged %s at run %s\n", *series, *runID)
	return 0
}

func trend(ctx context.Context, s *store.Store, args []string, stdout, stderr io.Writer) int {
	fs := subFlags("trend", "trend [-o FILE.html] [-title TEXT] [SERIES_FILTER]")
	out := fs.String("o", "trend.html", "the page to write")
	title := fs.String("title", "asap2-e2e history", "the page's title")
	if done, code := cli.Parse(fs, args, stdout, stderr); done {
		return code
	}
	views, metrics, err := loadAll(ctx, s, fs.Arg(0))
	if err != nil {
		fmt.Fprintf(stderr, "history: %v\n", err)
		return 2
	}
	facts, err := s.AllFacts(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "history: %v\n", err)
		return 2
	}
	var ss []history.TrendSeries
	for i, v := range views {
		m, k := metrics[i], v.Series
		ts := history.TrendSeries{Series: v.points[0].Series, Points: v.points, ChangePoints: history.Detect(v.points, m, history.Options{})}
		for _, e := range v.Points {
			ts.Runs = append(ts.Runs, e.Run)
			ts.Facts = append(ts.Facts, facts[e.Run.ID])
		}
		if c, ok := history.Open(v.points, m, history.Options{}); ok {
			ts.Open = &c
			if ts.Acked, err = s.Acked(ctx, k, ts.Runs[c.Index].ID); err != nil {
				fmt.Fprintf(stderr, "history: %v\n", err)
				return 2
			}
		}
		ss = append(ss, ts)
	}
	if err := results.WriteFileAtomic(*out, history.Trend(*title, ss), 0o644); err != nil {
		fmt.Fprintf(stderr, "history: %v\n", err)
		return 2
	}
	fmt.Fprintf(stdout, "wrote %s (%d series)\n", *out, len(ss))
	return 0
}

// subFlags is a subcommand's flag set, its usage line first.
func subFlags(name, usage string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: history "+usage)
		fs.PrintDefaults()
	}
	return fs
}
