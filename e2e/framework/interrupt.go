package framework

import (
	"fmt"
	"os"
	"os/signal"
	"sort"
	"strings"
	"sync"
	"syscall"

	"github.com/mosk-qa/asap2-e2e/e2e/harness"
	"github.com/mosk-qa/asap2-e2e/fixtures"
)

// Ginkgo answers a first SIGINT/SIGTERM by interrupting the running node
// and running every cleanup (the deletes); a second one makes it skip the
// cleanups not yet run and cancels the running one. Those deletes are then
// abandoned: the ledger below remembers which registered deletes have not
// succeeded, and the watcher says so on the second signal, with the sweeper
// command that removes them, instead of leaving the cloud dirty in silence.

// ledger holds the registered deletes that have not succeeded yet.
type ledger struct {
	mu      sync.Mutex
	next    int
	pending map[int]string
}

var deletes = &ledger{pending: map[int]string{}}

func (l *ledger) add(what string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.next++
	l.pending[l.next] = what
	return l.next
}

func (l *ledger) done(id int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.pending, id)
}

// Pending lists the registered deletes that have not succeeded, most
// recently registered first (the order Ginkgo would run them).
func (l *ledger) Pending() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	ids := make([]int, 0, len(l.pending))
	for id := range l.pending {
		ids = append(ids, id)
	}
	sort.Sort(sort.Reverse(sort.IntSlice(ids)))
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = l.pending[id]
	}
	return out
}

// watchInterrupts logs every SIGINT/SIGTERM the run receives: the first
// says the deletes will run, the second lists what is still in the cloud
// and how to sweep it (to harness.log and straight to stderr, since Ginkgo
// may be about to exit). It returns the function that stops watching.
func watchInterrupts(run *harness.Run) (stop func()) {
	ch := make(chan os.Signal, 4)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	quit := make(chan struct{})
	go func() {
		n := 0
		for {
			select {
			case <-quit:
				return
			case sig := <-ch:
				n++
				left := deletes.Pending()
				if n == 1 {
					run.Logf("interrupted (%s): stopping the run; the %d registered deletes run now (a second interrupt abandons them)", sig, len(left))
					continue
				}
				msg := fmt.Sprintf("interrupted again (%s): Ginkgo skips the remaining deletes", sig)
				if len(left) == 0 {
					msg += "; nothing of run " + run.RunID + " is left to delete"
				} else {
					msg += fmt.Sprintf("; NOT DELETED, still in the cloud (%d): %s; remove them with: %s",
						len(left), strings.Join(left, ", "), fixtures.SweepHint(run.Config.File, run.RunID, runGroup(run.Config)))
				}
				run.Logf("%s", msg)
				fmt.Fprintf(os.Stderr, "\n%s\n", msg)
			}
		}
	}()
	return func() {
		signal.Stop(ch)
		close(quit)
	}
}
