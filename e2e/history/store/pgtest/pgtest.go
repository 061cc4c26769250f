// Package pgtest starts a throwaway PostgreSQL server from Debian's package
// for the history store's tests (e2e/history/store, tools/history).
//
// Start runs initdb and pg_ctl as the postgres user, the server on a unix
// socket in a temporary directory; where the package is absent the test is
// skipped with the reason.
package pgtest

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"testing"
)

// pgBin finds a PostgreSQL server binary: on PATH, else in Debian's
// /usr/lib/postgresql/VERSION/bin (package postgresql).
func pgBin(name string) string {
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	ms, _ := filepath.Glob("/usr/lib/postgresql/*/bin/" + name)
	if len(ms) > 0 {
		return ms[len(ms)-1]
	}
	return ""
}

// Start runs a throwaway PostgreSQL server from Debian's package:
// initdb and pg_ctl in a temporary directory, listening on a unix socket
// there only (no TCP); as the postgres user when the test runs as root
// (initdb refuses root). It skips with the reason when the binaries are
// absent and returns the server's URL; the server is stopped at cleanup.
func Start(t testing.TB) string {
	t.Helper()
	initdb, pgctl := pgBin("initdb"), pgBin("pg_ctl")
	if initdb == "" || pgctl == "" {
		t.Skip("PostgreSQL's initdb and pg_ctl not found (on PATH or /usr/lib/postgresql/*/bin): apt-get install postgresql to run the PostgreSQL store tests")
	}
	dir, err := os.MkdirTemp("", "histpg")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	as := func(args ...string) *exec.Cmd { return exec.Command(args[0], args[1:]...) }
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Skip("running as root and no postgres user to run the server as")
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
		as = func(args ...string) *exec.Cmd {
			return exec.Command("runuser", append([]string{"-u", "postgres", "--"}, args...)...)
		}
	}
	data := filepath.Join(dir, "data")
	if out, err := as(initdb, "-D", data, "-U", "postgres", "-A", "trust", "--no-sync").CombinedOutput(); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	port := freePort(t)
	opts := fmt.Sprintf("-c listen_addresses='' -c unix_socket_directories=%s -p %d -c fsync=off", dir, port)
	if out, err := as(pgctl, "-D", data, "-o", opts, "-l", filepath.Join(dir, "log"), "-w", "-t", "60", "start").CombinedOutput(); err != nil {
		log, _ := os.ReadFile(filepath.Join(dir, "log"))
		t.Fatalf("pg_ctl start: %v\n%s\n%s", err, out, log)
	}
	t.Cleanup(func() {
		if out, err := as(pgctl, "-D", data, "-m", "immediate", "-w", "stop").CombinedOutput(); err != nil {
			t.Logf("pg_ctl stop: %v\n%s", err, out)
		}
	})
	return fmt.Sprintf("postgres://postgres@/postgres?host=%s&port=%d&sslmode=disable", dir, port)
}

// freePort is a TCP port number nothing listens on; the server only names
// its socket file after it.
func freePort(t testing.TB) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
