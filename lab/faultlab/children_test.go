package faultlab

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A Ctrl-C of the fault matrix leaves nothing running (issue 25): a real
// process tree — this test binary as the matrix (HandleInterrupts, as
// suites/faults' TestMain), two "harness" children started as Start starts
// them, each with a grandchild — and the signal a terminal sends: SIGINT
// to the matrix's foreground process group. One harness ends on SIGINT
// after a short teardown; the other ignores it (as does its grandchild)
// and must be killed, by its process group, after the grace.

const helperEnv = "FAULTLAB_CHILDREN_HELPER"

// helperGrace is the matrix helper's wait for its children's teardown.
const helperGrace = 2 * time.Second

func TestHelperProcessTree(t *testing.T) {
	dir := os.Getenv("FAULTLAB_CHILDREN_DIR")
	switch os.Getenv(helperEnv) {
	case "matrix":
		helperMatrix(dir)
	case "harness", "stubborn":
		helperHarness(dir, os.Getenv(helperEnv))
	default:
		t.Skip("a helper process of TestInterruptEndsTheProcessTree")
	}
}

func helperMatrix(dir string) {
	HandleInterrupts(helperGrace)
	Started.AtStop(func() { _ = os.WriteFile(filepath.Join(dir, "at-stop"), nil, 0o644) })
	for _, mode := range []string{"harness", "stubborn"} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcessTree$")
		cmd.Env = append(os.Environ(), helperEnv+"="+mode)
		cmd.Stderr = os.Stderr
		OwnGroup(cmd)
		if err := cmd.Start(); err != nil {
			fmt.Println("start:", err)
			os.Exit(3)
		}
		done := make(chan struct{})
		Started.Add(mode, cmd.Process.Pid, done)
		go func() { _ = cmd.Wait(); close(done) }()
	}
	fmt.Println("started")
	waitForever() // the matrix's rows run until the signal
}

// waitForever blocks a helper until a signal ends it. Not select {}: in a
// binary built with cgo off, Go's deadlock detector ends a process whose
// goroutines are all blocked while no timer is pending ("fatal error: all
// goroutines are asleep - deadlock!", exit 2), and whether one of the
// runtime's own timers (the scavenger's) is pending when the last goroutine
// parks is a matter of timing. The stubborn helper (no signal.Notify, whose
// receiving goroutine also keeps the detector away) died so in 2 of 30 starts
// here (2026-12-07), and TestInterruptEndsTheProcessTree failed once with
// "pid N is not running before the signal". A sleeping goroutine keeps a
// timer pending.
func waitForever() {
	for {
		time.Sleep(time.Hour)
	}
}

// helperHarness starts a grandchild (sleep) and writes "pid grandchild-pid"
// to dir/<mode>. "harness" tears down for 300 ms on SIGINT and exits;
// "stubborn" ignores SIGINT, and so does its grandchild.
func helperHarness(dir, mode string) {
	if mode == "stubborn" {
		signal.Ignore(syscall.SIGINT)
	}
	sleep := exec.Command("sleep", "300")
	if err := sleep.Start(); err != nil {
		os.Exit(3)
	}
	tmp := filepath.Join(dir, mode+".tmp")
	_ = os.WriteFile(tmp, []byte(fmt.Sprintf("%d %d", os.Getpid(), sleep.Process.Pid)), 0o644)
	_ = os.Rename(tmp, filepath.Join(dir, mode))
	if mode == "harness" {
		sigs := make(chan os.Signal, 1)
		signal.Notify(sigs, syscall.SIGINT)
		<-sigs
		time.Sleep(300 * time.Millisecond) // its teardown
		os.Exit(130)
	}
	waitForever()
}

// stateOf is pid's state letter from /proc/PID/stat (Z: a zombie, its
// parent has not waited for it); "" when there is none.
func stateOf(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	s := string(b)
	if f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:]); len(f) > 0 {
		return f[0]
	}
	return ""
}

// alive tells whether pid runs (a zombie has ended).
func alive(pid int) bool { st := stateOf(pid); return st != "" && st != "Z" }

// describeState says a state letter of stateOf, or that there is none.
func describeState(st string) string {
	if st == "" {
		return "no /proc entry: gone and reaped"
	}
	return "state " + st
}

func TestInterruptEndsTheProcessTree(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a process tree for a few seconds")
	}
	t.Run("alone", func(t *testing.T) { interruptTree(t, false) })
	// As suites/faults/run.sh runs it: its output through a tee that the
	// Ctrl-C must not end (the stop and the teardown stay logged), and
	// whose end must not end the matrix (SIGPIPE) before its children.
	t.Run("through run.sh's tee", func(t *testing.T) { interruptTree(t, true) })
}

