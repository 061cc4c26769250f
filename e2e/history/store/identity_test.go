package store

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/history"
)

// testBuildIdentity: a run's build id and harness commit are stored and
// read back by Points and Newest.
func testBuildIdentity(t *testing.T, open func() (*Store, error)) {
	ctx := context.Background()
	s, err := open()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	run := history.Run{ID: "ident-1", StartedAt: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC), Build: "MOSK 25.2", BuildID: "pipeline-4711", HarnessCommit: "1d40259abcdef"}
	ser := history.Series{Metric: "delivered", Profile: "tcp-p1", Path: "asap2"}
	if _, err := s.Ingest(ctx, run, []history.Point{{Series: ser, RunID: run.ID, Value: 1e9, Lo: 1e9, Hi: 1e9, N: 1}}); err != nil {
		t.Fatal(err)
	}
	es, err := s.Points(ctx, ser.Key())
	if err != nil || len(es) != 1 || es[0].Run != run {
		t.Fatalf("points: %+v %v, want run %+v", es, err, run)
	}
	newest, ok, err := s.Newest(ctx)
	if err != nil || !ok || newest != run {
		t.Fatalf("newest: %+v %v %v", newest, ok, err)
	}
}

func TestSQLiteBuildIdentity(t *testing.T) { testBuildIdentity(t, sqliteOpener(t)) }

// A history written before migration 2 opens: its runs get an empty build
// id and harness commit, and new runs store theirs.
func TestSQLiteMigratesVersion1(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "old.db")
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{migrations[0], `CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY)`, `INSERT INTO schema_migrations (version) VALUES (1)`,
		`INSERT INTO runs (run_id, started_at, build, ingested) VALUES ('old-1', '2029-01-01T00:00:00Z', 'MOSK 25.1', '2029-01-01T01:00:00Z')`} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	newest, ok, err := s.Newest(ctx)
	s.Close()
	if err != nil || !ok || newest.ID != "old-1" || newest.Build != "MOSK 25.1" || newest.BuildID != "" || newest.HarnessCommit != "" {
		t.Fatalf("old run after migration: %+v %v %v", newest, ok, err)
	}
	testBuildIdentity(t, func() (*Store, error) { return Open(ctx, path) })
}
