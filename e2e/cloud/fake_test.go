package cloud

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/config/clouds"
	th "github.com/gophercloud/gophercloud/v2/testhelper"
)

// The fake cloud below answers like Keystone v3, Nova, Neutron and Glance
// for the few calls these tests make. Request and response shapes follow the
// public API references (docs.openstack.org/api-ref/identity/v3 "Password
// authentication with scoped authorization", api-ref/compute "Show API
// Version Details", api-guide/compute "Faults").

const (
	tenantPassword = "Tenant-Pa55word-7f3e9c"   // only in secure.yaml
	adminPassword  = "Admin-Pa55word-c41d08"    // only in secure.yaml
	tenantToken    = "gAAAAABtenant-token-0001" // issued by the fake Keystone
	adminToken     = "gAAAAABadmin-token-0002"
)

type fakeCloud struct {
	t       *testing.T
	server  th.FakeServer
	novaMax string
	// noPlacement leaves Placement out of the catalog.
	noPlacement bool
	// dropAuth: token requests closed without an answer, as Keystone
	// behind uwsgi does when its handler raises.
	dropAuth bool

	mu     sync.Mutex
	calls  map[string]int // "METHOD path" -> count
	auths  []string       // user names that authenticated
	bodies []string       // bodies of non-auth POSTs, in order
}

func newFakeCloud(t *testing.T) *fakeCloud {
	f := &fakeCloud{t: t, server: th.SetupHTTP(), novaMax: "2.95", calls: map[string]int{}}
	t.Cleanup(f.server.Teardown)
	f.server.Mux.HandleFunc("/v3/auth/tokens", f.auth)
	f.root("/compute/v2.1/", http.StatusOK, func() string {
		return fmt.Sprintf(`{"version": {"id": "v2.1", "status": "CURRENT", "version": %q, "min_version": "2.1", "updated": "2013-07-23T11:33:21Z"}}`, f.novaMax)
	})
	// Unversioned catalogue endpoints are discovered by gophercloud; the
	// documents are the ones Neutron, Glance and Placement serve at their
	// roots (api-ref/network "List API versions", api-ref/image "List API
	// versions", placement api-ref "API Versions" samples/root/get-root.json).
	f.root("/network/", http.StatusOK, func() string {
		return fmt.Sprintf(`{"versions": [{"id": "v2.0", "status": "CURRENT", "links": [{"href": "%s/network/v2.0/", "rel": "self"}]}]}`, f.url())
	})
	f.root("/image/", http.StatusMultipleChoices, func() string {
		return fmt.Sprintf(`{"versions": [{"id": "v2.17", "status": "CURRENT", "links": [{"href": "%[1]s/image/v2/", "rel": "self"}]}, {"id": "v2.16", "status": "SUPPORTED", "links": [{"href": "%[1]s/image/v2/", "rel": "self"}]}]}`, f.url())
	})
	// Keystone's document at the versioned auth URL (identity api-ref
	// "Show API version details", samples/admin/identity-version-response.json).
	f.root("/v3/", http.StatusOK, func() string {
		return fmt.Sprintf(`{"version": {"id": "v3.14", "links": [{"href": "%s/v3/", "rel": "self"}], "media-types": [{"base": "application/json", "type": "application/vnd.openstack.identity-v3+json"}], "status": "stable", "updated": "2020-04-07T00:00:00Z"}}`, f.url())
	})
	f.root("/placement/", http.StatusOK, func() string {
		return `{"versions": [{"id": "v1.0", "max_version": "1.39", "min_version": "1.0", "status": "CURRENT", "links": [{"rel": "self", "href": ""}]}]}`
	})
	return f
}

func (f *fakeCloud) url() string { return f.server.Server.URL }

// root serves a service's version document at path (and nothing below
// it), counting the calls.
func (f *fakeCloud) root(path string, status int, body func() string) {
	f.server.Mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != path {
			http.NotFound(w, r)
			return
		}
		f.count(r)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		fmt.Fprint(w, body())
	})
}

func (f *fakeCloud) count(r *http.Request) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	k := r.Method + " " + r.URL.Path
	f.calls[k]++
	return f.calls[k]
}

func (f *fakeCloud) callsTo(method, path string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[method+" "+path]
}

// dropConnection closes the request's connection without an answer, as a
// restarting haproxy or a uwsgi whose handler raised does.
func dropConnection(t testing.TB, w http.ResponseWriter) {
	conn, _, err := w.(http.Hijacker).Hijack()
	if err != nil {
		t.Error(err)
		return
	}
	conn.Close()
}

