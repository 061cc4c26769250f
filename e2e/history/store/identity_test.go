package store

import (
	"context"
	"database/sql"
	"fmt"
	"maps"
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
	if _, err := s.Ingest(ctx, run, nil, []history.Point{{Series: ser, RunID: run.ID, Value: 1e9, Lo: 1e9, Hi: 1e9, N: 1}}); err != nil {
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

// oldSchema makes db a history of schema version upto (the first upto
// migrations) holding one run, old-1, as a build of then wrote it.
func oldSchema(t *testing.T, db *sql.DB, upto int) {
	t.Helper()
	ctx := context.Background()
	qs := []string{`CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY)`}
	for i := range upto {
		qs = append(qs, migrations[i], fmt.Sprintf(`INSERT INTO schema_migrations (version) VALUES (%d)`, i+1))
	}
	qs = append(qs, `INSERT INTO runs (run_id, started_at, build, ingested) VALUES ('old-1', '2029-01-01T00:00:00Z', 'MOSK 25.1', '2029-01-01T01:00:00Z')`)
	for _, q := range qs {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatalf("schema %d: %s: %v", upto, q, err)
		}
	}
}

// A history written before migration 2 opens: its runs get an empty build
// id and harness commit, and new runs store theirs.
func TestSQLiteMigratesVersion1(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "old.db")
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	oldSchema(t, db, 1)
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

// testMigratesVersion2: a history of schema version 2 (db, reached by
// open) opens at version 3; its run has no facts, new runs store theirs.
func testMigratesVersion2(t *testing.T, db *sql.DB, open func() (*Store, error)) {
	ctx := context.Background()
	oldSchema(t, db, 2)
	s, err := open()
	if err != nil {
		t.Fatal(err)
	}
	var v int
	if err := s.db.QueryRowContext(ctx, `SELECT MAX(version) FROM schema_migrations`).Scan(&v); err != nil || v != len(migrations) || v != 3 {
		t.Fatalf("schema version %d (%v), want 3", v, err)
	}
	f, err := s.Facts(ctx, "old-1")
	s.Close()
	if err != nil || f == nil || len(f) != 0 {
		t.Fatalf("facts of a run stored before migration 3: %v %v, want none", f, err)
	}
	testEnvFacts(t, open)
}

// testEnvFacts: a run's facts are stored with it and read back by Facts
// and AllFacts; ingesting the run again changes none of them, and a second
// shard of the run adds its own nodes' facts; a run stored without facts
// reads back none.
func testEnvFacts(t *testing.T, open func() (*Store, error)) {
	ctx := context.Background()
	s, err := open()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	at := time.Date(2030, 2, 1, 0, 0, 0, 0, time.UTC)
	run := history.Run{ID: "facts-1", StartedAt: at, Build: "MOSK 25.2"}
	bare := history.Run{ID: "facts-2", StartedAt: at.Add(time.Hour), Build: "MOSK 25.2"}
	ser := history.Series{Metric: history.MetricDelivered, Profile: "tcp-p1", Path: "asap2"}
	pt := []history.Point{{Series: ser, Value: 1e9, Lo: 1e9, Hi: 1e9, N: 1}}
	shard1 := history.Facts{history.FactBackend: "ml2/ovn", history.FactCompute: "2.1 to 2.95", "hv.cmp1.kernel": "6.1.0-27"}
	shard2 := history.Facts{history.FactBackend: "ml2/ovs", "hv.cmp2.kernel": "6.1.0-28"}
	for _, in := range []struct {
		run   history.Run
		facts history.Facts
	}{{run, shard1}, {run, shard1}, {run, shard2}, {bare, nil}} {
		if _, err := s.Ingest(ctx, in.run, in.facts, pt); err != nil {
			t.Fatal(err)
		}
	}
	want := history.Facts{history.FactBackend: "ml2/ovn", history.FactCompute: "2.1 to 2.95", "hv.cmp1.kernel": "6.1.0-27", "hv.cmp2.kernel": "6.1.0-28"}
	if got, err := s.Facts(ctx, run.ID); err != nil || !maps.Equal(got, want) {
		t.Fatalf("facts of %s: %v %v, want %v", run.ID, got, err, want)
	}
	if got, err := s.Facts(ctx, bare.ID); err != nil || got == nil || len(got) != 0 {
		t.Fatalf("facts of %s: %v %v, want none", bare.ID, got, err)
	}
	all, err := s.AllFacts(ctx)
	if err != nil || !maps.Equal(all[run.ID], want) {
		t.Fatalf("all facts: %v %v", all, err)
	}
	if _, ok := all[bare.ID]; ok {
		t.Fatalf("all facts hold %s, stored without any: %v", bare.ID, all[bare.ID])
	}
}

func TestSQLiteEnvFacts(t *testing.T) { testEnvFacts(t, sqliteOpener(t)) }

func TestSQLiteMigratesVersion2(t *testing.T) {
	path := filepath.Join(t.TempDir(), "v2.db")
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	testMigratesVersion2(t, db, func() (*Store, error) { return Open(context.Background(), path) })
}
