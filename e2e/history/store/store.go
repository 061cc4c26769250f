// Package store keeps the history (e2e/history's runs, series, points and
// acknowledgements) in SQLite through the pure-Go modernc.org/sqlite (a
// file that needs no server, the default) or in PostgreSQL through pgx (a
// team's shared server: a postgres:// or postgresql:// URL). One schema and
// the same queries for both; migrations are versioned (schema_migrations)
// and taken under a lock (SQLite's BEGIN IMMEDIATE, PostgreSQL's advisory
// lock); points go in with ON CONFLICT DO NOTHING, so concurrent workers,
// goroutines or processes, lose nothing, and a run already stored adds
// nothing (idempotent by run id and series).
//
// Its operations: Ingest, Points, Series, Newest, Ack and Acked. pgtest (tests
// only) starts a PostgreSQL server for the tests, skipped with the reason
// where there is none.
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver
	"modernc.org/sqlite"               // also the "sqlite" database/sql driver
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/mosk-qa/asap2-e2e/e2e/history"
)

// Store is an open history.
type Store struct {
	db       *sql.DB
	postgres bool
}

// migrations are applied in order, each once; never edit a released one.
var migrations = []string{
	`CREATE TABLE runs (
		run_id     TEXT PRIMARY KEY,
		started_at TEXT NOT NULL,
		build      TEXT NOT NULL,
		ingested   TEXT NOT NULL
	);
	CREATE TABLE points (
		series TEXT NOT NULL,
		run_id TEXT NOT NULL REFERENCES runs(run_id),
		value  DOUBLE PRECISION NOT NULL,
		lo     DOUBLE PRECISION NOT NULL,
		hi     DOUBLE PRECISION NOT NULL,
		n      INTEGER NOT NULL,
		PRIMARY KEY (series, run_id)
	);
	CREATE TABLE acks (
		series TEXT NOT NULL,
		run_id TEXT NOT NULL,
		reason TEXT NOT NULL,
		at     TEXT NOT NULL,
		PRIMARY KEY (series, run_id)
	);`,
	// 2: the run's build id and harness commit (issue 37); runs stored
	// before have neither.
	`ALTER TABLE runs ADD COLUMN build_id TEXT NOT NULL DEFAULT '';
	ALTER TABLE runs ADD COLUMN harness_commit TEXT NOT NULL DEFAULT '';`,
	// 3: the run's environment identity (issue 37; history.Identity), one
	// row a fact; runs stored before have none.
	`CREATE TABLE run_facts (
		run_id TEXT NOT NULL REFERENCES runs(run_id),
		fact   TEXT NOT NULL,
		value  TEXT NOT NULL,
		PRIMARY KEY (run_id, fact)
	);`,
}

// Open opens the history and migrates it: a postgres:// or postgresql://
// URL is a PostgreSQL server (pgx's connection string), anything else the
// SQLite file at that path, created when absent ("sqlite://PATH" and
// "file:PATH" are read as PATH).
func Open(ctx context.Context, path string) (*Store, error) {
	if strings.HasPrefix(path, "postgres://") || strings.HasPrefix(path, "postgresql://") {
		db, err := sql.Open("pgx", path)
		if err != nil {
			return nil, fmt.Errorf("history store %s: %w", redact(path), err)
		}
		s := &Store{db: db, postgres: true}
		if err := s.migrate(ctx); err != nil {
			db.Close()
			return nil, fmt.Errorf("history store %s: %w", redact(path), err)
		}
		return s, nil
	}
	path = strings.TrimPrefix(strings.TrimPrefix(path, "sqlite://"), "file:")
	if path == "" {
		return nil, errors.New("history store: empty path")
	}
	if strings.Contains(path, "://") {
		return nil, fmt.Errorf("history store %q: want a SQLite file path or a postgres:// URL", path)
	}
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(30000)")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_txlock", "immediate")
	db, err := sql.Open("sqlite", "file:"+path+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("history store %s: %w", path, err)
	}
	s := &Store{db: db}
	if err := s.migrateSQLite(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("history store %s: %w", path, err)
	}
	return s, nil
}

// openBusyFor bounds how long Open waits out other processes opening the
// same new file; the same as the busy_timeout the connections get.
const openBusyFor = 30 * time.Second

