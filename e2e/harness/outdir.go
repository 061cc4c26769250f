package harness

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/plan"
)

// The run's output directory: checked at start (writable, room for a run's
// artifacts), and watched while the run goes on: the first write that fails
// stops the run at once with that sentence. Teardown and the leak check
// still run and write nothing else (the console still gets their lines).

// CheckOutputDir makes sure dir (run.output_dir) can take a run: it is
// created, a file written to it, synced and removed, and its file system
// has at least need bytes free for an unprivileged writer.
func CheckOutputDir(dir string, need int64, rule string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("run.output_dir %s: cannot be created: %w", dir, err)
	}
	probe := filepath.Join(dir, fmt.Sprintf(".writable-%d", os.Getpid()))
	f, err := os.OpenFile(probe, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err == nil {
		_, err = f.Write([]byte("asap2-e2e\n"))
		if serr := f.Sync(); err == nil {
			err = serr
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		_ = os.Remove(probe)
	}
	if err != nil {
		return fmt.Errorf("run.output_dir %s: not writable: %w", dir, err)
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return fmt.Errorf("run.output_dir %s: free space unknown: %w", dir, err)
	}
	if free := int64(st.Bavail) * int64(st.Bsize); free < need {
		return fmt.Errorf("run.output_dir %s: %s free, a run's artifacts need about %s (%s)", dir, plan.MiB(free), plan.MiB(need), rule)
	}
	return nil
}

// OutputLost is non-nil once a write into the run's directory failed: the
// sentence every later step fails with.
func (run *Run) OutputLost() error {
	run.lostMu.Lock()
	defer run.lostMu.Unlock()
	return run.lost
}

// Refused is results.OutputGuard's: nothing is written once output is lost.
func (run *Run) Refused() error { return run.OutputLost() }

// Failed is told of a failed write into the run's directory: the first one
// stops the run (every guarded step's context is cancelled with the
// sentence, later steps refuse at once). It returns the sentence.
func (run *Run) Failed(err error) error {
	run.lostMu.Lock()
	first := run.lost == nil
	if first {
		run.lost = fmt.Errorf("output directory %s is no longer writable, the run stops: %w", run.Dir, err)
		if run.loseAll != nil {
			run.loseAll(run.lost)
		}
	}
	lost := run.lost
	run.lostMu.Unlock()
	if first {
		// The console only: harness.log is in the directory that failed.
		run.logMu.Lock()
		fmt.Fprintf(run.console, "[%s] %v (teardown and the leak check still run and write nothing else)\n", time.Now().UTC().Format("15:04:05"), lost)
		run.logMu.Unlock()
	}
	return lost
}

// written passes a write's outcome through Failed.
func (run *Run) written(err error) error {
	if err == nil {
		return nil
	}
	return run.Failed(err)
}

// guard runs a step of the run: it refuses at once when output is lost,
// and its context ends the moment output is lost while it runs; end turns
// the step's error into the sentence then.
func (run *Run) guard(ctx context.Context) (context.Context, func(err error) error, error) {
	run.lostMu.Lock()
	if run.lost != nil {
		defer run.lostMu.Unlock()
		return ctx, nil, run.lost
	}
	if run.lostCtx == nil {
		run.lostCtx, run.loseAll = context.WithCancelCause(context.Background())
	}
	lostCtx := run.lostCtx
	run.lostMu.Unlock()
	gctx, cancel := context.WithCancelCause(ctx)
	stop := context.AfterFunc(lostCtx, func() { cancel(context.Cause(lostCtx)) })
	return gctx, func(err error) error {
		stop()
		cancel(nil)
		if lost := run.OutputLost(); lost != nil && err != nil {
			return lost // what the step met after it is the loss's consequence
		}
		return err
	}, nil
}
