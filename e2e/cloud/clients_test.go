package cloud

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"
	"github.com/gophercloud/gophercloud/v2/openstack/config/clouds"

	"github.com/mosk-qa/asap2-e2e/e2e/config"
	"github.com/mosk-qa/asap2-e2e/e2e/wait"
)

// TestNewClientsFromCloudsYAML: the tenant and admin entries of a temporary
// clouds.yaml, whose passwords are only in secure.yaml, authenticate against
// the fake Keystone; the clients get their endpoints from the catalogue and
// Compute speaks the default microversion.
func TestNewClientsFromCloudsYAML(t *testing.T) {
	f := newFakeCloud(t)
	writeCloudsYAML(t, f.url())
	var logs logBuf
	c, err := NewClients(context.Background(), config.Cloud{Tenant: "lab", Admin: "lab-admin"}, WithLogf(logs.logf), WithRequestLog(logs.logf))
	if err != nil {
		t.Fatal(err)
	}
	if !c.HasAdmin() {
		t.Fatal("admin clients missing")
	}
	if got := strings.Join(f.auths, ","); got != "demo,admin" {
		t.Errorf("Keystone saw %q, want demo then admin with their secure.yaml passwords", got)
	}
	checks := []struct{ what, got, want string }{
		{"tenant token", c.Tenant.Provider.Token(), tenantToken},
		{"admin token", c.Admin.Provider.Token(), adminToken},
		{"compute endpoint", c.Tenant.Compute.Endpoint, f.url() + "/compute/v2.1/"},
		{"network endpoint", c.Tenant.Network.Endpoint, f.url() + "/network/"},
		{"image endpoint", c.Admin.Image.Endpoint, f.url() + "/image/"},
		{"admin placement endpoint", c.Admin.Placement.Endpoint, f.url() + "/placement/"},
		{"compute microversion", c.Tenant.Compute.Microversion, DefaultComputeMicroversion},
		{"admin compute microversion", c.Admin.Compute.Microversion, DefaultComputeMicroversion},
		{"nova max", c.Tenant.ComputeMaxMicroversion, "2.95"},
		{"region", c.Tenant.Region, "RegionOne"},
		{"cloud name", c.Admin.Cloud, "lab-admin"},
		{"tenant project (from the token)", c.Tenant.ProjectID + " " + c.Tenant.ProjectName, "p-demo demo"},
		{"admin project (from the token)", c.Admin.ProjectID + " " + c.Admin.ProjectName, "p-admin admin"},
	}
	for _, ch := range checks {
		if ch.got != ch.want {
			t.Errorf("%s: got %q, want %q", ch.what, ch.got, ch.want)
		}
	}
	if c.Tenant.Placement != nil || f.callsTo("GET", "/placement/") != 1 {
		t.Errorf("placement: tenant client %v, %d discoveries; want the admin's alone", c.Tenant.Placement, f.callsTo("GET", "/placement/"))
	}
	// The request log saw the auth POST bodies and the token headers; none
	// of the secrets may be in it.
	text := logs.text()
	if !strings.Contains(text, "POST "+f.url()+"/v3/auth/tokens") || !strings.Contains(text, `"password":"***"`) {
		t.Errorf("request log lacks the redacted auth request:\n%s", text)
	}
	for _, secret := range []string{tenantPassword, adminPassword, tenantToken, adminToken} {
		if strings.Contains(text, secret) {
			t.Errorf("log leaks %q:\n%s", secret, text)
		}
	}
}

func TestNewClientsWithoutAdmin(t *testing.T) {
	f := newFakeCloud(t)
	writeCloudsYAML(t, f.url())
	c, err := NewClients(context.Background(), config.Cloud{Tenant: "lab"})
	if err != nil {
		t.Fatal(err)
	}
	if c.HasAdmin() || c.Admin != nil {
		t.Error("admin clients built without cloud.admin")
	}
}

