package report

import (
	"encoding/xml"
	"fmt"
	"slices"
	"strings"

	"github.com/mosk-qa/asap2-e2e/e2e/fleet"
	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// FleetJUnitFile is the fleet's JUnit by node, beside report.md.
const FleetJUnitFile = "junit-nodes.xml"

// The JUnit XML of FleetJUnit: the shape Jenkins, GitLab and Ginkgo's
// own reports share.
type (
	junitSuites struct {
		XMLName  xml.Name     `xml:"testsuites"`
		Name     string       `xml:"name,attr"`
		Tests    int          `xml:"tests,attr"`
		Failures int          `xml:"failures,attr"`
		Skipped  int          `xml:"skipped,attr"`
		Suites   []junitSuite `xml:"testsuite"`
	}
	junitSuite struct {
		Name      string      `xml:"name,attr"`
		Tests     int         `xml:"tests,attr"`
		Failures  int         `xml:"failures,attr"`
		Skipped   int         `xml:"skipped,attr"`
		Timestamp string      `xml:"timestamp,attr,omitempty"`
		Time      float64     `xml:"time,attr"`
		Cases     []junitCase `xml:"testcase"`
	}
	junitCase struct {
		Name      string        `xml:"name,attr"`
		Classname string        `xml:"classname,attr"`
		Failure   *junitFailure `xml:"failure,omitempty"`
		Skipped   *junitSkipped `xml:"skipped,omitempty"`
		SystemOut string        `xml:"system-out,omitempty"`
	}
	junitFailure struct {
		Message string `xml:"message,attr"`
		Type    string `xml:"type,attr"`
		Text    string `xml:",chardata"`
	}
	junitSkipped struct {
		Message string `xml:"message,attr"`
	}
)

// FleetJUnit is a fleet run's verdict as JUnit, one test case per node
// (FleetVerdictOf): a node that failed carries every reason in its
// failure, each node's output lists its offload verdicts in every pair it
// is in and its rate in every profile and role against the fleet median
// (with the notes about it), and a skipped node is a skipped case saying
// why. A CI system then shows the fleet as its nodes, which is how it is
// judged. Nil for a file without a fleet section.
func FleetJUnit(r *results.Results) ([]byte, error) {
	f := r.Fleet
	if f == nil {
		return nil, nil
	}
	v := FleetVerdictOf(r)
	reasons := map[string][]string{}
	for _, fl := range v.Failures {
		reasons[fl.Node] = fl.Reasons
	}
	class := "fleet " + r.RunID + " shard " + f.Shard
	suite := junitSuite{Name: "ASAP² Direct fleet by node: run " + r.RunID + ", shard " + f.Shard}
	if !r.StartedAt.IsZero() {
		suite.Timestamp = r.StartedAt.UTC().Format("2006-01-02T15:04:05")
		if r.FinishedAt != nil {
			suite.Time = r.FinishedAt.Sub(r.StartedAt).Seconds()
		}
	}
	nodes, _ := fleetRows(f)
	for _, n := range nodes {
		c := junitCase{Name: n, Classname: class, SystemOut: nodeOutput(f, n, v.Notes)}
		if rs := reasons[n]; len(rs) > 0 {
			c.Failure = &junitFailure{Type: "fleet verdict", Message: fmt.Sprintf("%s failed: %s", n, strings.Join(rs, "; ")),
				Text: strings.Join(rs, "\n")}
			suite.Failures++
		}
		suite.Cases = append(suite.Cases, c)
	}
	for _, sh := range f.Shards {
		l := sh.Line()
		if l == "" {
			continue
		}
		names := sh.Nodes
		if len(names) == 0 {
			names = []string{"shard " + sh.Shard}
		}
		for _, n := range names {
			suite.Cases = append(suite.Cases, junitCase{Name: n, Classname: class, Failure: &junitFailure{Type: "fleet verdict", Message: l, Text: l}})
			suite.Failures++
		}
	}
	for _, nd := range f.Nodes {
		if nd.Skipped {
			suite.Cases = append(suite.Cases, junitCase{Name: nd.Name, Classname: class, Skipped: &junitSkipped{Message: "skipped: " + nd.Reason}})
			suite.Skipped++
		}
	}
	suite.Tests = len(suite.Cases)
	out := junitSuites{Name: "ASAP² Direct fleet sweep", Tests: suite.Tests, Failures: suite.Failures, Skipped: suite.Skipped, Suites: []junitSuite{suite}}
	data, err := xml.MarshalIndent(out, "", "  ")
	if err != nil {
		return nil, err
	}
	return append([]byte(xml.Header), append(data, '\n')...), nil
}

// nodeOutput is node n's lines: its verdicts, pair by pair, its rates and
// the notes that name it.
func nodeOutput(f *results.Fleet, n string, notes []string) string {
	var b strings.Builder
	for _, c := range f.Checks {
		if c.Node != n {
			continue
		}
		what := c.Check
		if c.Flow != "" {
			what += " (" + c.Flow + ")"
		}
		if c.Pair != "" {
			what += " in pair " + c.Pair
		}
		fmt.Fprintf(&b, "check %s: %s: %s\n", what, c.Verdict, c.Reason)
	}
	pairs := map[string]results.FleetPair{}
	for _, p := range f.Pairs {
		pairs[p.ID] = p
	}
	for _, r := range f.Results {
		p := pairs[r.Pair]
		role := map[string]string{p.Sender: "sender", p.Receiver: "receiver"}[n]
		if role == "" {
			continue
		}
		line := fmt.Sprintf("profile %s in pair %s as %s: delivered %s over %d repeat(s)", r.Profile, r.Pair, role, results.FormatBps(r.Delivered.Median), r.Repeats)
		if r.Failed > 0 {
			line += fmt.Sprintf(", %d failed", r.Failed)
		}
		if r.Error != "" {
			line += ": " + r.Error
		}
		b.WriteString(line + "\n")
	}
	rates := slices.Clone(f.Rates)
	slices.SortStableFunc(rates, func(a, b results.FleetNodeRate) int { return strings.Compare(a.Profile, b.Profile) })
	for _, r := range rates {
		if r.Node == n {
			fmt.Fprintf(&b, "rate %s\n", fleet.StoredLine(r))
		}
	}
	for _, note := range notes {
		if strings.HasPrefix(note, n+":") {
			fmt.Fprintf(&b, "note %s\n", note)
		}
	}
	return b.String()
}
