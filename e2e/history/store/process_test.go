package store

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/history"
)

const workerEnv = "HISTORY_STORE_TEST_WORKER" // "PATH WORKER" in a child process

// TestConcurrentProcesses: twelve processes (this test binary run again as
// workers) ingest into one SQLite file at once; every point is stored once.
func TestConcurrentProcesses(t *testing.T) {
	const procs, runs, series = 12, 8, 30
	if w := os.Getenv(workerEnv); w != "" {
		var path string
		var n int
		if _, err := fmt.Sscan(w, &path, &n); err != nil {
			t.Fatal(err)
		}
		s, err := Open(context.Background(), path)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		for r := range runs {
			run := history.Run{ID: fmt.Sprintf("p%d-r%d", n, r), StartedAt: time.Unix(int64(n*runs+r), 0)}
			var pts []history.Point
			for k := range series {
				pts = append(pts, history.Point{Series: history.Series{Metric: "delivered_bps", Profile: strconv.Itoa(k)}, Value: 1, Lo: 1, Hi: 1, N: 1})
			}
			if _, err := s.Ingest(context.Background(), run, nil, pts); err != nil {
				t.Fatal(err)
			}
		}
		return
	}
	path := filepath.Join(t.TempDir(), "h.db")
	var cmds []*exec.Cmd
	outs := make([]*strings.Builder, procs)
	for n := range procs {
		c := exec.Command(os.Args[0], "-test.run=^TestConcurrentProcesses$")
		c.Env = append(os.Environ(), fmt.Sprintf("%s=%s %d", workerEnv, path, n))
		outs[n] = &strings.Builder{}
		c.Stdout, c.Stderr = outs[n], outs[n]
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, c)
	}
	for n, c := range cmds {
		if err := c.Wait(); err != nil {
			t.Errorf("worker %d: %v\n%s", n, err, outs[n])
		}
	}
	s, err := Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var got int
	if err := s.db.QueryRow(`SELECT COUNT(*) FROM points`).Scan(&got); err != nil || got != procs*runs*series {
		t.Fatalf("%d points stored, want %d (%v)", got, procs*runs*series, err)
	}
}
