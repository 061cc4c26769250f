package cloud

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"

	"github.com/mosk-qa/asap2-e2e/e2e/wait"
)

// rateClients is retryClients with a rate_limit interval of 5 min, at
// most 1 min a wait.
func rateClients(t *testing.T, f *fakeCloud, logs *logBuf, clock *fakeClock) *Clients {
	t.Helper()
	return retryClients(t, f, logs, clock, WithRateLimit(wait.Interval{Timeout: 5 * time.Minute, Poll: time.Minute}))
}

// A create Nova refuses for its rate (429) is sent again — the service
// did not act on it — after the Retry-After it asks for, in seconds or as
// an HTTP date, one too long cut to rate_limit's poll; each wait is logged
// with the service that refused, and counted.
func TestRateLimitedCreateWaitsOutRetryAfter(t *testing.T) {
	f := newFakeCloud(t)
	var clock *fakeClock
	f.server.Mux.HandleFunc("/compute/v2.1/servers", func(w http.ResponseWriter, r *http.Request) {
		n := f.count(r)
		f.mu.Lock()
		f.bodies = append(f.bodies, readAll(t, r.Body))
		f.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch n {
		case 1:
			w.Header().Set("Retry-After", "7")
		case 2:
			w.Header().Set("Retry-After", clock.now().Add(20*time.Second).UTC().Format(http.TimeFormat))
		case 3:
			w.Header().Set("Retry-After", "3600")
		}
		if n <= 3 {
			w.WriteHeader(http.StatusTooManyRequests)
			fmt.Fprint(w, `{"overLimit": {"code": 429, "message": "This request was rate-limited."}}`)
			return
		}
		w.WriteHeader(http.StatusAccepted)
		fmt.Fprint(w, serverJSON)
	})
	var logs logBuf
	clock = &fakeClock{t: time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)}
	c := rateClients(t, f, &logs, clock)
	url := c.Tenant.Compute.ServiceURL("servers")
	if _, err := c.Tenant.Compute.Post(context.Background(), url, map[string]any{"server": map[string]any{"name": "asap2e2e-r1-a"}}, nil, nil); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(clock.slept) != "[7s 20s 1m0s]" {
		t.Errorf("waits %v, want [7s 20s 1m0s] (seconds, an HTTP date, 3600 s cut to rate_limit poll)", clock.slept)
	}
	if len(f.bodies) != 4 || f.bodies[0] != f.bodies[3] {
		t.Errorf("the create was not sent again as it was: %q", f.bodies)
	}
	if c.RateLimits.Refused() != 3 {
		t.Errorf("%d refusals counted, want 3", c.RateLimits.Refused())
	}
	want := []string{
		"cloud: compute (Nova) refused POST " + url + " for its rate (429 Too Many Requests): waiting 7s (as its Retry-After asks), then trying again (7s of at most 5m0s waited for this request)",
		"cloud: compute (Nova) refused POST " + url + " for its rate (429 Too Many Requests): waiting 20s (as its Retry-After asks), then trying again (27s of at most 5m0s waited for this request)",
		"cloud: compute (Nova) refused POST " + url + " for its rate (429 Too Many Requests): waiting 1m0s (Retry-After 1h0m0s cut to rate_limit poll), then trying again (1m27s of at most 5m0s waited for this request)",
	}
	if logs.text() != strings.Join(want, "\n") {
		t.Errorf("log:\n%s\nwant:\n%s", logs.text(), strings.Join(want, "\n"))
	}
}

// A cloud that keeps refusing is waited out no longer than rate_limit's
// timeout: the last refusal is returned, and the log says so; without a
// Retry-After the waits double from api_retry's poll up to rate_limit's.
func TestRateLimitGivesUpAtItsBound(t *testing.T) {
	f := newFakeCloud(t)
	f.server.Mux.HandleFunc("/network/v2.0/ports/p1", func(w http.ResponseWriter, r *http.Request) {
		f.count(r)
		w.WriteHeader(http.StatusTooManyRequests)
	})
	var logs logBuf
	clock := &fakeClock{}
	c := rateClients(t, f, &logs, clock)
	_, err := c.Tenant.Network.Get(context.Background(), c.Tenant.Network.ServiceURL("ports", "p1"), nil, nil)
	if !gophercloud.ResponseCodeIs(err, http.StatusTooManyRequests) {
		t.Fatalf("want the last 429, got %v", err)
	}
	if fmt.Sprint(clock.slept) != "[2s 4s 8s 16s 32s 1m0s 1m0s 1m0s]" {
		t.Errorf("waits %v", clock.slept)
	}
	if !strings.Contains(logs.text(), "cloud: network (Neutron) refused GET ") || !strings.Contains(logs.text(), "giving up after 4m2s of waiting (rate_limit timeout 5m0s)") {
		t.Errorf("log:\n%s", logs.text())
	}
}

// A quota refusal is no rate limit: Nova's 403, Neutron's 409 and a 413
// that names a quota (even with a Retry-After) are returned at once, and
// QuotaExceeded names the quota; a 413 without Retry-After is returned too.
func TestQuotaRefusalIsNotRetried(t *testing.T) {
	for _, tc := range []struct {
		status      int
		retryAfter  string
		body, quota string
	}{
		{http.StatusForbidden, "", `{"forbidden": {"code": 403, "message": "Quota exceeded for cores: Requested 16, but already used 0 of 8 cores"}}`, "cores"},
		{http.StatusConflict, "", `{"NeutronError": {"type": "OverQuota", "message": "Quota exceeded for resources: ['port'].", "detail": ""}}`, "port"},
		{http.StatusRequestEntityTooLarge, "30", `{"overLimit": {"code": 413, "message": "Quota exceeded for instances: Requested 1, but already used 10 of 10 instances"}}`, "instances"},
		{http.StatusRequestEntityTooLarge, "", `{"message": "request too large"}`, ""},
	} {
		f := newFakeCloud(t)
		f.server.Mux.HandleFunc("/compute/v2.1/servers", func(w http.ResponseWriter, r *http.Request) {
			f.count(r)
			if tc.retryAfter != "" {
				w.Header().Set("Retry-After", tc.retryAfter)
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(tc.status)
			fmt.Fprint(w, tc.body)
		})
		var logs logBuf
		clock := &fakeClock{}
		c := rateClients(t, f, &logs, clock)
		_, err := c.Tenant.Compute.Post(context.Background(), c.Tenant.Compute.ServiceURL("servers"), map[string]any{"server": map[string]any{}}, nil, nil)
		if n := f.callsTo("POST", "/compute/v2.1/servers"); n != 1 || logs.text() != "" || c.RateLimits.Refused() != 0 {
			t.Errorf("%d: %d calls, log %q: a quota refusal was retried", tc.status, n, logs.text())
		}
		q, ok := QuotaExceeded(err)
		if q != tc.quota || ok != (tc.quota != "") {
			t.Errorf("%d %s: QuotaExceeded = %q, %v; want %q", tc.status, tc.body, q, ok, tc.quota)
		}
	}
}
