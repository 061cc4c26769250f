package report

import (
	"fmt"
	"slices"
	"strings"

	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// CompareOptions set the regression gate.
type CompareOptions struct {
	// TolerancePercent: a candidate delivered median lower than the
	// accepted one by more than this percentage is a regression.
	TolerancePercent float64
	// LossTolerancePoints: a UDP loss median higher than the accepted one
	// by more than this many percentage points is a regression (unless
	// IgnoreLoss).
	LossTolerancePoints float64
	IgnoreLoss          bool
	// AllowMissing: a profile the accepted run has and the candidate lacks
	// is reported but not a regression.
	AllowMissing bool
	// IgnoreEvidence: an evidence downgrade (e.g. asap2 "offload proven" ->
	// "software") is reported but not a regression.
	IgnoreEvidence bool
	// CPUTolerancePercent: a candidate's host cores per 10 Gbit/s median
	// higher than the accepted one by more than this percentage is a
	// regression (when both runs have it, unless IgnoreCPU).
	CPUTolerancePercent float64 `json:"cpu_tolerance_percent,omitempty"`
	IgnoreCPU           bool    `json:"ignore_cpu,omitempty"`
	// LatencyTolerancePercent: a candidate latency (p99; the first-packet
	// median) higher than the accepted one by more than this percentage is
	// a regression.
	LatencyTolerancePercent float64
	// AcrossModes compares runs measured in different port-security modes
	// on purpose (security groups off in one, on in the other): the
	// comparison then says so at its top instead of refusing.
	AcrossModes bool `json:"across_modes,omitempty"`
}

// Delta statuses.
const (
	DeltaOK         = "ok"
	DeltaImproved   = "improved"
	DeltaRegression = "REGRESSION"
	DeltaMissing    = "missing"
	DeltaNew        = "new"
)

// DeltaRow compares one profile shape on one path.
type DeltaRow struct {
	Profile            string       `json:"profile"` // human title
	ID                 string       `json:"id"`
	Path               results.Path `json:"path"`
	UDP                bool         `json:"udp"`
	AcceptedDelivered  float64      `json:"accepted_delivered_bps"`
	CandidateDelivered float64      `json:"candidate_delivered_bps"`
	DeltaPercent       float64      `json:"delta_percent"` // candidate vs accepted delivered
	AcceptedLoss       float64      `json:"accepted_loss_percent"`
	CandidateLoss      float64      `json:"candidate_loss_percent"`
	AcceptedEvidence   string       `json:"accepted_evidence"`
	CandidateEvidence  string       `json:"candidate_evidence"`
	Status             string       `json:"status"`
	// Regression is true when this row fails the gate.
	Regression bool     `json:"regression"`
	Notes      []string `json:"notes,omitempty"`
	// Host cores per 10 Gbit/s delivered (medians; nil without a reading).
	AcceptedCoresPer10G  *float64 `json:"accepted_cores_per_10gbps,omitempty"`
	CandidateCoresPer10G *float64 `json:"candidate_cores_per_10gbps,omitempty"`
}

// EnvDiff is one environment fact that differs between the runs of a path.
type EnvDiff struct {
	Path      results.Path `json:"path"`
	Item      string       `json:"item"`
	Accepted  string       `json:"accepted"`
	Candidate string       `json:"candidate"`
}

// Comparison is the result of the regression gate.
type Comparison struct {
	Options     CompareOptions `json:"options"`
	Accepted    []string       `json:"accepted_runs"`
	Candidate   []string       `json:"candidate_runs"`
	Rows        []DeltaRow     `json:"rows"`
	Env         []EnvDiff      `json:"environment_differences"`
	Regressions int            `json:"regressions"`
	Latency     []LatencyDelta `json:"latency,omitempty"`
	// ModeDifferences names each path whose accepted and candidate runs
	// were measured in different port-security modes (ModeDifferences).
	ModeDifferences []string `json:"mode_differences,omitempty"`
	// Refused is true when modes differ and Options.AcrossModes is not
	// set: the deltas would be the cost of security groups, not a change
	// of the build, and the gate does not pass on them.
	Refused bool `json:"refused,omitempty"`
}

// Failed reports whether the gate fails: a regression, or a refusal to
// compare runs of different modes.
func (c Comparison) Failed() bool { return c.Regressions > 0 || c.Refused }

// ModeDifferences lists, per path, the accepted and candidate runs whose
// port-security modes differ (results.ConfigSummary.Mode). A run that does
// not record its mode (written before the mode was recorded, when asap2
// runs could only be "off") counts as the same mode as one that is off,
// never as one that is on.
func ModeDifferences(accepted, candidate *Set) []string {
	var out []string
	for _, path := range []results.Path{results.PathASAP2, results.PathBaseline} {
		fa, fc := accepted.FileFor(path), candidate.FileFor(path)
		if fa == nil || fc == nil {
			continue
		}
		ma, mc := fa.Config.Mode(), fc.Config.Mode()
		if ma == mc || ma != results.ModeSecurityGroupsOn && mc != results.ModeSecurityGroupsOn {
			continue
		}
		out = append(out, fmt.Sprintf("%s: accepted run %s %s, candidate run %s %s", pathName(path), fa.RunID, ma, fc.RunID, mc))
	}
	return out
}

// Compare gates candidate against accepted, per profile shape and path.
func Compare(accepted, candidate *Set, o CompareOptions) Comparison {
	c := Comparison{Options: o, ModeDifferences: ModeDifferences(accepted, candidate)}
	c.Refused = len(c.ModeDifferences) > 0 && !o.AcrossModes
	for _, f := range accepted.Files {
		c.Accepted = append(c.Accepted, f.RunID)
	}
	for _, f := range candidate.Files {
		c.Candidate = append(c.Candidate, f.RunID)
	}
	seen := map[string]bool{}
	for _, a := range sortedProfiles(accepted.Profiles()) {
		key := fmt.Sprintf("%v|%s", ShapeOf(a), a.Path)
		seen[key] = true
		cand := candidate.ByShape(ShapeOf(a), a.Path)
		c.Rows = append(c.Rows, compareOne(accepted, candidate, a, cand, o))
	}
	for _, p := range sortedProfiles(candidate.Profiles()) {
		key := fmt.Sprintf("%v|%s", ShapeOf(p), p.Path)
		if seen[key] {
			continue
		}
		r := DeltaRow{Profile: profileTitle(p), ID: p.ID, Path: p.Path, UDP: ShapeOf(p).Protocol == results.ProtoUDP, Status: DeltaNew,
			CandidateDelivered: p.Summary.Delivered.Median, CandidateLoss: p.Summary.Loss.Median,
			CandidateEvidence: candidate.EvidenceFor(p).Status}
		r.Notes = append(r.Notes, "not in the accepted run")
		c.Rows = append(c.Rows, r)
	}
	c.Rows = append(c.Rows, compareSearches(accepted, candidate, o)...)
	for _, r := range c.Rows {
		if r.Regression {
			c.Regressions++
		}
	}
	c.Latency = compareLatency(accepted, candidate, o)
	for _, r := range c.Latency {
		if r.Regression {
			c.Regressions++
		}
	}
	for _, path := range []results.Path{results.PathASAP2, results.PathBaseline} {
		fa, fc := accepted.FileFor(path), candidate.FileFor(path)
		if fa == nil || fc == nil {
			continue
		}
		for _, d := range environmentDiffs(fa, fc, "Run ID", "Expected path") {
			d.Path = path
			c.Env = append(c.Env, d)
		}
	}
	return c
}

// environmentDiffs are the rows of the report's environment table
// (EnvironmentRows) whose values differ between runs a and b, except the
// rows named in skip; Accepted holds a's value, Candidate b's.
func environmentDiffs(a, b *results.Results, skip ...string) []EnvDiff {
	sa, _ := NewSet(a)
	sb, _ := NewSet(b)
	// By item: a row only one run records (the identity's optional
	// rows) is a difference against "—".
	ra, rb := EnvironmentRows(sa), EnvironmentRows(sb)
	var items []string
	va, vb := map[string]string{}, map[string]string{}
	for _, r := range ra {
		items, va[r[0]] = append(items, r[0]), r[1]
	}
	for _, r := range rb {
		if _, ok := va[r[0]]; !ok {
			items = append(items, r[0])
		}
		vb[r[0]] = r[1]
	}
	var out []EnvDiff
	for _, it := range items {
		if slices.Contains(skip, it) {
			continue
		}
		a, b := orDash(va[it]), orDash(vb[it])
		if a != b {
			out = append(out, EnvDiff{Item: it, Accepted: a, Candidate: b})
		}
	}
	return out
}

func compareOne(accepted, candidate *Set, a, cand *results.ProfileResult, o CompareOptions) DeltaRow {
	r := DeltaRow{Profile: profileTitle(a), ID: a.ID, Path: a.Path, UDP: ShapeOf(a).Protocol == results.ProtoUDP,
		AcceptedDelivered: a.Summary.Delivered.Median, AcceptedLoss: a.Summary.Loss.Median,
		AcceptedEvidence: accepted.EvidenceFor(a).Status, Status: DeltaOK}
	if a.Summary.Delivered.N == 0 {
		r.Notes = append(r.Notes, "accepted run has no successful repeat: nothing to compare against")
	}
	if cand == nil || cand.Summary.Delivered.N == 0 {
		r.Status = DeltaMissing
		if cand == nil {
			r.Notes = append(r.Notes, "profile not in the candidate run")
		} else {
			r.Notes = append(r.Notes, fmt.Sprintf("candidate has no successful repeat (%d failed)", cand.Summary.Failed))
		}
		r.Regression = !o.AllowMissing && a.Summary.Delivered.N > 0
		return r
	}
	r.CandidateDelivered = cand.Summary.Delivered.Median
	r.CandidateLoss = cand.Summary.Loss.Median
	r.CandidateEvidence = candidate.EvidenceFor(cand).Status
	if a.Summary.Delivered.N == 0 {
		return r
	}
	if r.AcceptedDelivered > 0 {
		r.DeltaPercent = (r.CandidateDelivered - r.AcceptedDelivered) / r.AcceptedDelivered * 100
	} else {
		r.Notes = append(r.Notes, "accepted run delivered nothing: no percentage delta")
	}
	switch {
	case r.DeltaPercent < -o.TolerancePercent:
		r.Status, r.Regression = DeltaRegression, true
		r.Notes = append(r.Notes, fmt.Sprintf("delivered %s below the accepted run, beyond the %s tolerance", results.FormatPercent(-r.DeltaPercent), results.FormatPercent(o.TolerancePercent)))
	case r.DeltaPercent > o.TolerancePercent:
		r.Status = DeltaImproved
	}
	if r.UDP && !o.IgnoreLoss {
		if d := r.CandidateLoss - r.AcceptedLoss; d > o.LossTolerancePoints {
			r.Status, r.Regression = DeltaRegression, true
			r.Notes = append(r.Notes, fmt.Sprintf("loss rose by %.3g points (%s → %s), beyond the %.3g-point tolerance",
				d, results.FormatLoss(r.AcceptedLoss), results.FormatLoss(r.CandidateLoss), o.LossTolerancePoints))
		}
	}
	switch {
	case r.AcceptedEvidence != r.CandidateEvidence && Expected(a.Path, r.AcceptedEvidence) &&
		(!Expected(cand.Path, r.CandidateEvidence) || r.AcceptedEvidence == EvidenceOffloadProven && r.CandidateEvidence == EvidencePartialProof):
		// Fewer witnesses than the accepted run had is a downgrade too.
		r.Notes = append(r.Notes, fmt.Sprintf("evidence went from %q to %q", r.AcceptedEvidence, r.CandidateEvidence))
		if !o.IgnoreEvidence {
			r.Status, r.Regression = DeltaRegression, true
		}
	case contradicts(cand.Path, r.CandidateEvidence):
		// Whatever the accepted run proved, a candidate whose checks prove
		// the other path (an asap2 row on software, a baseline row
		// offloaded) does not pass the gate.
		r.Notes = append(r.Notes, fmt.Sprintf("candidate evidence %q contradicts its %s path", r.CandidateEvidence, cand.Path))
		if !o.IgnoreEvidence {
			r.Status, r.Regression = DeltaRegression, true
		}
	}
	compareCPU(&r, a, cand, o)
	if cand.Summary.Unstable {
		r.Notes = append(r.Notes, "candidate unstable: "+cand.Summary.UnstableReason)
	}
	if a.Summary.Unstable {
		r.Notes = append(r.Notes, "accepted unstable: "+a.Summary.UnstableReason)
	}
	return r
}

// Markdown renders the delta table, the environment differences and the verdict.
func (c Comparison) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Regression gate: candidate %s vs accepted %s\n\n", strings.Join(c.Candidate, "+"), strings.Join(c.Accepted, "+"))
	loss := fmt.Sprintf("UDP loss +%.3g points", c.Options.LossTolerancePoints)
	if c.Options.IgnoreLoss {
		loss = "UDP loss not gated"
	}
	cpu := "host cores per 10 Gbit/s +" + results.FormatPercent(c.Options.CPUTolerancePercent)
	if c.Options.IgnoreCPU {
		cpu = "host CPU not gated"
	}
	if len(c.ModeDifferences) > 0 {
		what := "**REFUSED: the runs were measured in different port-security modes**"
		if !c.Refused {
			what = "**THE RUNS WERE MEASURED IN DIFFERENT PORT-SECURITY MODES** (compared on purpose, -across-modes)"
		}
		fmt.Fprintf(&b, "%s: %s. A delta between them is the cost of security groups (conntrack on every packet), not a change of the build.\n\n", what, strings.Join(c.ModeDifferences, "; "))
	}
	fmt.Fprintf(&b, "Tolerance: delivered −%s, %s, %s.\n\n", results.FormatPercent(c.Options.TolerancePercent), loss, cpu)
	var rows [][]string
	for _, r := range c.Rows {
		acc, cand := results.Dash, results.Dash
		if r.Status != DeltaNew {
			acc = results.FormatBps(r.AcceptedDelivered)
		}
		if r.Status != DeltaMissing {
			cand = results.FormatBps(r.CandidateDelivered)
		}
		delta := results.Dash
		if r.Status != DeltaNew && r.Status != DeltaMissing && r.AcceptedDelivered > 0 {
			delta = fmt.Sprintf("%+.1f%%", r.DeltaPercent)
		}
		lossCell := results.Dash
		if r.UDP {
			la, lc := results.Dash, results.Dash
			if r.Status != DeltaNew {
				la = results.FormatLoss(r.AcceptedLoss)
			}
			if r.Status != DeltaMissing {
				lc = results.FormatLoss(r.CandidateLoss)
			}
			lossCell = la + " → " + lc
		}
		ev := orDash(r.AcceptedEvidence) + " → " + orDash(r.CandidateEvidence)
		rows = append(rows, []string{r.Profile, pathName(r.Path), acc, cand, delta, lossCell, ev, r.Status, strings.Join(r.Notes, "; ")})
	}
	b.WriteString(mdTable([]string{"Profile", "Path", "Accepted delivered", "Candidate delivered", "Δ delivered", "Loss", "Evidence", "Status", "Notes"}, rows))
	b.WriteString(latencyDeltaMarkdown(c))
	b.WriteString("\n## Environment differences\n\n")
	if len(c.Env) == 0 {
		b.WriteString("None (NIC driver and firmware, OVS, kernels, iperf3, MTU, hypervisors are the same).\n")
	} else {
		var er [][]string
		for _, e := range c.Env {
			er = append(er, []string{pathName(e.Path), e.Item, e.Accepted, e.Candidate})
		}
		b.WriteString(mdTable([]string{"Path", "Item", "Accepted", "Candidate"}, er))
	}
	if c.Refused {
		fmt.Fprintf(&b, "\n**FAIL**: refused: runs of different port-security modes (%d regression(s) beyond tolerance besides).\n", c.Regressions)
	} else if c.Failed() {
		fmt.Fprintf(&b, "\n**FAIL**: %d regression(s) beyond tolerance.\n", c.Regressions)
	} else {
		b.WriteString("\n**PASS**: no regression beyond tolerance.\n")
	}
	return b.String()
}

// contradicts reports whether an evidence status proves the other path than
// p: software for asap2, offload proven for baseline.
func contradicts(p results.Path, status string) bool {
	return p == results.PathASAP2 && status == EvidenceSoftware ||
		p == results.PathBaseline && (status == EvidenceOffloadProven || status == EvidencePartialProof)
}
