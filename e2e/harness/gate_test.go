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

// A pair that quits the gate (its checks stopped before their flows) no
// longer holds back any round, the ones under way or the later ones, and
// returns only once the rounds under way are over. Each window records
// when each pair was let go: its start skew.
func TestGateQuitAndSkew(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	g := NewGate([]string{"p01", "p02", "p03"})
	started := make(chan error, 2)
	for _, p := range []string{"p01", "p02"} {
		go func() { started <- g.Start(ctx, "tcp", p) }()
	}
	time.Sleep(50 * time.Millisecond)
	quit := make(chan time.Time)
	go func() {
		if err := g.Quit(ctx, "p03"); err != nil {
			t.Error(err)
		}
		quit <- time.Now()
	}()
	for range 2 {
		if err := <-started; err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(50 * time.Millisecond) // the window of p01 and p02
	select {
	case at := <-quit:
		t.Fatalf("Quit returned at %s, inside the others' window", at)
	default:
	}
	for _, p := range []string{"p01", "p02"} {
		go func() { started <- g.Done(ctx, "tcp", p) }()
	}
	for range 2 {
		if err := <-started; err != nil {
			t.Fatal(err)
		}
	}
	at := <-quit
	// A later round opens without p03.
	for _, p := range []string{"p01", "p02"} {
		go func() { started <- g.Start(ctx, "udp", p) }()
	}
	for range 2 {
		if err := <-started; err != nil {
			t.Fatal(err)
		}
	}
	ws := g.Windows()
	if len(ws) != 2 || ws[0].Key != "tcp" || ws[1].Key != "udp" || at.Before(ws[0].Close) {
		t.Fatalf("windows %+v, quit at %s", ws, at)
	}
	for _, w := range ws {
		if len(w.Starts) != 2 || w.Starts["p03"] != (time.Time{}) {
			t.Errorf("window %s: starts %v, want p01 and p02", w.Key, w.Starts)
		}
		if s := w.Skew(); s < 0 || s > 50*time.Millisecond {
			t.Errorf("window %s: skew %s", w.Key, s)
		}
	}
	// A start after the window closed (a pair running its flow again on
	// its own) returns at once and is not the window's.
	if err := g.Start(ctx, "tcp", "p01"); err != nil {
		t.Fatal(err)
	}
	if w := g.Windows()[0]; w.Starts["p01"] != ws[0].Starts["p01"] {
		t.Errorf("a late start moved p01's start in the closed window")
	}
	if (Window{Starts: map[string]time.Time{"a": ws[0].Open, "b": ws[0].Open.Add(300 * time.Millisecond)}}).Skew() != 300*time.Millisecond {
		t.Error("skew is not the spread of the starts")
	}
}
