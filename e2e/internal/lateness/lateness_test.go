package lateness

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// A process the kernel does not run is late by that much: the test runs
// itself again as a child with a canary, stops it (SIGSTOP) for 300 ms,
// continues it, and reads the lateness the canary saw.
func TestCanarySeesAStoppedProcess(t *testing.T) {
	if os.Getenv("LATENESS_CHILD") == "1" {
		c := Start()
		fmt.Println("ready")
		bufio.NewReader(os.Stdin).ReadString('\n') // until the parent says so
		fmt.Printf("late %d\n", int64(c.Stop()))
		os.Exit(0)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestCanarySeesAStoppedProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), "LATENESS_CHILD=1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	out := bufio.NewReader(stdout)
	if l, err := out.ReadString('\n'); err != nil || l != "ready\n" {
		t.Fatalf("the child said %q, %v", l, err)
	}
	const stopped = 300 * time.Millisecond
	if err := cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	// A thread stops when it next runs: on a busy machine that can be
	// tens of ms after the signal (the stop seen as 282 ms of 300 when
	// timed from kill(2)). The 300 ms start once every thread is stopped.
	waitStopped(t, cmd.Process.Pid)
	time.Sleep(stopped)
	if err := cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond) // the canary's wake after the stop
	fmt.Fprintln(stdin)
	l, err := out.ReadString('\n')
	var ns int64
	if _, serr := fmt.Sscanf(l, "late %d", &ns); err != nil || serr != nil {
		t.Fatalf("the child said %q, %v", l, err)
	}
	late := time.Duration(ns)
	t.Logf("stopped %s: the canary saw %s of lateness", stopped, late)
	// The canary's timer ran out during the stop, at most one Tick after
	// it began, and fired when the process went on (one Tick more for the
	// signals' own delivery).
	if late < stopped-2*Tick {
		t.Errorf("the canary saw %s of lateness over a process stopped %s", late, stopped)
	}
}

// waitStopped returns once every thread of process pid is in state T
// (stopped by a signal), as /proc/PID/task/*/stat say.
func waitStopped(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		stats, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/stat", pid))
		all := len(stats) > 0
		for _, f := range stats {
			b, err := os.ReadFile(f)
			// the state is the field after the command's closing parenthesis
			i := bytes.LastIndexByte(b, ')')
			if err != nil || i < 0 || i+2 >= len(b) || b[i+2] != 'T' {
				all = false
				break
			}
		}
		if all {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %d not stopped 10 s after SIGSTOP", pid)
		}
		time.Sleep(time.Millisecond)
	}
}

// A quiet process is late by its timers' slack alone: logged, not judged
// (what a machine's scheduler gives is not this package's claim).
func TestCanaryQuiet(t *testing.T) {
	c := Start()
	time.Sleep(300 * time.Millisecond)
	t.Logf("300 ms of a quiet wait: %s late", c.Stop())
}
