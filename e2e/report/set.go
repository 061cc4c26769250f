package report

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// Set is one or more results files read together: typically one asap2 run
// and one baseline run, merged into one table. A profile (by ID, and by
// shape: protocol, streams, bitrate, length) may appear once per path.
type Set struct {
	Files   []*results.Results
	entries []entry
}

type entry struct {
	file *results.Results
	prof *results.ProfileResult
}

// ShapeOf returns p's shape.
func ShapeOf(p *results.ProfileResult) results.Shape {
	return results.Shape{Protocol: strings.ToLower(p.Protocol), Streams: p.Streams, BitrateBps: p.BitrateBps, LengthBytes: p.LengthBytes}
}

// NewSet merges results files. A profile's path is its own Path, or the
// file's expected path when empty. Two results for the same profile ID and
// path, or the same shape and path, are an error naming both files' run IDs.
func NewSet(files ...*results.Results) (*Set, error) {
	s := &Set{Files: files}
	type idKey struct {
		id   string
		path results.Path
	}
	type shapeKey struct {
		shape results.Shape
		path  results.Path
	}
	byID := map[idKey]*results.Results{}
	byShape := map[shapeKey]*results.Results{}
	var problems []string
	for _, f := range files {
		if f == nil {
			return nil, fmt.Errorf("results set: nil results")
		}
		for i := range f.Profiles {
			p := &f.Profiles[i]
			if p.Path == "" {
				p.Path = f.Config.ExpectedPath
			}
			ik := idKey{p.ID, p.Path}
			sk := shapeKey{ShapeOf(p), p.Path}
			if other, ok := byID[ik]; ok {
				problems = append(problems, fmt.Sprintf("profile %q path %s is in run %s and in run %s", p.ID, p.Path, other.RunID, f.RunID))
				continue
			}
			if other, ok := byShape[sk]; ok {
				problems = append(problems, fmt.Sprintf("profile %q path %s has the same shape as a profile of run %s", p.ID, p.Path, other.RunID))
				continue
			}
			byID[ik], byShape[sk] = f, f
			s.entries = append(s.entries, entry{file: f, prof: p})
		}
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("results set: %s", strings.Join(problems, "; "))
	}
	return s, nil
}

// Profile returns the result for a profile ID on a path, or nil.
func (s *Set) Profile(id string, path results.Path) *results.ProfileResult {
	for _, e := range s.entries {
		if e.prof.ID == id && e.prof.Path == path {
			return e.prof
		}
	}
	return nil
}

// ByShape returns the result with that shape on a path, or nil.
func (s *Set) ByShape(sh results.Shape, path results.Path) *results.ProfileResult {
	for _, e := range s.entries {
		if ShapeOf(e.prof) == sh && e.prof.Path == path {
			return e.prof
		}
	}
	return nil
}

// FileOf returns the results file p belongs to, or nil.
func (s *Set) FileOf(p *results.ProfileResult) *results.Results {
	for _, e := range s.entries {
		if e.prof == p {
			return e.file
		}
	}
	return nil
}

// FileFor returns the first file whose expected path is path, else the
// first file holding a profile on that path, else nil.
func (s *Set) FileFor(path results.Path) *results.Results {
	for _, f := range s.Files {
		if f.Config.ExpectedPath == path {
			return f
		}
	}
	for _, e := range s.entries {
		if e.prof.Path == path {
			return e.file
		}
	}
	return nil
}

// Profiles returns every profile in the set, in file order.
func (s *Set) Profiles() []*results.ProfileResult {
	out := make([]*results.ProfileResult, len(s.entries))
	for i, e := range s.entries {
		out[i] = e.prof
	}
	return out
}

// IDs returns the distinct profile IDs, in first-seen order.
func (s *Set) IDs() []string {
	seen := map[string]bool{}
	var out []string
	for _, e := range s.entries {
		if !seen[e.prof.ID] {
			seen[e.prof.ID] = true
			out = append(out, e.prof.ID)
		}
	}
	return out
}

// Gain is the ASAP² delivered median over the baseline delivered median for a
// profile shape; ok is false when either side is missing, has no successful
// run, or the baseline delivered nothing.
func (s *Set) Gain(sh results.Shape) (gain float64, ok bool) {
	a, b := s.ByShape(sh, results.PathASAP2), s.ByShape(sh, results.PathBaseline)
	if a == nil || b == nil || a.Summary.Delivered.N == 0 || b.Summary.Delivered.N == 0 || b.Summary.Delivered.Median <= 0 {
		return 0, false
	}
	return a.Summary.Delivered.Median / b.Summary.Delivered.Median, true
}

// Evidence states what the offload checks proved about a profile's path.
type Evidence struct {
	Status string `json:"status"` // one of the Evidence* constants
	Detail string `json:"detail"` // per check: "tc offloaded, dpctl offloaded, representor missing"
	// Scope is "profile" when the profile had its own checks, "run" when the
	// run-level evidence window is used.
	Scope string `json:"scope"`
}

