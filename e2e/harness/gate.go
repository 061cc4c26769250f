package harness

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"sync"
	"time"
)

// Gate is the start barrier of a concurrent fleet (fleet.mode: concurrent),
// as Shaker's synchronised start: every pair runs the same measured windows
// (one per profile and repeat, a round named by its key), and a round's
// window opens — every pair's iperf3 clients launched — only when every
// pair stands at it with its servers listening and its client commands
// built (Start), and closes only when every pair's clients have returned
// (Done). Nothing that polls a guest or a hypervisor runs between the two
// (RunProfile reads the hypervisors' CPU before Start and after Done, and
// stops the servers after Done), so no pair's window is disturbed by
// another pair's commands. A pair that will not take part in a round (its
// repeat failed before its clients started, the topology is damaged, the
// pair is done) leaves it (Leave), and the others no longer wait for it.
type Gate struct {
	parties []string
	now     func() time.Time

	mu      sync.Mutex
	rounds  map[string]*round
	windows []Window
	// quit are the parties that take part in no further round (Quit).
	quit map[string]bool
}

// Window is one round's measured window: opened when the last pair
// reached the start, closed when the last pair's clients returned; Pairs
// are the pairs whose clients ran in it, Starts when each of them was let
// go (its Start returned, its clients launched right after).
type Window struct {
	Key         string
	Open, Close time.Time
	Pairs       []string
	Starts      map[string]time.Time
}

// Skew is the spread of the pairs' starts in the window: the last one let
// go against the first (0 for one pair or none).
func (w Window) Skew() time.Duration {
	var first, last time.Time
	for _, at := range w.Starts {
		if first.IsZero() || at.Before(first) {
			first = at
		}
		if at.After(last) {
			last = at
		}
	}
	return last.Sub(first)
}

type round struct {
	started, done, left map[string]bool
	open, closed        chan struct{}
	// over closes with closed, or when every pair left before any started
	// (the round has no window).
	over   chan struct{}
	window int // index in Gate.windows once open, else -1
}

// NewGate is the gate of parties (the pairs' names).
func NewGate(parties []string) *Gate {
	return &Gate{parties: append([]string(nil), parties...), now: time.Now, rounds: map[string]*round{}}
}

func (g *Gate) round(key string) *round {
	r, ok := g.rounds[key]
	if !ok {
		r = &round{started: map[string]bool{}, done: map[string]bool{}, left: map[string]bool{},
			open: make(chan struct{}), closed: make(chan struct{}), over: make(chan struct{}), window: -1}
		for p := range g.quit {
			r.left[p] = true
		}
		g.rounds[key] = r
	}
	return r
}

func (g *Gate) known(party string) error {
	for _, p := range g.parties {
		if p == party {
			return nil
		}
	}
	return fmt.Errorf("gate: %q is not one of its pairs %v", party, g.parties)
}

// settle opens and closes r when every party is there or gone; g.mu held.
func (g *Gate) settle(key string, r *round) {
	count := func(in map[string]bool) int {
		n := 0
		for _, p := range g.parties {
			if in[p] || r.left[p] {
				n++
			}
		}
		return n
	}
	if r.window < 0 && len(r.started) > 0 && count(r.started) == len(g.parties) {
		var pairs []string
		for p := range r.started {
			pairs = append(pairs, p)
		}
		sort.Strings(pairs)
		r.window = len(g.windows)
		g.windows = append(g.windows, Window{Key: key, Open: g.now(), Pairs: pairs, Starts: map[string]time.Time{}})
		close(r.open)
	}
	select {
	case <-r.over:
		return
	default:
	}
	switch {
	case r.window >= 0 && count(r.done) == len(g.parties):
		g.windows[r.window].Close = g.now()
		close(r.closed)
		close(r.over)
	case r.window < 0 && len(r.left) == len(g.parties):
		close(r.over)
	}
}

// Start is party at round key's start: it returns when every pair is
// there or has left, or when ctx ends.
func (g *Gate) Start(ctx context.Context, key, party string) error {
	if err := g.known(party); err != nil {
		return err
	}
	g.mu.Lock()
	r := g.round(key)
	r.started[party] = true
	g.settle(key, r)
	g.mu.Unlock()
	select {
	case <-r.open:
		g.mu.Lock()
		// A start after the window closed (a pair running a window again
		// on its own) is not the window's.
		if w := &g.windows[r.window]; w.Close.IsZero() {
			if _, ok := w.Starts[party]; !ok {
				w.Starts[party] = g.now()
			}
		}
		g.mu.Unlock()
		return nil
	case <-ctx.Done():
		g.leave(key, party)
		return fmt.Errorf("waiting for every pair at the start of %s: %w", key, context.Cause(ctx))
	}
}

// Done is party's clients returned in round key: it returns when every
// pair's have, or ctx ends.
func (g *Gate) Done(ctx context.Context, key, party string) error {
	if err := g.known(party); err != nil {
		return err
	}
	g.mu.Lock()
	r := g.round(key)
	r.done[party] = true
	g.settle(key, r)
	g.mu.Unlock()
	select {
	case <-r.closed:
		return nil
	case <-ctx.Done():
		g.leave(key, party)
		return fmt.Errorf("waiting for every pair at the end of %s: %w", key, context.Cause(ctx))
	}
}

// Leave says party takes no (further) part in round key, so the others
// stop waiting for it, and returns when the round is over (its window
// closed, or none opened) or ctx ends: a pair whose repeat failed before
// its clients started looks at what went wrong (the look after a failed
// window polls its guests and hypervisors) only once no window runs.
// Leaving a round one already finished returns at once.
func (g *Gate) Leave(ctx context.Context, key, party string) error {
	r := g.leave(key, party)
	if r == nil {
		return g.known(party)
	}
	select {
	case <-r.over:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("waiting for the other pairs' window %s to close: %w", key, context.Cause(ctx))
	}
}

// Quit says party takes part in no further round of the gate: every
// round not over yet, and every later one, no longer waits for it. It
// returns once every round under way is over, or ctx ends: a pair that
// stopped early (its window refused, its flood ping failed) is done only
// when no window of its round runs.
func (g *Gate) Quit(ctx context.Context, party string) error {
	if err := g.known(party); err != nil {
		return err
	}
	g.mu.Lock()
	if g.quit == nil {
		g.quit = map[string]bool{}
	}
	g.quit[party] = true
	var waits []<-chan struct{}
	for _, key := range slices.Sorted(maps.Keys(g.rounds)) {
		r := g.rounds[key]
		r.left[party] = true
		g.settle(key, r)
		waits = append(waits, r.over)
	}
	g.mu.Unlock()
	for _, over := range waits {
		select {
		case <-over:
		case <-ctx.Done():
			return fmt.Errorf("waiting for the other pairs' windows to close: %w", context.Cause(ctx))
		}
	}
	return nil
}

func (g *Gate) leave(key, party string) *round {
	if g.known(party) != nil {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	r := g.round(key)
	r.left[party] = true
	g.settle(key, r)
	return r
}

// Windows are the rounds' windows in the order they opened (a window not
// yet closed has a zero Close).
func (g *Gate) Windows() []Window {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := append([]Window(nil), g.windows...)
	for i, w := range out {
		out[i].Pairs = append([]string(nil), w.Pairs...)
		out[i].Starts = make(map[string]time.Time, len(w.Starts))
		for p, at := range w.Starts {
			out[i].Starts[p] = at
		}
	}
	return out
}

// roundKey names a measured window of profile id, repeat rep.
func roundKey(id string, rep int) string { return fmt.Sprintf("%s repeat %d", id, rep) }