// migrateSQLite is migrate, retried while SQLite says the file is busy.
// The busy_timeout pragma does not cover a connection's first moments:
// switching a new file to WAL takes an exclusive lock and SQLite returns
// SQLITE_BUSY at once, without calling the busy handler, when another
// process holds the file (seen with 12 processes opening one new file, 2
// runs in 60, and in CI with 4).
func (s *Store) migrateSQLite(ctx context.Context) error {
	deadline := time.Now().Add(openBusyFor)
	pause := 5 * time.Millisecond
	for {
		err := s.migrate(ctx)
		if err == nil || !isBusy(err) || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return errors.Join(err, ctx.Err())
		case <-time.After(pause):
		}
		pause = min(2*pause, 250*time.Millisecond)
	}
}

// isBusy: SQLITE_BUSY or SQLITE_LOCKED, with any extended code.
func isBusy(err error) bool {
	var e *sqlite.Error
	if !errors.As(err, &e) {
		return false
	}
	c := e.Code() & 0xff
	return c == sqlite3.SQLITE_BUSY || c == sqlite3.SQLITE_LOCKED
}

// Close closes the store.
func (s *Store) Close() error { return s.db.Close() }

func (s *Store) migrate(ctx context.Context) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if s.postgres {
		// Two workers migrating at once: the second waits for the first.
		if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(37037)`); err != nil {
			return fmt.Errorf("migration lock: %w", err)
		}
	}
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY)`); err != nil {
		return fmt.Errorf("migrations table: %w", err)
	}
	var v int
	if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&v); err != nil {
		return fmt.Errorf("schema version: %w", err)
	}
	if v > len(migrations) {
		return fmt.Errorf("schema version %d is newer than this build knows (%d)", v, len(migrations))
	}
	for i := v; i < len(migrations); i++ {
		if _, err := tx.ExecContext(ctx, migrations[i]); err != nil {
			return fmt.Errorf("migration %d: %w", i+1, err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version) VALUES ($1)`, i+1); err != nil {
			return fmt.Errorf("migration %d: %w", i+1, err)
		}
	}
	return tx.Commit()
}

// Ingest stores a run, its environment's facts and its points in one
// transaction and says how many points were new: a run, fact or point
// already stored is left as it is (so the shards of one fleet run add
// their nodes' facts to the run's, and a run stored before migration 3
// gets its facts when its file is ingested again).
func (s *Store) Ingest(ctx context.Context, run history.Run, facts history.Facts, pts []history.Point) (added int, err error) {
	if run.ID == "" {
		return 0, errors.New("ingest: run without run_id")
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("ingest %s: %w", run.ID, err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `INSERT INTO runs (run_id, started_at, build, ingested, build_id, harness_commit) VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING`,
		run.ID, run.StartedAt.UTC().Format(time.RFC3339Nano), run.Build, time.Now().UTC().Format(time.RFC3339), run.BuildID, run.HarnessCommit); err != nil {
		return 0, fmt.Errorf("ingest %s: %w", run.ID, err)
	}
	if err := insertFacts(ctx, tx, run.ID, facts); err != nil {
		return 0, fmt.Errorf("ingest %s: %w", run.ID, err)
	}
	stmt, err := tx.PrepareContext(ctx, `INSERT INTO points (series, run_id, value, lo, hi, n) VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING`)
	if err != nil {
		return 0, fmt.Errorf("ingest %s: %w", run.ID, err)
	}
	defer stmt.Close()
	for _, p := range pts {
		res, err := stmt.ExecContext(ctx, p.Series.Key(), run.ID, p.Value, p.Lo, p.Hi, p.N)
		if err != nil {
			return 0, fmt.Errorf("ingest %s: %s: %w", run.ID, p.Series.Key(), err)
		}
		n, _ := res.RowsAffected()
		added += int(n)
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("ingest %s: %w", run.ID, err)
	}
	return added, nil
}

// insertFacts adds the run's facts that are not stored yet, by key.
func insertFacts(ctx context.Context, tx *sql.Tx, runID string, facts history.Facts) error {
	if len(facts) == 0 {
		return nil
	}
	stmt, err := tx.PrepareContext(ctx, `INSERT INTO run_facts (run_id, fact, value) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`)
	if err != nil {
		return err
	}
	defer stmt.Close()
	for _, k := range slices.Sorted(maps.Keys(facts)) {
		if _, err := stmt.ExecContext(ctx, runID, k, facts[k]); err != nil {
			return fmt.Errorf("fact %s = %q: %w", k, facts[k], err)
		}
	}
	return nil
}

// Facts is the environment identity stored for the run, empty for a run
// stored without one (before migration 3).
func (s *Store) Facts(ctx context.Context, runID string) (history.Facts, error) {
	all, err := s.queryFacts(ctx, `SELECT run_id, fact, value FROM run_facts WHERE run_id = $1`, runID)
	if err != nil {
		return nil, fmt.Errorf("facts of run %s: %w", runID, err)
	}
	if all[runID] == nil {
		return history.Facts{}, nil
	}
	return all[runID], nil
}

// AllFacts is every stored run's environment identity by run id (a run
// without facts is absent).
func (s *Store) AllFacts(ctx context.Context) (map[string]history.Facts, error) {
	all, err := s.queryFacts(ctx, `SELECT run_id, fact, value FROM run_facts`)
	if err != nil {
		return nil, fmt.Errorf("facts: %w", err)
	}
	return all, nil
}

func (s *Store) queryFacts(ctx context.Context, q string, args ...any) (map[string]history.Facts, error) {
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]history.Facts{}
	for rows.Next() {
		var id, k, v string
		if err := rows.Scan(&id, &k, &v); err != nil {
			return nil, err
		}
		if out[id] == nil {
			out[id] = history.Facts{}
		}
		out[id][k] = v
	}
	return out, rows.Err()
}

// Entry is one point of a series with its run.
type Entry struct {
	Run history.Run `json:"run"`
	history.Point
}

// Series lists the keys of the stored series, sorted; with a non-empty
// filter only those containing it.
func (s *Store) Series(ctx context.Context, filter string) ([]string, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT DISTINCT series FROM points WHERE series LIKE $1 ORDER BY series`, "%"+filter+"%")
	if err != nil {
		return nil, fmt.Errorf("series: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			return nil, err
		}
		out = append(out, k)
	}
	return out, rows.Err()
}

