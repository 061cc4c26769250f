package harness

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/config"
	"github.com/mosk-qa/asap2-e2e/e2e/evidence"
)

// The run's output directory: checked at start (writable, room for a run's
// artifacts), and watched while the run goes on: the first write that fails
// stops the run at once with that sentence. Teardown and the leak check
// still run and write nothing else (the console still gets their lines).

// Artifacts-size estimate, checked against measured runs: the Epoxy lab's
// baseline run under lab/harness.yaml (2026-12-03, make lab LAB_RELEASE=epoxy)
// wrote 9.5 MiB — offload evidence 7.3 MiB for 2 flows on two hypervisors,
// commands.jsonl 1.5 MiB, iperf3 JSON 0.4 MiB, the rest under 0.3 MiB —
// where this estimate allows 80 MiB. A real hypervisor's dumps hold many
// more flows than the lab's, so the per-flow part keeps twice the lab's
// size. A run writes a fixed part (harness.log, api.log, commands.jsonl,
// topology evidence, results and reports), the captures and samples of each
// evidence flow on two hypervisors, and per second of measured window
// iperf3's per-interval JSON and the commands' outputs; the sum is doubled.
const (
	artifactsFixed      = 16 << 20
	artifactsPerFlow    = 8 << 20
	artifactsPerSecond  = 64 << 10
	artifactsSafetyRate = 2
	// artifactsPerStreamSecond: iperf3 -J writes one interval object per
	// stream and second, about 540 B each in the recordings
	// (e2e/iperf3/testdata/v3.12-tcp-p15.json: 40161 B for 15 streams × 5
	// intervals), the client's and the server's output each: the
	// connection-scale profile's N streams dominate its evidence.
	artifactsPerStreamSecond = 1 << 10
)

// ArtifactsEstimate is how many bytes a run of the performance suite under
// cfg may write into its output directory, with the rule that gave it.
func ArtifactsEstimate(cfg *config.Config) (int64, string) {
	flows := 0
	if len(cfg.Offload.Checks) > 0 {
		flows = len(evidence.Flows)
	}
	windows := len(SelectedProfiles(cfg)) * cfg.Traffic.Repeats
	pairs := ""
	if cfg.Fleet != nil {
		// A fleet: every pair its own evidence flows and windows.
		n, why := fleetPairs(cfg.Fleet)
		flows, windows, pairs = flows*n, windows*n, "; "+why
	}
	seconds := float64(windows)*(cfg.Traffic.Duration+cfg.Traffic.Omit).Seconds() + float64(flows)*cfg.Offload.FlowDuration.Seconds()
	streamSeconds := int64(0)
	for _, c := range cfg.Connections.Counts {
		streamSeconds += int64(c) * int64((cfg.Connections.Duration + cfg.Connections.OffloadWait).Seconds())
	}
	n := artifactsSafetyRate * (artifactsFixed + int64(flows)*artifactsPerFlow + int64(seconds)*artifactsPerSecond + streamSeconds*artifactsPerStreamSecond)
	rule := fmt.Sprintf("2 × (16 MiB of logs, topology and reports + %d evidence flow(s) × 8 MiB + %.0fs of windows × 64 KiB/s", flows, seconds)
	if streamSeconds > 0 {
		rule += fmt.Sprintf(" + %d connection-scale stream-seconds × 1 KiB", streamSeconds)
	}
	return n, rule + ")" + pairs
}

// MiB prints a byte count in mebibytes.
func MiB(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

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
		return fmt.Errorf("run.output_dir %s: %s free, a run's artifacts need about %s (%s)", dir, MiB(free), MiB(need), rule)
	}
	return nil
}

// OutputLost is non-nil once a write into the run's directory failed: the
// sentence every later step fails with.
func (s *Session) OutputLost() error {
	if s.parent != nil {
		return s.parent.OutputLost()
	}
	s.lostMu.Lock()
	defer s.lostMu.Unlock()
	return s.lost
}

// Refused is results.OutputGuard's: nothing is written once output is lost.
func (s *Session) Refused() error { return s.OutputLost() }

// Failed is told of a failed write into the run's directory: the first one
// stops the run (every guarded step's context is cancelled with the
// sentence, later steps refuse at once). It returns the sentence.
func (s *Session) Failed(err error) error {
	if s.parent != nil {
		return s.parent.Failed(err)
	}
	s.lostMu.Lock()
	first := s.lost == nil
	if first {
		s.lost = fmt.Errorf("output directory %s is no longer writable, the run stops: %w", s.Dir, err)
		if s.loseAll != nil {
			s.loseAll(s.lost)
		}
	}
	lost := s.lost
	s.lostMu.Unlock()
	if first {
		// The console only: harness.log is in the directory that failed.
		s.logMu.Lock()
		fmt.Fprintf(s.console, "[%s] %v (teardown and the leak check still run and write nothing else)\n", time.Now().UTC().Format("15:04:05"), lost)
		s.logMu.Unlock()
	}
	return lost
}

// written passes a write's outcome through Failed.
func (s *Session) written(err error) error {
	if err == nil {
		return nil
	}
	return s.Failed(err)
}

// guard runs a step of the run: it refuses at once when output is lost,
// and its context ends the moment output is lost while it runs; end turns
// the step's error into the sentence then.
func (s *Session) guard(ctx context.Context) (context.Context, func(err error) error, error) {
	if s.parent != nil {
		return s.parent.guard(ctx)
	}
	s.lostMu.Lock()
	if s.lost != nil {
		defer s.lostMu.Unlock()
		return ctx, nil, s.lost
	}
	if s.lostCtx == nil {
		s.lostCtx, s.loseAll = context.WithCancelCause(context.Background())
	}
	lostCtx := s.lostCtx
	s.lostMu.Unlock()
	gctx, cancel := context.WithCancelCause(ctx)
	stop := context.AfterFunc(lostCtx, func() { cancel(context.Cause(lostCtx)) })
	return gctx, func(err error) error {
		stop()
		cancel(nil)
		if lost := s.OutputLost(); lost != nil && err != nil {
			return lost // what the step met after it is the loss's consequence
		}
		return err
	}, nil
}