// Placement is optional: an admin catalog without it builds the rest.
func TestNewClientsAdminWithoutPlacement(t *testing.T) {
	f := newFakeCloud(t)
	f.noPlacement = true
	writeCloudsYAML(t, f.url())
	c, err := NewClients(context.Background(), config.Cloud{Tenant: "lab", Admin: "lab-admin"})
	if err != nil {
		t.Fatal(err)
	}
	if c.Admin.Placement != nil {
		t.Errorf("admin placement client %q from a catalog without placement", c.Admin.Placement.Endpoint)
	}
}

func TestNewClientsErrors(t *testing.T) {
	f := newFakeCloud(t)
	writeCloudsYAML(t, f.url())
	ctx := context.Background()

	_, err := NewClients(ctx, config.Cloud{Tenant: "nope"})
	if err == nil || !strings.Contains(err.Error(), `tenant entry "nope"`) || !strings.Contains(err.Error(), `cloud "nope" not found in clouds.yaml`) {
		t.Errorf("unknown entry: got %v", err)
	}
	// The message names the file that was read.
	if err == nil || !strings.Contains(err.Error(), os.Getenv("OS_CLIENT_CONFIG_FILE")) {
		t.Errorf("unknown entry: error does not name %s: %v", os.Getenv("OS_CLIENT_CONFIG_FILE"), err)
	}

	// A wrong password (from the clouds.* override) fails with Keystone's
	// 401 and message, and the password is not in the error.
	_, err = NewClients(ctx, config.Cloud{Tenant: "lab"}, WithParseOptions(passwordOverride("Wrong-Pa55word-1234")))
	if StatusCode(err) != http.StatusUnauthorized || !strings.Contains(err.Error(), "requires authentication") {
		t.Errorf("bad password: want 401 with Keystone's message, got %v", err)
	}
	if strings.Contains(err.Error(), "Wrong-Pa55word-1234") {
		t.Errorf("error leaks the password: %v", err)
	}

	f.novaMax = "2.60"
	_, err = NewClients(ctx, config.Cloud{Tenant: "lab"})
	if err == nil || !strings.Contains(err.Error(), "supports microversions 2.1 to 2.60; the harness needs 2.74") {
		t.Errorf("old Nova: got %v", err)
	}
}

// Keystone closing the token request's connection without an answer (an
// unhandled error inside it: on the Epoxy lab, MariaDB's error 1020 under
// two logins of one user) is said to be Keystone's, with the time to look
// for in its log; the token request is not repeated.
func TestAuthenticateDroppedByKeystoneSaysWhose(t *testing.T) {
	f := newFakeCloud(t)
	f.dropAuth = true
	writeCloudsYAML(t, f.url())
	_, err := NewClients(context.Background(), config.Cloud{Tenant: "lab"})
	if err == nil {
		t.Fatal("authentication through a dropped connection succeeded")
	}
	for _, want := range []string{"authenticate at " + f.url(), "EOF", "Keystone closed the connection without an answer at ", "an error inside Keystone"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not say %q: %v", want, err)
		}
	}
	if !errors.Is(err, io.EOF) {
		t.Errorf("io.EOF left the chain: %v", err)
	}
	if n := f.callsTo("POST", "/v3/auth/tokens"); n != 1 {
		t.Errorf("%d token requests, want 1 (a POST is not retried)", n)
	}
}

// A missing clouds.yaml keeps gophercloud's error in the chain (%w, not
// %s), so callers can tell it from an authentication failure, and the
// message names the file.
func TestNewClientsMissingCloudsYAML(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "clouds.yaml")
	t.Setenv("OS_CLIENT_CONFIG_FILE", missing)
	t.Setenv("OS_CLIENT_SECURE_FILE", "")
	_, err := NewClients(context.Background(), config.Cloud{Tenant: "lab"})
	var nf clouds.ErrFileNotFound
	if !errors.As(err, &nf) {
		t.Errorf("want clouds.ErrFileNotFound in the chain, got %T: %v", err, err)
	}
	if err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("error does not name %s: %v", missing, err)
	}
}

