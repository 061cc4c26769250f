package store

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/history"
	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

func sqliteOpener(t *testing.T) func() (*Store, error) {
	path := filepath.Join(t.TempDir(), "h.db")
	return func() (*Store, error) { return Open(context.Background(), path) }
}

func TestSQLite(t *testing.T) {
	t.Run("ingest", func(t *testing.T) { testIngestLabResults(t, sqliteOpener(t)) })
	t.Run("concurrent", func(t *testing.T) { testConcurrentIngest(t, sqliteOpener(t)) })
}

// testIngestLabResults: a recorded lab run, ingested twice, adds its points once.
func testIngestLabResults(t *testing.T, open func() (*Store, error)) {
	ctx := context.Background()
	s, err := open()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r, err := results.Load("../testdata/lab-baseline-results.json")
	if err != nil {
		t.Fatal(err)
	}
	pts := history.Extract(r)
	facts, err := history.Identity(r)
	if err != nil || len(facts) == 0 {
		t.Fatalf("identity of the recorded run: %v %v", facts, err)
	}
	n, err := s.Ingest(ctx, history.RunOf(r), facts, pts)
	if err != nil || n != len(pts) {
		t.Fatalf("first ingest: %d of %d, %v", n, len(pts), err)
	}
	changed := history.Facts{"cloud": "another"}
	if n, err = s.Ingest(ctx, history.RunOf(r), changed, pts); err != nil || n != 0 {
		t.Fatalf("second ingest added %d, %v", n, err)
	}
	if got, err := s.Facts(ctx, r.RunID); err != nil || !maps.Equal(got, facts) {
		t.Fatalf("facts after two ingests: %v %v, want the first's %v", got, err, facts)
	}
	keys, err := s.Series(ctx, "")
	if err != nil || len(keys) != len(pts) {
		t.Fatalf("series %d, want %d (%v)", len(keys), len(pts), err)
	}
	es, err := s.Points(ctx, keys[0])
	if err != nil || len(es) != 1 || es[0].Run.ID != r.RunID || es[0].Run.Build != history.RunOf(r).Build {
		t.Fatalf("points: %+v %v", es, err)
	}
	if err := s.Ack(ctx, keys[0], r.RunID, "known"); err != nil {
		t.Fatal(err)
	}
	if ok, err := s.Acked(ctx, keys[0], r.RunID); !ok || err != nil {
		t.Fatalf("acked: %v %v", ok, err)
	}
}

// testConcurrentIngest: several workers, each with its own connection pool,
// open (and so migrate) and ingest at once; every point is stored once.
func testConcurrentIngest(t *testing.T, open func() (*Store, error)) {
	ctx := context.Background()
	const workers, runs, series = 6, 10, 40
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := open()
			if err != nil {
				errs <- err
				return
			}
			defer s.Close()
			for r := range runs {
				run := history.Run{ID: fmt.Sprintf("w%d-r%d", w, r), StartedAt: time.Unix(int64(w*runs+r), 0), Build: "b"}
				var pts []history.Point
				for k := range series {
					pts = append(pts, history.Point{Series: history.Series{Metric: "delivered_bps", Profile: fmt.Sprint(k)}, Value: 1, Lo: 1, Hi: 1, N: 1})
				}
				if _, err := s.Ingest(ctx, run, nil, pts); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	s, err := open()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var n int
	if err := s.db.QueryRow(`SELECT COUNT(*) FROM points WHERE run_id LIKE 'w%'`).Scan(&n); err != nil || n != workers*runs*series {
		t.Fatalf("%d points stored, want %d (%v)", n, workers*runs*series, err)
	}
}
