// Package lateness measures how late this process's own timers fire, for
// tests that bound an elapsed time: "failed within its bound and the kill's
// grace periods" is a claim about the code's waits, and on a starved
// machine (go test -race in CI's background, at nice 19 beside two busy
// cores) each of those waits ends late by what the scheduler withheld.
// A test adds the lateness measured over the same span to its allowance,
// so that it fails when the code waits longer than it should and not when
// the machine was busy. Only tests import it.
package lateness

import "time"

// Tick is how often the canary asks to be woken.
const Tick = 5 * time.Millisecond

// Canary sleeps Tick after Tick and sums how much later than asked each
// sleep ended (late: its goroutine's alone until done is closed).
type Canary struct {
	stop chan struct{}
	done chan struct{}
	late time.Duration
}

// Start starts a canary and returns once it measures.
func Start() *Canary {
	c := &Canary{stop: make(chan struct{}), done: make(chan struct{})}
	armed := make(chan struct{})
	go c.run(armed)
	<-armed
	return c
}

func (c *Canary) run(armed chan<- struct{}) {
	defer close(c.done)
	asked := time.Now()
	t := time.NewTimer(Tick)
	defer t.Stop()
	close(armed)
	for {
		select {
		case <-c.stop:
			return
		case <-t.C:
		}
		now := time.Now()
		if d := now.Sub(asked) - Tick; d > 0 {
			c.late += d
		}
		asked = now
		t.Reset(Tick)
	}
}

// Stop ends the canary and returns the lateness summed since Start.
func (c *Canary) Stop() time.Duration {
	close(c.stop)
	<-c.done
	return c.late
}