func interruptTree(t *testing.T, viaTee bool) {
	dir := t.TempDir()
	matrix := exec.Command(os.Args[0], "-test.run=^TestHelperProcessTree$")
	teeLog := filepath.Join(dir, "go-test.log")
	if viaTee {
		matrix = exec.Command("bash", "-c", `"$0" -test.run='^TestHelperProcessTree$' 2>&1 | (trap '' INT TERM; exec tee "$1")`, os.Args[0], teeLog)
	}
	matrix.Env = append(os.Environ(), helperEnv+"=matrix", "FAULTLAB_CHILDREN_DIR="+dir)
	matrix.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // the terminal's foreground group
	// A file, not a pipe: the children inherit it, and a pipe would keep
	// Wait from returning while any of them lives.
	stderr, err := os.Create(filepath.Join(dir, "matrix.stderr"))
	if err != nil {
		t.Fatal(err)
	}
	matrix.Stderr = stderr
	out, err := matrix.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := matrix.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	var pids []int
	var whats []string // what each of pids is, for a failure to name
	t.Cleanup(func() { // whatever the test's outcome, nothing of it stays
		for _, pid := range append(pids, matrix.Process.Pid) {
			_ = syscall.Kill(-pid, syscall.SIGKILL)
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	line, _ := bufio.NewReader(out).ReadString('\n')
	if strings.TrimSpace(line) != "started" {
		t.Fatalf("matrix helper: %q; stderr:\n%s", line, readFile(stderr.Name()))
	}
	go func() { exited <- matrix.Wait() }()
	deadline := time.Now().Add(10 * time.Second)
	for _, mode := range []string{"harness", "stubborn"} {
		var b []byte
		for time.Now().Before(deadline) {
			if b, err = os.ReadFile(filepath.Join(dir, mode)); err == nil {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if err != nil {
			t.Fatalf("%s helper never wrote its pids: %v", mode, err)
		}
		for i, f := range strings.Fields(string(b)) {
			pid, _ := strconv.Atoi(f)
			pids = append(pids, pid)
			whats = append(whats, mode+[]string{" helper", " helper's sleep"}[min(i, 1)])
		}
	}
	for i, pid := range pids {
		if !alive(pid) {
			// Seen once (make test beside another make test, 2026-12-07) and not
			// again in 40 runs under load: what the process was, whether it is
			// a zombie or gone, and what the helpers printed (a crash) say why.
			t.Fatalf("pid %d (the %s) is not running before the signal (%s); the helpers' stderr:\n%s",
				pid, whats[i], describeState(stateOf(pid)), readFile(stderr.Name()))
		}
	}

	sent := time.Now()
	if err := syscall.Kill(-matrix.Process.Pid, syscall.SIGINT); err != nil { // Ctrl-C
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		var ee *exec.ExitError
		if viaTee {
			break // the pipeline's status is tee's
		}
		if !errors.As(err, &ee) || ee.ExitCode() != 128+int(syscall.SIGINT) {
			t.Errorf("matrix exit: %v, want status %d", err, 128+int(syscall.SIGINT))
		}
	case <-time.After(helperGrace + ExitAfterKill):
		t.Fatalf("the matrix did not exit within its grace and the kill's bound; stderr:\n%s", readFile(stderr.Name()))
	}
	took := time.Since(sent)
	time.Sleep(100 * time.Millisecond) // the orphans' reaper
	for _, pid := range pids {
		if alive(pid) {
			t.Errorf("pid %d (%s) still runs after the matrix exited", pid, cmdline(pid))
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "at-stop")); err != nil {
		t.Errorf("the matrix's at-stop clean-up did not run: %v", err)
	}
	log := readFile(stderr.Name())
	if viaTee {
		log = readFile(teeLog)
	}
	for _, want := range []string{"SIGINT to harness (process group", "SIGINT to stubborn (process group", "SIGKILL to stubborn (process group"} {
		if !strings.Contains(log, want) {
			t.Errorf("stderr does not say %q:\n%s", want, log)
		}
	}
	if strings.Contains(log, "SIGKILL to harness") {
		t.Errorf("the harness that ended on SIGINT was killed too:\n%s", log)
	}
	if took < helperGrace || took > helperGrace+5*time.Second {
		t.Errorf("the matrix exited %s after the signal, want the grace (%s) and little more: the stubborn child is waited for, then killed", took, helperGrace)
	}
}

func cmdline(pid int) string {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return strings.ReplaceAll(string(b), "\x00", " ")
}

func readFile(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}

// A process a row starts after the stop began (the rows run on while the
// matrix waits for its children) is killed at once, with its group.
func TestStartedAfterStopIsKilled(t *testing.T) {
	c := &Children{}
	if never := c.Stop(io.Discard, syscall.SIGINT, time.Second, nil); len(never) != 0 {
		t.Fatalf("nothing to stop, yet: %v", never)
	}
	cmd := exec.Command("sleep", "300")
	OwnGroup(cmd)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	c.Add("late harness", cmd.Process.Pid, nil)
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "killed") {
			t.Errorf("late child ended with %v, want killed", err)
		}
	case <-time.After(5 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("a child added after Stop still runs")
	}
}
