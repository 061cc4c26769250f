package harness

import (
	"sync"
	"time"
)

// Timings accumulates wall time per phase (the results.Phase* names);
// safe for concurrent use.
type Timings struct {
	mu    sync.Mutex
	order []string
	spent map[string]time.Duration
}

// Track starts timing phase and returns the function that stops it.
func (t *Timings) Track(phase string) (stop func()) {
	start := time.Now()
	return func() { t.Add(phase, time.Since(start)) }
}

// Add adds d to phase.
func (t *Timings) Add(phase string, d time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.spent == nil {
		t.spent = map[string]time.Duration{}
	}
	if _, seen := t.spent[phase]; !seen {
		t.order = append(t.order, phase)
	}
	t.spent[phase] += d
}

// PhaseTime is one row of the breakdown.
type PhaseTime struct {
	Phase string
	Spent time.Duration
}

// Snapshot returns the phases in the order they were first seen.
func (t *Timings) Snapshot() []PhaseTime {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]PhaseTime, 0, len(t.order))
	for _, p := range t.order {
		out = append(out, PhaseTime{Phase: p, Spent: t.spent[p]})
	}
	return out
}