// Evidence statuses.
const (
	EvidenceOffloadProven = "offload proven"
	// EvidencePartialProof: every configured check says offloaded, but the
	// run opted out of some (offload.partial_proof): the detail names them.
	EvidencePartialProof = "partial proof"
	EvidenceSoftware     = "software"
	EvidenceUnproven     = "unproven"
)

// EvidenceFor judges the checks that cover p: its own, else its file's
// run-level checks. Checks the run was configured to do but that left no
// result are named as missing.
func (s *Set) EvidenceFor(p *results.ProfileResult) Evidence {
	f := s.FileOf(p)
	checks, scope := p.Offload, "profile"
	if len(checks) == 0 && f != nil {
		checks, scope = f.Offload, "run"
	}
	var configured []string
	if f != nil {
		configured = f.Config.Checks
	}
	return Judge(checks, configured, scope)
}

// partial turns "offload proven" into "partial proof: tc, dpctl only" when
// the configured checks leave any of results.AllChecks out (only a run with
// offload.partial_proof gets that far for asap2): fewer witnesses never
// earn the same stamp as all of them.
func partial(ev Evidence, configured []string) Evidence {
	if ev.Status != EvidenceOffloadProven || len(configured) == 0 {
		return ev
	}
	var left []string
	for _, k := range results.AllChecks {
		if !slices.Contains(configured, k) {
			left = append(left, k)
		}
	}
	if len(left) == 0 {
		return ev
	}
	ev.Status = EvidencePartialProof
	ev.Detail = fmt.Sprintf("partial proof: %s only (%s not run); %s", strings.Join(configured, ", "), strings.Join(left, ", "), ev.Detail)
	return ev
}

// Judge combines check verdicts. Several results of one check (e.g. during
// the TCP and the UDP flow) combine as: any software -> software, all
// offloaded -> offloaded, otherwise inconclusive. The whole is "offload
// proven" only when every configured check ran and all say offloaded;
// "software" when any says software and no single result says offloaded;
// otherwise
// "unproven" (nothing ran, a check is missing or inconclusive, or the checks
// contradict each other).
func Judge(checks []results.CheckResult, configured []string, scope string) Evidence {
	per := map[string]results.Verdict{}
	var order []string
	anyOffloaded := false // any single result, before combining
	for _, c := range checks {
		if c.Verdict == results.VerdictOffloaded {
			anyOffloaded = true
		}
		prev, seen := per[c.Name]
		if !seen {
			order = append(order, c.Name)
			per[c.Name] = c.Verdict
			continue
		}
		switch {
		case prev == results.VerdictSoftware || c.Verdict == results.VerdictSoftware:
			per[c.Name] = results.VerdictSoftware
		case prev == results.VerdictOffloaded && c.Verdict == results.VerdictOffloaded:
			per[c.Name] = results.VerdictOffloaded
		default:
			per[c.Name] = results.VerdictInconclusive
		}
	}
	var missing []string
	for _, name := range configured {
		if _, ok := per[name]; !ok {
			missing = append(missing, name)
		}
	}
	sort.Strings(missing)
	var parts []string
	off, sw := 0, 0
	for _, name := range order {
		v := per[name]
		switch v {
		case results.VerdictOffloaded:
			off++
		case results.VerdictSoftware:
			sw++
		}
		parts = append(parts, name+" "+string(v))
	}
	for _, m := range missing {
		parts = append(parts, m+" missing")
	}
	ev := Evidence{Scope: scope, Detail: strings.Join(parts, ", ")}
	switch {
	case len(order) == 0:
		ev.Status = EvidenceUnproven
		if ev.Detail == "" {
			ev.Detail = "no offload check ran"
		}
	case sw > 0 && (off > 0 || anyOffloaded):
		// Also when one check said offloaded on one hypervisor or flow and
		// software on another: a path is not "software" while any evidence
		// shows it offloaded (offload.ExpectPath fails a baseline run then).
		ev.Status = EvidenceUnproven
		ev.Detail = "checks contradict: " + ev.Detail
	case sw > 0:
		ev.Status = EvidenceSoftware
	case off == len(order) && len(missing) == 0:
		ev.Status = EvidenceOffloadProven
	default:
		ev.Status = EvidenceUnproven
	}
	return partial(ev, configured)
}

// Expected reports whether an evidence status is what the path must show:
// offload proven for asap2, software for baseline.
func Expected(path results.Path, status string) bool {
	switch path {
	case results.PathASAP2:
		// A partial proof was opted into by the run's config and says so in
		// every cell; it still is what the run asked to show.
		return status == EvidenceOffloadProven || status == EvidencePartialProof
	case results.PathBaseline:
		return status == EvidenceSoftware
	}
	return false
}