// Points is one series, oldest run first (by start time, then run id).
func (s *Store) Points(ctx context.Context, key string) ([]Entry, error) {
	ser, err := history.ParseKey(key)
	if err != nil {
		return nil, err
	}
	rows, err := s.db.QueryContext(ctx, `SELECT r.run_id, r.started_at, r.build, r.build_id, r.harness_commit, p.value, p.lo, p.hi, p.n
		FROM points p JOIN runs r ON r.run_id = p.run_id WHERE p.series = $1 ORDER BY r.started_at, r.run_id`, key)
	if err != nil {
		return nil, fmt.Errorf("points of %s: %w", key, err)
	}
	defer rows.Close()
	var out []Entry
	for rows.Next() {
		var e Entry
		var at string
		if err := rows.Scan(&e.Run.ID, &at, &e.Run.Build, &e.Run.BuildID, &e.Run.HarnessCommit, &e.Value, &e.Lo, &e.Hi, &e.N); err != nil {
			return nil, err
		}
		if e.Run.StartedAt, err = time.Parse(time.RFC3339Nano, at); err != nil {
			return nil, fmt.Errorf("run %s: started_at %q: %w", e.Run.ID, at, err)
		}
		e.Series, e.RunID = ser, e.Run.ID
		out = append(out, e)
	}
	return out, rows.Err()
}

// Newest is the run started last, or false in an empty history.
func (s *Store) Newest(ctx context.Context) (history.Run, bool, error) {
	var r history.Run
	var at string
	err := s.db.QueryRowContext(ctx, `SELECT run_id, started_at, build, build_id, harness_commit FROM runs ORDER BY started_at DESC, run_id DESC LIMIT 1`).Scan(&r.ID, &at, &r.Build, &r.BuildID, &r.HarnessCommit)
	if errors.Is(err, sql.ErrNoRows) {
		return r, false, nil
	}
	if err != nil {
		return r, false, fmt.Errorf("newest run: %w", err)
	}
	r.StartedAt, err = time.Parse(time.RFC3339Nano, at)
	return r, err == nil, err
}

// Ack acknowledges the change point of a series at a run: check no longer
// fails on it.
func (s *Store) Ack(ctx context.Context, series, runID, reason string) error {
	if _, err := history.ParseKey(series); err != nil {
		return err
	}
	_, err := s.db.ExecContext(ctx, `INSERT INTO acks (series, run_id, reason, at) VALUES ($1, $2, $3, $4)
		ON CONFLICT (series, run_id) DO UPDATE SET reason = excluded.reason, at = excluded.at`,
		series, runID, reason, time.Now().UTC().Format(time.RFC3339))
	if err != nil {
		return fmt.Errorf("ack %s at %s: %w", series, runID, err)
	}
	return nil
}

// Acked reports whether the change point of series at runID is acknowledged.
func (s *Store) Acked(ctx context.Context, series, runID string) (bool, error) {
	var n int
	err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM acks WHERE series = $1 AND run_id = $2`, series, runID).Scan(&n)
	return n > 0, err
}

// redact hides a URL's password in messages.
func redact(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return "(unparsable URL)"
	}
	return p.Redacted()
}
