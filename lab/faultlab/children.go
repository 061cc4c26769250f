package faultlab

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"sort"
	"sync"
	"syscall"
	"time"
)

// Children are the processes the matrix started (the harness runs of Start,
// Occupy's stray iperf3 clients), each the leader of its own process group,
// so that a Ctrl-C of the matrix ends them and all they started, by their
// own group, never by name. Started holds every one of this process.
type Children struct {
	mu     sync.Mutex
	procs  map[int]child
	atStop []func()
	// stopping is set by Stop: a row still running may start a process
	// after Stop listed the children; Add kills it at once.
	stopping bool
}

type child struct {
	what string
	done <-chan struct{}
}

// Started is every process this matrix started and has not seen exit.
var Started = &Children{}

// OwnGroup makes cmd the leader of a new process group: a Ctrl-C at the
// terminal reaches the matrix alone, which forwards it (Stop).
func OwnGroup(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
}

// Add records a started process (its group leader pid) until done closes.
// Once Stop has begun, the process's group is killed at once instead: it
// has had no time to create anything.
func (c *Children) Add(what string, pid int, done <-chan struct{}) {
	c.mu.Lock()
	if c.stopping {
		c.mu.Unlock()
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		return
	}
	if c.procs == nil {
		c.procs = map[int]child{}
	}
	c.procs[pid] = child{what: what, done: done}
	c.mu.Unlock()
	go func() {
		<-done
		c.mu.Lock()
		delete(c.procs, pid)
		c.mu.Unlock()
	}()
}

// AtStop registers fn to run after Stop ended the children (the generated
// credentials' removal).
func (c *Children) AtStop(fn func()) {
	c.mu.Lock()
	c.atStop = append(c.atStop, fn)
	c.mu.Unlock()
}

func (c *Children) running() map[int]child {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[int]child, len(c.procs))
	for pid, ch := range c.procs {
		out[pid] = ch
	}
	return out
}

// signalGroups sends sig to the process group of every child still running.
func signalGroups(w io.Writer, procs map[int]child, sig syscall.Signal) {
	pids := make([]int, 0, len(procs))
	for pid := range procs {
		pids = append(pids, pid)
	}
	sort.Ints(pids)
	for _, pid := range pids {
		ch := procs[pid]
		select {
		case <-ch.done:
			continue
		default:
		}
		err := syscall.Kill(-pid, sig)
		if errors.Is(err, syscall.ESRCH) {
			continue
		}
		fmt.Fprintf(w, "fault matrix: %s to %s (process group %d)", sigName(sig), ch.what, pid)
		if err != nil {
			fmt.Fprintf(w, ": %v", err)
		}
		fmt.Fprintln(w)
	}
}

// waitAll waits until every child exited or deadline passes; more (a second
// Ctrl-C) is forwarded to them as it comes. It returns those still running.
func waitAll(w io.Writer, procs map[int]child, deadline time.Time, more <-chan os.Signal) map[int]child {
	for {
		left := map[int]child{}
		var one <-chan struct{}
		for pid, ch := range procs {
			select {
			case <-ch.done:
			default:
				left[pid] = ch
				one = ch.done
			}
		}
		if len(left) == 0 || !time.Now().Before(deadline) {
			return left
		}
		select {
		case <-one:
		case s := <-more:
			if sig, ok := s.(syscall.Signal); ok {
				signalGroups(w, left, sig)
			}
		case <-time.After(time.Until(deadline)):
		}
	}
}

// Stop ends every child: sig to each one's process group (the harness runs
// its teardown on SIGINT/SIGTERM), a wait of at most grace for all of them
// (a signal arriving on more meanwhile is forwarded: a second Ctrl-C makes
// the harness abandon its cleanups and name what it did not delete), then
// SIGKILL to the groups still there and a wait of at most ExitAfterKill.
// It reports each step on w and returns the children that never exited.
func (c *Children) Stop(w io.Writer, sig syscall.Signal, grace time.Duration, more <-chan os.Signal) []string {
	c.mu.Lock()
	c.stopping = true
	c.mu.Unlock()
	procs := c.running()
	signalGroups(w, procs, sig)
	left := waitAll(w, procs, time.Now().Add(grace), more)
	if len(left) > 0 {
		signalGroups(w, left, syscall.SIGKILL)
		left = waitAll(w, left, time.Now().Add(ExitAfterKill), nil)
	}
	c.mu.Lock()
	fns := c.atStop
	c.atStop = nil
	c.mu.Unlock()
	for _, fn := range fns {
		fn()
	}
	var never []string
	for pid, ch := range left {
		never = append(never, fmt.Sprintf("%s (pid %d)", ch.what, pid))
	}
	sort.Strings(never)
	return never
}

// HandleInterrupts makes SIGINT and SIGTERM end the matrix cleanly: every
// child is stopped (Stop, grace for the harness's teardown) and the process
// exits with 128 + the signal's number. TestMain calls it first; the
// returned func stops the handling.
func HandleInterrupts(grace time.Duration) (stop func()) {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	// A reader of our output that the same Ctrl-C ended (go test's, a tee)
	// must not end us by SIGPIPE before the children are: writes then fail.
	signal.Ignore(syscall.SIGPIPE)
	quit := make(chan struct{})
	go func() {
		select {
		case s := <-sigs:
			sig := s.(syscall.Signal)
			fmt.Fprintf(os.Stderr, "fault matrix: %s: ending the processes it started (each its own process group), waiting at most %s for their teardown\n", sigName(sig), grace)
			if never := Started.Stop(os.Stderr, sig, grace, sigs); len(never) > 0 {
				fmt.Fprintf(os.Stderr, "fault matrix: still running after SIGKILL: %v\n", never)
			}
			os.Exit(128 + int(sig))
		case <-quit:
		}
	}()
	return func() { signal.Stop(sigs); close(quit) }
}

func sigName(sig syscall.Signal) string {
	switch sig {
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGKILL:
		return "SIGKILL"
	}
	return sig.String()
}