func TestWithMicroversionCopies(t *testing.T) {
	orig := &gophercloud.ServiceClient{Endpoint: "http://198.18.0.1/compute/v2.1/", Microversion: "2.1"}
	cp := WithMicroversion(orig, "2.90")
	if orig.Microversion != "2.1" || cp.Microversion != "2.90" || cp == orig || cp.Endpoint != orig.Endpoint {
		t.Errorf("WithMicroversion must copy: orig %q, copy %q", orig.Microversion, cp.Microversion)
	}
}

func TestMicroversionOrder(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want bool
	}{{"2.9", "2.74", true}, {"2.74", "2.9", false}, {"2.74", "2.74", false}, {"2.100", "2.99", false}, {"1.99", "2.1", true}} {
		if got := less(c.a, c.b); got != c.want {
			t.Errorf("less(%s, %s) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}

// retryClients builds tenant clients with a fake clock and a 10s/2s
// api_retry interval, and opts.
func retryClients(t *testing.T, f *fakeCloud, logs *logBuf, clock *fakeClock, opts ...Option) *Clients {
	t.Helper()
	writeCloudsYAML(t, f.url())
	c, err := NewClients(context.Background(), config.Cloud{Tenant: "lab"}, append([]Option{
		WithLogf(logs.logf), WithRetry(wait.Interval{Timeout: 10 * time.Second, Poll: 2 * time.Second}), clock.option()}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

const serverJSON = `{"server": {"id": "s1", "name": "asap2e2e-r1-a", "status": "ACTIVE", "tags": ["r1"]}}`

func TestRetryGETOn503ThenSuccess(t *testing.T) {
	f := newFakeCloud(t)
	f.server.Mux.HandleFunc("/compute/v2.1/servers/s1", func(w http.ResponseWriter, r *http.Request) {
		if got := r.Header.Get("X-OpenStack-Nova-API-Version"); got != DefaultComputeMicroversion {
			t.Errorf("microversion header %q", got)
		}
		switch f.count(r) {
		case 1:
			w.WriteHeader(http.StatusServiceUnavailable)
		case 2:
			w.Header().Set("Retry-After", "5")
			w.WriteHeader(http.StatusBadGateway)
		default:
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, serverJSON)
		}
	})
	var logs logBuf
	clock := &fakeClock{}
	c := retryClients(t, f, &logs, clock)
	s, err := servers.Get(context.Background(), c.Tenant.Compute, "s1").Extract()
	if err != nil {
		t.Fatal(err)
	}
	if s.Name != "asap2e2e-r1-a" || f.callsTo("GET", "/compute/v2.1/servers/s1") != 3 {
		t.Errorf("got %q after %d calls, want the server after 3", s.Name, f.callsTo("GET", "/compute/v2.1/servers/s1"))
	}
	if fmt.Sprint(clock.slept) != "[2s 5s]" {
		t.Errorf("waits %v, want [2s 5s] (poll, then Retry-After)", clock.slept)
	}
	want := []string{
		"cloud: GET " + f.url() + "/compute/v2.1/servers/s1: 503 Service Unavailable; retry 1 in 2s",
		"cloud: GET " + f.url() + "/compute/v2.1/servers/s1: 502 Bad Gateway; retry 2 in 5s",
	}
	if logs.text() != strings.Join(want, "\n") {
		t.Errorf("retry log:\n%s\nwant:\n%s", logs.text(), strings.Join(want, "\n"))
	}
}

func TestRetryGivesUpAtTimeout(t *testing.T) {
	f := newFakeCloud(t)
	f.server.Mux.HandleFunc("/compute/v2.1/servers/s1", func(w http.ResponseWriter, r *http.Request) {
		f.count(r)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusGatewayTimeout)
		fmt.Fprint(w, `{"message": "upstream nova-api timed out"}`)
	})
	var logs logBuf
	clock := &fakeClock{}
	c := retryClients(t, f, &logs, clock)
	_, err := servers.Get(context.Background(), c.Tenant.Compute, "s1").Extract()
	// Attempts at 0, 2, 4, 6, 8, 10s; the next would start after 10s.
	if n := f.callsTo("GET", "/compute/v2.1/servers/s1"); n != 6 {
		t.Errorf("%d attempts, want 6 within the 10s timeout", n)
	}
	if !gophercloud.ResponseCodeIs(err, http.StatusGatewayTimeout) || !strings.Contains(Describe(err).Error(), "504 Gateway Timeout: upstream nova-api timed out") {
		t.Errorf("want the last 504 with its message, got %v", Describe(err))
	}
	if !strings.Contains(logs.text(), "giving up after 6 attempts in 10s (api_retry timeout 10s)") {
		t.Errorf("no give-up line:\n%s", logs.text())
	}
}

func TestNoRetryOfPOST(t *testing.T) {
	f := newFakeCloud(t)
	f.server.Mux.HandleFunc("/compute/v2.1/servers", func(w http.ResponseWriter, r *http.Request) {
		n := f.count(r)
		f.mu.Lock()
		f.bodies = append(f.bodies, readAll(t, r.Body))
		f.mu.Unlock()
		if n == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusAccepted)
		fmt.Fprint(w, serverJSON)
	})
	var logs logBuf
	clock := &fakeClock{}
	c := retryClients(t, f, &logs, clock)
	url := c.Tenant.Compute.ServiceURL("servers")
	body := map[string]any{"server": map[string]any{"name": "asap2e2e-r1-a"}}
	_, err := c.Tenant.Compute.Post(context.Background(), url, body, nil, nil)
	if !gophercloud.ResponseCodeIs(err, http.StatusServiceUnavailable) || f.callsTo("POST", "/compute/v2.1/servers") != 1 {
		t.Fatalf("a create must not be retried: %d calls, err %v", f.callsTo("POST", "/compute/v2.1/servers"), err)
	}
	if logs.text() != "" {
		t.Errorf("unexpected retry log: %s", logs.text())
	}

	// Told (AllowRetry), the same POST is retried with the same body.
	f.mu.Lock()
	f.calls = map[string]int{}
	f.bodies = nil
	f.mu.Unlock()
	if _, err := c.Tenant.Compute.Post(AllowRetry(context.Background()), url, body, nil, nil); err != nil {
		t.Fatal(err)
	}
	if len(f.bodies) != 2 || f.bodies[0] != f.bodies[1] || !strings.Contains(f.bodies[1], "asap2e2e-r1-a") {
		t.Errorf("AllowRetry POST bodies: %q", f.bodies)
	}
}

func TestRetryDELETEOnDroppedConnection(t *testing.T) {
	f := newFakeCloud(t)
	f.server.Mux.HandleFunc("/network/v2.0/ports/p1", func(w http.ResponseWriter, r *http.Request) {
		if f.count(r) == 1 {
			dropConnection(t, w)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	var logs logBuf
	clock := &fakeClock{}
	c := retryClients(t, f, &logs, clock)
	_, err := c.Tenant.Network.Delete(context.Background(), c.Tenant.Network.ServiceURL("ports", "p1"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := f.callsTo("DELETE", "/network/v2.0/ports/p1"); n != 2 {
		t.Errorf("%d attempts, want 2", n)
	}
	if !strings.Contains(logs.text(), "/network/v2.0/ports/p1: connection dropped; retry 1 in 2s") {
		t.Errorf("retry log: %s", logs.text())
	}
}

func TestServerErrorSurfacesWithMessage(t *testing.T) {
	f := newFakeCloud(t)
	f.server.Mux.HandleFunc("/compute/v2.1/servers/s1", func(w http.ResponseWriter, r *http.Request) {
		f.count(r)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Openstack-Request-Id", "req-5f1c2d9e")
		w.WriteHeader(http.StatusInternalServerError)
		fmt.Fprint(w, `{"computeFault": {"code": 500, "message": "Unexpected API Error. Please report this at http://bugs.launchpad.net/nova/"}}`)
	})
	var logs logBuf
	clock := &fakeClock{}
	c := retryClients(t, f, &logs, clock)
	_, err := servers.Get(context.Background(), c.Tenant.Compute, "s1").Extract()
	if n := f.callsTo("GET", "/compute/v2.1/servers/s1"); n != 1 {
		t.Errorf("500 must not be retried: %d attempts", n)
	}
	if !gophercloud.ResponseCodeIs(err, 500) || !strings.Contains(err.Error(), "Unexpected API Error") {
		t.Errorf("gophercloud error lost status or message: %v", err)
	}
	d := Describe(fmt.Errorf("get server: %w", err))
	var ae *APIError
	if !errors.As(d, &ae) {
		t.Fatalf("Describe gave %T", d)
	}
	want := "GET " + f.url() + "/compute/v2.1/servers/s1: 500 Internal Server Error: Unexpected API Error. Please report this at http://bugs.launchpad.net/nova/ (request req-5f1c2d9e)"
	if ae.Error() != want || StatusCode(d) != 500 || !gophercloud.ResponseCodeIs(d, 500) {
		t.Errorf("Describe:\n got %s\nwant %s", ae.Error(), want)
	}
}

func TestRetryStopsWhenContextCancelled(t *testing.T) {
	f := newFakeCloud(t)
	ctx, cancel := context.WithCancel(context.Background())
	f.server.Mux.HandleFunc("/compute/v2.1/servers/s1", func(w http.ResponseWriter, r *http.Request) {
		f.count(r)
		cancel() // the run is interrupted while the cloud is down
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	var logs logBuf
	clock := &fakeClock{}
	c := retryClients(t, f, &logs, clock)
	_, err := servers.Get(ctx, c.Tenant.Compute, "s1").Extract()
	if err == nil || f.callsTo("GET", "/compute/v2.1/servers/s1") != 1 {
		t.Errorf("cancelled: %d attempts, err %v", f.callsTo("GET", "/compute/v2.1/servers/s1"), err)
	}
}

// Servers the admin pins belong to the admin's project: with the tenant's
// ports in another project Nova would refuse them (PortNotUsable), so the
// run says so before anything is built; one project, or no admin, is fine.
func TestPinProblemNeedsOneProject(t *testing.T) {
	f := newFakeCloud(t)
	writeCloudsYAML(t, f.url())
	c, err := NewClients(context.Background(), config.Cloud{Tenant: "lab", Admin: "lab-admin"})
	if err != nil {
		t.Fatal(err)
	}
	want := `cloud.admin "lab-admin" is scoped to project admin (p-admin), cloud.tenant "lab" to project demo (p-demo): the servers the admin pins to their hosts would belong to admin and Nova refuses the tenant's ports for them (PortNotUsable)`
	if got := c.PinProblem(); !strings.HasPrefix(got, want) {
		t.Errorf("PinProblem() = %q\nwant it to start %q", got, want)
	}
	same, err := NewClients(context.Background(), config.Cloud{Tenant: "lab-admin", Admin: "lab-admin"})
	if err != nil {
		t.Fatal(err)
	}
	if got := same.PinProblem(); got != "" {
		t.Errorf("one project: PinProblem() = %q", got)
	}
	alone, err := NewClients(context.Background(), config.Cloud{Tenant: "lab"})
	if err != nil {
		t.Fatal(err)
	}
	if got := alone.PinProblem(); got != "" {
		t.Errorf("no admin: PinProblem() = %q", got)
	}
}
