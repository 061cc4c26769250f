package lateness

import (
	"runtime"
	"testing"
	"time"
)

// A process that gets no CPU for a while shows it as lateness: with
// GOMAXPROCS 1, a goroutine that spins without yielding for 300 ms keeps
// the canary from running (Go preempts it only every 10 ms or so, and
// the canary then has a few µs), so its timers end late by most of that.
// A quiet process shows far less than what it withheld here.
func TestCanarySeesWithheldCPU(t *testing.T) {
	quiet := Start()
	time.Sleep(300 * time.Millisecond)
	q := quiet.Stop()

	prev := runtime.GOMAXPROCS(1)
	defer runtime.GOMAXPROCS(prev)
	c := Start()
	time.Sleep(20 * time.Millisecond) // the canary runs
	spin(300 * time.Millisecond)
	late := c.Stop()
	t.Logf("quiet 300 ms: %s late; 300 ms of one spinning goroutine on one P: %s late", q, late)
	if late < 100*time.Millisecond {
		t.Errorf("the canary saw %s of lateness while a goroutine held the only P for 300 ms", late)
	}
}

func spin(d time.Duration) {
	end := time.Now().Add(d)
	n := 0
	for time.Now().Before(end) {
		n++
	}
	_ = n
}
