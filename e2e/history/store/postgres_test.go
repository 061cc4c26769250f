package store

import (
	"context"
	"database/sql"
	neturl "net/url"
	"strings"
	"testing"
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/history/store/pgtest"
)

func TestPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a PostgreSQL server")
	}
	url := pgtest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	open := func() (*Store, error) { return Open(ctx, url) }
	t.Run("ingest", func(t *testing.T) { testIngestLabResults(t, open) })
	t.Run("concurrent", func(t *testing.T) { testConcurrentIngest(t, open) })
	t.Run("build identity", func(t *testing.T) { testBuildIdentity(t, open) })
	t.Run("environment facts", func(t *testing.T) { testEnvFacts(t, open) })
	t.Run("migrates version 2", func(t *testing.T) {
		// a database of its own, created at schema version 2
		admin, err := sql.Open("pgx", url)
		if err != nil {
			t.Fatal(err)
		}
		defer admin.Close()
		if _, err := admin.ExecContext(ctx, `CREATE DATABASE schema2`); err != nil {
			t.Fatal(err)
		}
		u, err := neturl.Parse(url)
		if err != nil {
			t.Fatal(err)
		}
		u.Path = "/schema2"
		db, err := sql.Open("pgx", u.String())
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		testMigratesVersion2(t, db, func() (*Store, error) { return Open(ctx, u.String()) })
	})
	t.Run("redacted", func(t *testing.T) {
		_, err := Open(ctx, "postgres://u:secret@127.0.0.1:1/x?connect_timeout=1")
		if err == nil || strings.Contains(err.Error(), "secret") {
			t.Fatalf("want an error without the password, got %v", err)
		}
	})
}
