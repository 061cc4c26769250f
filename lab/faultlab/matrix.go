package faultlab

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/faultproxy"
)

// Row is one line of the matrix table.
type Row struct {
	Name      string  `json:"name"`
	Fault     string  `json:"fault"`
	Phase     string  `json:"phase"`
	Outcome   string  `json:"outcome"`
	Leftovers string  `json:"leftovers"`
	Seconds   float64 `json:"seconds"`
	Passed    bool    `json:"passed"`
	RunID     string  `json:"run_id,omitempty"`
	// FaultToFailureSeconds is how long the harness took from the fault to
	// its failure (rows of faults that do not stop the run at once).
	FaultToFailureSeconds *float64 `json:"fault_to_failure_seconds,omitempty"`
}

// Matrix collects the rows of one matrix run.
type Matrix struct {
	mu   sync.Mutex
	rows []Row
}

// Record registers the row; its Passed and Seconds are filled when the
// subtest ends.
func (m *Matrix) Record(t testing.TB, fault, phase string) *Row {
	r := &Row{Name: t.Name(), Fault: fault, Phase: phase}
	start := time.Now()
	t.Cleanup(func() {
		r.Seconds = time.Since(start).Round(time.Second).Seconds()
		r.Passed = !t.Failed()
		m.mu.Lock()
		m.rows = append(m.rows, *r)
		m.mu.Unlock()
	})
	return r
}

// Rows returns the rows recorded so far, sorted by name.
func (m *Matrix) Rows() []Row {
	m.mu.Lock()
	defer m.mu.Unlock()
	rows := append([]Row(nil), m.rows...)
	sort.Slice(rows, func(i, j int) bool { return rows[i].Name < rows[j].Name })
	return rows
}

// RenderMatrix is matrix.md: the table of rows (sorted by name) and the
// line about the secrets search (secretKinds searched for in filesSearched
// files).
func RenderMatrix(rows []Row, now time.Time, total time.Duration, secretKinds []string, filesSearched int64) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Fault matrix on the lab (%s, %d rows, %s wall time)\n\n", now.UTC().Format(time.RFC3339), len(rows), total.Round(time.Second))
	b.WriteString("| fault | phase | outcome | fault → failure s | leftovers | s | pass |\n|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		pass := "yes"
		if !r.Passed {
			pass = "**NO**"
		}
		f2f := "–"
		if r.FaultToFailureSeconds != nil {
			f2f = fmt.Sprintf("%.1f", *r.FaultToFailureSeconds)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %.0f | %s |\n", r.Fault, r.Phase, mdCell(r.Outcome), f2f, mdCell(r.Leftovers), r.Seconds, pass)
	}
	leaked := 0
	for _, r := range rows {
		if strings.Contains(r.Leftovers, "SECRETS") {
			leaked++
		}
	}
	fmt.Fprintf(&b, "\nSecrets: %s (given through secure.yaml; clouds.yaml holds none) searched in %d files "+
		"(configs, console, JUnit, harness.log, api.log, commands, results, reports, evidence, sweeper output) of all rows: found in %d rows.\n",
		strings.Join(secretKinds, ", "), filesSearched, leaked)
	return b.String()
}

// WriteMatrix writes the matrix's rows to dir/matrix.md (RenderMatrix, also
// printed on stderr) and dir/matrix.json.
func (e *Env) WriteMatrix(m *Matrix, total time.Duration) error {
	rows := m.Rows()
	md := RenderMatrix(rows, time.Now(), total, e.SecretKinds(), e.FilesSearched.Load())
	if err := os.WriteFile(filepath.Join(e.Out, "matrix.md"), []byte(md), 0o644); err != nil {
		return err
	}
	js, _ := json.MarshalIndent(rows, "", "  ")
	fmt.Fprint(os.Stderr, "\n"+md)
	return os.WriteFile(filepath.Join(e.Out, "matrix.json"), append(js, '\n'), 0o644)
}

func mdCell(s string) string { return strings.ReplaceAll(strings.ReplaceAll(s, "|", "\\|"), "\n", " ") }

// SetFaultToFailure records the time from the fault to the failure.
func (row *Row) SetFaultToFailure(d time.Duration) {
	s := d.Round(100 * time.Millisecond).Seconds()
	row.FaultToFailureSeconds = &s
}

