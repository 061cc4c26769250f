package remote

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// The command log tells its guard of a failed write (/dev/full: ENOSPC, a
// full file system) and writes nothing once the guard refuses.
func TestCommandLogGuard(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skipf("no /dev/full: %v", err)
	}
	full, err := OpenCommandLog("/dev/full", 0)
	if err != nil {
		t.Fatal(err)
	}
	var told []error
	full.SetGuard(func() error { return nil }, func(err error) error { told = append(told, err); return err })
	full.Record(Result{Target: "guest vm0", Cmd: "true"}, time.Now(), false, false, nil)
	if len(told) != 1 || !errors.Is(told[0], syscall.ENOSPC) {
		t.Errorf("guard told %v, want one ENOSPC", told)
	}
	_ = full.Close()

	path := filepath.Join(t.TempDir(), CommandLogFile)
	lg, err := OpenCommandLog(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	stopped := errors.New("output lost")
	lg.SetGuard(func() error { return stopped }, func(err error) error { t.Errorf("told of %v", err); return err })
	lg.Record(Result{Target: "guest vm0", Cmd: "true"}, time.Now(), false, false, nil)
	if err := lg.Close(); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); len(b) != 0 {
		t.Errorf("written after the guard refused: %s", b)
	}
}
