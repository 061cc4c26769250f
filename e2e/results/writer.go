package results

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// Writer owns one results file and rewrites it atomically after every change,
// so a run killed at any moment leaves the last complete state on disk.
// All methods are safe for concurrent use.
type Writer struct {
	path    string
	cvLimit float64
	mu      sync.Mutex
	res     Results
	guard   OutputGuard
}

// OutputGuard is told of every failed write of the file and may stop all
// later ones: a run whose output directory became unwritable writes nothing
// more (the harness's Run).
type OutputGuard interface {
	// Refused is non-nil once nothing may be written any more.
	Refused() error
	// Failed is told of a failed write and returns the error to report.
	Failed(err error) error
}

// SetGuard installs g; later changes are kept in memory and written only
// while g does not refuse.
func (w *Writer) SetGuard(g OutputGuard) {
	w.mu.Lock()
	w.guard = g
	w.mu.Unlock()
}

// NewWriter starts a results file at path from initial (its SchemaVersion is
// set to SchemaVersion) and writes it once, so a run that dies during
// provisioning still leaves its environment and errors behind.
func NewWriter(path string, initial Results) (*Writer, error) {
	if path == "" {
		return nil, errors.New("results writer: empty path")
	}
	initial.SchemaVersion = SchemaVersion
	w := &Writer{path: path, cvLimit: initial.Config.CVLimitPercent, res: clone(initial)}
	if err := w.flushLocked(); err != nil {
		return nil, err
	}
	return w, nil
}

// Path is the file the writer owns.
func (w *Writer) Path() string { return w.path }

// PutProfile records a profile's result (replacing an earlier one with the
// same ID and path, appending otherwise), recomputes its summary and writes
// the file.
func (w *Writer) PutProfile(p ProfileResult) error {
	return w.Update(func(r *Results) {
		p = deepCopy(p)
		Summarize(&p, r.Config.CVLimitPercent)
		for i := range r.Profiles {
			if r.Profiles[i].ID == p.ID && r.Profiles[i].Path == p.Path {
				r.Profiles[i] = p
				return
			}
		}
		r.Profiles = append(r.Profiles, p)
	})
}

// Finish sets FinishedAt and writes the file.
func (w *Writer) Finish(at time.Time) error {
	return w.Update(func(r *Results) { t := at.UTC(); r.FinishedAt = &t })
}

// Update applies fn to the results under the writer's lock and writes the
// file. fn must not keep references to r after it returns.
func (w *Writer) Update(fn func(r *Results)) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	fn(&w.res)
	w.res.SchemaVersion = SchemaVersion
	return w.flushLocked()
}

// Snapshot returns a deep copy of the current
func (w *Writer) Snapshot() Results {
	w.mu.Lock()
	defer w.mu.Unlock()
	return clone(w.res)
}

func (w *Writer) flushLocked() error {
	data, err := json.MarshalIndent(&w.res, "", "  ")
	if err != nil {
		return fmt.Errorf("results %s: encode: %w", w.path, err)
	}
	if w.guard != nil {
		if err := w.guard.Refused(); err != nil {
			return err
		}
	}
	err = WriteFileAtomic(w.path, append(data, '\n'), 0o644)
	if err != nil && w.guard != nil {
		return w.guard.Failed(err)
	}
	return err
}

// WriteFileAtomic writes data to a temporary file in path's directory,
// fsyncs it, renames it over path and fsyncs the directory: a reader sees
// either the old or the new content, never a partial file.
func WriteFileAtomic(path string, data []byte, perm os.FileMode) (err error) {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			_ = os.Remove(tmp.Name())
		}
	}()
	if _, err = tmp.Write(data); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("write %s: %w", tmp.Name(), err)
	}
	if err = tmp.Chmod(perm); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("chmod %s: %w", tmp.Name(), err)
	}
	if err = tmp.Sync(); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("fsync %s: %w", tmp.Name(), err)
	}
	if err = tmp.Close(); err != nil {
		return fmt.Errorf("close %s: %w", tmp.Name(), err)
	}
	if err = os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("rename %s to %s: %w", tmp.Name(), path, err)
	}
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("open dir %s for fsync: %w", dir, err)
	}
	defer d.Close()
	if err = d.Sync(); err != nil {
		return fmt.Errorf("fsync dir %s: %w", dir, err)
	}
	return nil
}

// clone deep-copies results: nothing of the copy is shared with r.
func clone(r Results) Results { return deepCopy(r) }
