package harness

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/internal/fakeremote"
	"github.com/mosk-qa/asap2-e2e/e2e/iperf3"
	"github.com/mosk-qa/asap2-e2e/e2e/remote"
	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// The output directory becoming unwritable stops the run at once with that
// sentence (issue 25: a full output directory let a run go on ~90 s,
// measuring what it could no longer record). /dev/full is a real full
// device: every write to it fails with ENOSPC, as on a full file system.
func TestOutputDirFullStopsTheRunAtOnce(t *testing.T) {
	wd := newPair(t)
	wd.cfg.Traffic.Duration = 2 * time.Second
	wd.cfg.Traffic.Repeats = 3
	out := iperfJSON(t, "v3.12-tcp-p1.json")
	wd.guests[1].Play.Client = fakeremote.SleepThen(func(bool) remote.Result { return remote.Result{Stdout: out} })
	s := wd.session()
	s.Results.SetGuard(s.run)
	full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Skipf("no /dev/full: %v", err)
	}
	defer full.Close()
	s.run.logFile = full // harness.log on a full file system
	before, err := os.ReadFile(s.Results.Path())
	if err != nil {
		t.Fatal(err)
	}

	p, _ := iperf3.Lookup("tcp-p1")
	start := time.Now()
	_, err = s.RunProfile(context.Background(), p)
	took := time.Since(start)
	want := "output directory " + s.Dir + " is no longer writable, the run stops: write /dev/full: no space left on device"
	if err == nil || err.Error() != want {
		t.Fatalf("RunProfile:\n got  %v\n want %s", err, want)
	}
	if took > time.Second {
		t.Errorf("RunProfile went on %s after the first failed write (a window is %s, 3 repeats)", took, wd.cfg.Traffic.Duration)
	}
	if n := strings.Count(wd.console.String(), want); n != 1 {
		t.Errorf("the console says the sentence %d times, want once:\n%s", n, wd.console.String())
	}

	// Every later step refuses at once, with the same sentence.
	for name, step := range map[string]func() error{
		"profile":        func() error { _, err := s.RunProfile(context.Background(), p); return err },
		"offload checks": func() error { _, err := s.RunOffloadChecks(context.Background()); return err },
		"latency": func() error {
			_, err := s.RunLatency(context.Background(), results.LatencyShape{ID: results.LatencyIdleID, Kind: results.LatencyPingPong})
			return err
		},
		"environment": func() error { return s.CollectEnvironment(context.Background()) },
	} {
		start := time.Now()
		if err := step(); err == nil || err.Error() != want {
			t.Errorf("%s after the loss: %v", name, err)
		}
		if d := time.Since(start); d > 100*time.Millisecond {
			t.Errorf("%s took %s to refuse", name, d)
		}
	}

	// Teardown writes nothing else, even where it could.
	s.run.logFile = nil
	s.CollectTopologyEvidence(context.Background())
	if _, err := s.SaveArtifact("late.txt", []byte("x")); err == nil {
		t.Error("an artifact was saved after the loss")
	}
	if err := s.run.Close(); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Close: %v", err)
	}
	after, _ := os.ReadFile(s.Results.Path())
	if !bytes.Equal(before, after) {
		t.Errorf("results.json was rewritten after the loss:\n%s", after)
	}
	ents, _ := os.ReadDir(s.Dir)
	for _, e := range ents {
		if e.Name() != ResultsFile {
			t.Errorf("written after the loss: %s", e.Name())
		}
	}
}

// A results write that fails (the run directory gone) is the same loss.
func TestResultsWriteFailureIsTheLoss(t *testing.T) {
	wd := newPair(t)
	s := wd.session()
	s.Results.SetGuard(s.run)
	if err := os.RemoveAll(s.Dir); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(s.Dir, nil, 0o644); err != nil { // a file where the directory was
		t.Fatal(err)
	}
	err := s.Results.Update(func(r *results.Results) { r.Errors = append(r.Errors, "x") })
	if err == nil || !strings.HasPrefix(err.Error(), "output directory "+s.Dir+" is no longer writable, the run stops: ") || s.run.OutputLost() == nil {
		t.Fatalf("results write into a lost directory: %v (lost: %v)", err, s.run.OutputLost())
	}
}

// At start: the output directory is created and written to, and must have
// room for a run's artifacts (plan.ArtifactsEstimate).
func TestCheckOutputDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	if err := CheckOutputDir(dir, 1<<20, "test"); err != nil {
		t.Fatalf("a writable directory with room: %v", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("the probe was left behind: %v", ents)
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	free := int64(st.Bavail) * int64(st.Bsize)
	err := CheckOutputDir(dir, free+(1<<30), "the rule")
	if err == nil || !strings.Contains(err.Error(), "run.output_dir "+dir+": ") || !strings.Contains(err.Error(), " free, a run's artifacts need about ") || !strings.Contains(err.Error(), "(the rule)") {
		t.Errorf("no room: %v", err)
	}
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := CheckOutputDir(filepath.Join(file, "out"), 1, "test"); err == nil || !strings.Contains(err.Error(), "run.output_dir "+filepath.Join(file, "out")+": cannot be created") {
		t.Errorf("under a file: %v", err)
	}
	if err := CheckOutputDir("/proc/self", 1, "test"); err == nil || !strings.Contains(err.Error(), "not writable") {
		t.Errorf("/proc/self: %v", err)
	}
}