func (f *fakeCloud) auth(w http.ResponseWriter, r *http.Request) {
	if f.dropAuth {
		f.count(r)
		dropConnection(f.t, w)
		return
	}
	var req struct {
		Auth struct {
			Identity struct {
				Password struct {
					User struct {
						Name     string `json:"name"`
						Password string `json:"password"`
					} `json:"user"`
				} `json:"password"`
			} `json:"identity"`
		} `json:"auth"`
	}
	if r.Method != http.MethodPost || json.NewDecoder(r.Body).Decode(&req) != nil {
		http.Error(w, `{"error": {"code": 400, "message": "bad auth request", "title": "Bad Request"}}`, http.StatusBadRequest)
		return
	}
	u := req.Auth.Identity.Password.User
	token := ""
	switch {
	case u.Name == "demo" && u.Password == tenantPassword:
		token = tenantToken
	case u.Name == "admin" && u.Password == adminPassword:
		token = adminToken
	default:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprint(w, `{"error": {"code": 401, "message": "The request you have made requires authentication.", "title": "Unauthorized"}}`)
		return
	}
	f.mu.Lock()
	f.auths = append(f.auths, u.Name)
	f.mu.Unlock()
	base := f.url()
	ep := func(typ, path string) string {
		return fmt.Sprintf(`{"type": %q, "name": %q, "endpoints": [{"interface": "public", "region": "RegionOne", "region_id": "RegionOne", "url": "%s%s"}]}`, typ, typ, base, path)
	}
	catalog := []string{ep("compute", "/compute/v2.1"), ep("network", "/network"), ep("image", "/image")}
	if !f.noPlacement {
		catalog = append(catalog, ep("placement", "/placement"))
	}
	w.Header().Set("X-Subject-Token", token)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	fmt.Fprintf(w, `{"token": {"methods": ["password"], "expires_at": "2099-01-01T00:00:00.000000Z", "issued_at": "2025-01-01T00:00:00.000000Z",
	  "user": {"id": "u-%s", "name": %q, "domain": {"id": "default", "name": "Default"}},
	  "project": {"id": "p-%s", "name": %q, "domain": {"id": "default", "name": "Default"}},
	  "catalog": [%s]}}`, u.Name, u.Name, u.Name, u.Name, strings.Join(catalog, ", "))
}

// writeCloudsYAML writes clouds.yaml (no password) and secure.yaml (the
// passwords) in a temporary directory and points OS_CLIENT_CONFIG_FILE at it.
func writeCloudsYAML(t *testing.T, authURL string) {
	t.Helper()
	dir := t.TempDir()
	cloudsYAML := fmt.Sprintf(`clouds:
  lab:
    auth:
      auth_url: %[1]s/v3/
      username: demo
      project_name: demo
      user_domain_name: Default
      project_domain_name: Default
    region_name: RegionOne
    identity_api_version: 3
  lab-admin:
    auth:
      auth_url: %[1]s/v3/
      username: admin
      project_name: admin
      user_domain_name: Default
      project_domain_name: Default
    region_name: RegionOne
`, authURL)
	secureYAML := fmt.Sprintf("clouds:\n  lab:\n    auth:\n      password: %s\n  lab-admin:\n    auth:\n      password: %s\n", tenantPassword, adminPassword)
	if err := os.WriteFile(filepath.Join(dir, "clouds.yaml"), []byte(cloudsYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "secure.yaml"), []byte(secureYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("OS_CLIENT_CONFIG_FILE", filepath.Join(dir, "clouds.yaml"))
	t.Setenv("OS_CLOUD", "")
	t.Setenv("OS_REGION_NAME", "")
	t.Setenv("OS_INTERFACE", "")
}

// fakeClock replaces time in RetryTransport: sleeping advances it at once.
type fakeClock struct {
	mu    sync.Mutex
	t     time.Time
	slept []time.Duration
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
	c.slept = append(c.slept, d)
	return nil
}

func (c *fakeClock) option() Option {
	return func(o *options) {
		o.retryT = func(rt *RetryTransport) { rt.now, rt.sleep = c.now, c.sleep }
	}
}

// logBuf collects log lines.
type logBuf struct {
	mu    sync.Mutex
	lines []string
}

func (l *logBuf) logf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, fmt.Sprintf(format, args...))
}

func (l *logBuf) text() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

func readAll(t *testing.T, r io.Reader) string {
	t.Helper()
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

var cloudsWithPassword = clouds.WithPassword