// FaultToFailure records the time from fault to the first harness.log line
// after it matching re; the row fails when there is none.
func (row *Row) FaultToFailure(t testing.TB, log string, fault time.Time, re string) {
	t.Helper()
	at, _, ok := FirstLogLine(log, fault, re)
	if !ok {
		t.Errorf("harness.log has no line matching %q after the fault at %s", re, fault.UTC().Format(time.RFC3339))
		return
	}
	row.SetFaultToFailure(at.Sub(fault))
}

// Ending checks what every row must end with: nothing of the run in the
// cloud (openstack CLI), no orphan tool process, no secret in any file.
func Ending(t testing.TB, r *Run, row *Row) {
	t.Helper()
	row.RunID = r.RunID
	if r.RunID == "" {
		r.FindRunDir()
		row.RunID = r.RunID
	}
	if r.RunID == "" {
		t.Fatalf("the run wrote no harness.log under %s", r.OutDir)
	}
	left, err := r.env.Listing(context.Background(), r.RunID)
	if err != nil {
		t.Fatalf("listing run %s: %v", r.RunID, err)
	}
	row.Leftovers = "none"
	if len(left) > 0 {
		row.Leftovers = strings.Join(left, "; ")
		t.Errorf("run %s left in the cloud (openstack CLI):\n  %s", r.RunID, strings.Join(left, "\n  "))
	}
	if o := r.Orphans(r.Topology()); len(o) > 0 {
		row.Leftovers += fmt.Sprintf("; %d orphan processes", len(o))
		for _, p := range o {
			t.Errorf("orphan process of run %s: %s", r.RunID, p)
		}
	}
	if s := r.SecretsFound(); len(s) > 0 {
		row.Leftovers += "; SECRETS: " + strings.Join(s, ", ")
		t.Errorf("credentials found in the run's files: %v", s)
	}
}

// EndingRefused is Ending for a run the harness refused before it began
// (no run id, no run directory): every request it made went through the
// row's fault proxy in, which must have seen none (so nothing was created,
// not even a token asked for), no file may be left in its output directory
// outDir (its own probe removed), and no secret in the row's files.
func EndingRefused(t testing.TB, r *Run, row *Row, in *faultproxy.Injector) {
	t.Helper()
	row.Leftovers = "none (no request reached the cloud)"
	if h := in.Hits(); len(h) > 0 {
		row.Leftovers = fmt.Sprintf("%d requests reached the cloud", len(h))
		for _, x := range h {
			t.Errorf("the refused run sent %s %s", x.Method, x.URL)
		}
	}
	ents, err := os.ReadDir(r.OutDir)
	if err != nil {
		t.Errorf("run.output_dir %s: %v", r.OutDir, err)
	}
	for _, en := range ents {
		row.Leftovers += "; left " + en.Name() + " in run.output_dir"
		t.Errorf("the refused run left %s in run.output_dir %s", en.Name(), r.OutDir)
	}
	if r.FindRunDir() {
		t.Errorf("the refused run began: harness.log of run %s exists", r.RunID)
	}
	if s := r.SecretsFound(); len(s) > 0 {
		row.Leftovers += "; SECRETS: " + strings.Join(s, ", ")
		t.Errorf("credentials found in the run's files: %v", s)
	}
}

// MustContain returns the first line of text matching re; the row fails
// when there is none.
func MustContain(t testing.TB, what, text, re string) string {
	t.Helper()
	line := GrepLine(text, re)
	if line == "" {
		t.Errorf("%s has no line matching %q; tail:\n%s", what, re, Tail(text, 25))
	}
	return line
}

// NewInjector is a fault proxy injector of rules that logs every fault it
// makes to the row.
func NewInjector(t testing.TB, rules []faultproxy.Rule) *faultproxy.Injector {
	t.Helper()
	in, err := faultproxy.NewInjector(faultproxy.Plan{Rules: rules}, func(h faultproxy.Hit) {
		t.Logf("fault %s: %s %s", h.Rule, h.Method, h.URL)
	})
	if err != nil {
		t.Fatal(err)
	}
	return in
}
