package harness

import (
	"context"
	"testing"
	"time"
)

// A pair that leaves a round before its clients started (its repeat failed
// early) no longer holds the others back, yet returns only once their
// window has closed: what it does next (the look after its failure) never
// falls inside it. A round every pair leaves has no window.
func TestGateLeaveWaitsForTheWindow(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	g := NewGate([]string{"p01", "p02"})
	left := make(chan time.Time)
	go func() {
		if err := g.Leave(ctx, "r1", "p01"); err != nil {
			t.Error(err)
		}
		left <- time.Now()
	}()
	time.Sleep(50 * time.Millisecond) // p01 leaves first
	if err := g.Start(ctx, "r1", "p02"); err != nil {
		t.Fatalf("start: %v", err)
	}
	time.Sleep(100 * time.Millisecond) // p02's window
	select {
	case at := <-left:
		t.Fatalf("Leave returned at %s, inside p02's window", at)
	default:
	}
	if err := g.Done(ctx, "r1", "p02"); err != nil {
		t.Fatalf("done: %v", err)
	}
	at := <-left
	w := g.Windows()
	if len(w) != 1 || len(w[0].Pairs) != 1 || w[0].Pairs[0] != "p02" || at.Before(w[0].Close) {
		t.Errorf("windows %+v, left at %s", w, at)
	}

	// Each pair leaves from its own goroutine, as runTogether's do.
	errs := make(chan error, 2)
	for _, p := range []string{"p01", "p02"} {
		go func() { errs <- g.Leave(ctx, "r2", p) }()
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if len(g.Windows()) != 1 {
		t.Errorf("a round every pair left opened a window: %+v", g.Windows())
	}
	if err := g.Start(ctx, "r3", "p03"); err == nil {
		t.Error("a pair the gate does not know started")
	}
}
