package faultproxy

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/cloud"
	"github.com/mosk-qa/asap2-e2e/e2e/wait"
)

// The plans in testdata/ were written by hand for this package: the
// delete-faults plan is the one suites/faults uses on the lab.

func TestParseLabPlan(t *testing.T) {
	data, err := os.ReadFile("testdata/plan-lab-delete-faults.json")
	if err != nil {
		t.Fatal(err)
	}
	p, err := Parse(data)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if len(p.Rules) != 5 {
		t.Fatalf("got %d rules, want 5", len(p.Rules))
	}
	slow := p.Rules[3]
	if slow.Action != ActionDelay || slow.Delay != 3*time.Second || slow.Skip != 2 || slow.Times != 2 {
		t.Errorf("rule 3 = %+v, want delay 3s skip 2 times 2", slow)
	}
	if !p.Rules[0].matches(httptest.NewRequest("DELETE", "http://198.18.0.1:9696/v2.0/ports/abc", nil)) {
		t.Error("port delete rule does not match a port delete")
	}
	if p.Rules[0].matches(httptest.NewRequest("DELETE", "http://198.18.0.1:9696/v2.0/ports/abc/bindings", nil)) {
		t.Error("port delete rule matches a sub-resource")
	}
}

func TestParseReportsEveryProblem(t *testing.T) {
	data, err := os.ReadFile("testdata/plan-bad.json")
	if err != nil {
		t.Fatal(err)
	}
	_, err = Parse(data)
	if err == nil {
		t.Fatal("Parse accepted a bad plan")
	}
	for _, want := range []string{
		"rules[0] (bad-status): status: must be 400..599 for action status, got 200",
		`rules[1] (bad-action): action: must be one of status, delay, drop, drop_after, got "explode"`,
		"rules[2] (bad-path): path:",
		"rules[3] (bad-times): times: must be >= 0, got -1",
		"rules[4] (no-delay): delay: must be > 0",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}

func TestParseRejectsUnknownKeysAndBadDurations(t *testing.T) {
	for in, want := range map[string]string{
		`{"rulez": []}`: `unknown field "rulez"`,
		`{"rules": [{"name": "x", "action": "drop", "codes": 1}]}`:    `rules[0]: json: unknown field "codes"`,
		`{"rules": [{"name": "x", "action": "delay", "delay": "3"}]}`: `rules[0] (x): delay: time: missing unit`,
		`{"rules": [{"action": "drop"}]}`:                             "rules[0]: name: must be set",
		`[`:                                                           "fault plan: unexpected EOF",
	} {
		_, err := Parse([]byte(in))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%s) = %v, want an error containing %q", in, err, want)
		}
	}
}

func TestRuleJSONRoundTrip(t *testing.T) {
	in := Plan{Rules: []Rule{{Name: "slow", Method: "GET", Path: "/x", Action: ActionDelay, Delay: 1500 * time.Millisecond, Times: 1}}}
	data, err := jsonMarshal(in)
	if err != nil {
		t.Fatal(err)
	}
	out, err := Parse(data)
	if err != nil {
		t.Fatalf("Parse(%s): %v", data, err)
	}
	if out.Rules[0].Delay != in.Rules[0].Delay || out.Rules[0].Path != "/x" || out.Rules[0].Times != 1 {
		t.Errorf("round trip of %s gave %+v", data, out.Rules[0])
	}
}

// upstream counts the requests that reached the "cloud".
func upstream(t *testing.T) (*httptest.Server, *atomic.Int32) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("X-Upstream", "yes")
		w.WriteHeader(http.StatusAccepted)
		_, _ = io.WriteString(w, r.Method+" "+r.URL.Path+" "+string(body))
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

func mustInjector(t *testing.T, rules ...Rule) *Injector {
	t.Helper()
	in, err := NewInjector(Plan{Rules: rules}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return in
}

func TestTransportStatusSkipTimes(t *testing.T) {
	srv, n := upstream(t)
	in := mustInjector(t, Rule{Name: "create-500", Method: "POST", Path: "/servers$", Action: ActionStatus, Status: 500, Skip: 1, Times: 1})
	c := &http.Client{Transport: &Transport{Injector: in}}
	var codes []int
	for i := 0; i < 3; i++ {
		resp, err := c.Post(srv.URL+"/servers", "application/json", strings.NewReader("{}"))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		codes = append(codes, resp.StatusCode)
		if resp.StatusCode == 500 && !strings.Contains(string(body), `"computeFault"`) {
			t.Errorf("500 body %s is not an OpenStack error document", body)
		}
	}
	if codes[0] != 202 || codes[1] != 500 || codes[2] != 202 {
		t.Errorf("status codes %v, want [202 500 202] (skip 1, times 1)", codes)
	}
	if n.Load() != 2 {
		t.Errorf("upstream saw %d requests, want 2 (the faulted one must not reach it)", n.Load())
	}
	hits := in.Hits()
	if len(hits) != 1 || hits[0].Rule != "create-500" || hits[0].Method != "POST" || !strings.HasSuffix(hits[0].URL, "/servers") {
		t.Errorf("hits = %+v", hits)
	}
	if len(in.Unfired()) != 0 || in.Fired("create-500") != 1 {
		t.Errorf("Unfired %v, Fired %d", in.Unfired(), in.Fired("create-500"))
	}
}

func TestUnfiredNamesRulesThatNeverMatched(t *testing.T) {
	srv, _ := upstream(t)
	in := mustInjector(t, Rule{Name: "never", Method: "DELETE", Action: ActionDrop}, Rule{Name: "gets", Method: "GET", Action: ActionStatus, Status: 409})
	resp, err := (&http.Client{Transport: &Transport{Injector: in}}).Get(srv.URL + "/x")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 409 {
		t.Errorf("status %d, want 409", resp.StatusCode)
	}
	if u := in.Unfired(); len(u) != 1 || u[0] != "never" {
		t.Errorf("Unfired = %v, want [never]", u)
	}
}

func TestTransportDelayUsesWait(t *testing.T) {
	srv, n := upstream(t)
	in := mustInjector(t, Rule{Name: "slow", Action: ActionDelay, Delay: 7 * time.Second})
	var waited []time.Duration
	in.wait = func(ctx context.Context, d time.Duration) error { waited = append(waited, d); return nil }
	resp, err := (&http.Client{Transport: &Transport{Injector: in}}).Get(srv.URL + "/y")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if len(waited) != 1 || waited[0] != 7*time.Second || n.Load() != 1 {
		t.Errorf("waited %v, upstream %d; want one 7s wait then the request forwarded", waited, n.Load())
	}
	in.wait = func(ctx context.Context, d time.Duration) error { return context.Canceled }
	_, err = (&http.Client{Transport: &Transport{Injector: in}}).Get(srv.URL + "/y")
	if !errors.Is(err, context.Canceled) {
		t.Errorf("a cut-short delay gave %v, want context.Canceled", err)
	}
}

// The cloud package's retrying transport must treat a dropped connection
// as retryable for a GET and must not repeat a POST on 503: this is the
// contract the fault matrix checks on the lab, here without a cloud.
func TestRetryTransportOverFaults(t *testing.T) {
	srv, n := upstream(t)
	in := mustInjector(t,
		Rule{Name: "drop-get", Method: "GET", Action: ActionDrop, Times: 1},
		Rule{Name: "post-503", Method: "POST", Action: ActionStatus, Status: 503, Times: 1},
		Rule{Name: "delete-503", Method: "DELETE", Action: ActionStatus, Status: 503, Times: 1},
	)
	rt := &cloud.RetryTransport{Base: &Transport{Injector: in}, Interval: wait.Interval{Timeout: time.Minute, Poll: time.Millisecond}}
	c := &http.Client{Transport: rt}

	resp, err := c.Get(srv.URL + "/servers/1")
	if err != nil {
		t.Fatalf("GET after one dropped connection: %v (want a retry)", err)
	}
	resp.Body.Close()
	if resp.StatusCode != 202 {
		t.Errorf("GET status %d, want 202 after the retry", resp.StatusCode)
	}

	req, _ := http.NewRequest(http.MethodDelete, srv.URL+"/ports/1", nil)
	resp, err = c.Do(req)
	if err != nil || resp.StatusCode != 202 {
		t.Fatalf("DELETE after one 503: %v %v (want a retry)", resp, err)
	}
	resp.Body.Close()

	resp, err = c.Post(srv.URL+"/servers", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 503 {
		t.Errorf("POST status %d, want the 503 returned as is (a create is not safe to repeat)", resp.StatusCode)
	}
	if n.Load() != 2 {
		t.Errorf("upstream saw %d requests, want 2 (GET and DELETE retries; the POST never)", n.Load())
	}
	if got := len(in.Hits()); got != 3 {
		t.Errorf("%d faults fired, want 3", got)
	}
}

func proxyClient(t *testing.T, p *Proxy) *http.Client {
	t.Helper()
	u, stop, err := p.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = stop() })
	pu, _ := url.Parse(u)
	tr := &http.Transport{Proxy: http.ProxyURL(pu), DisableKeepAlives: true}
	return &http.Client{Transport: tr}
}

func TestProxyForwardsAndInjects(t *testing.T) {
	srv, n := upstream(t)
	in := mustInjector(t,
		Rule{Name: "conflict", Method: "PUT", Action: ActionStatus, Status: 409},
		Rule{Name: "drop", Method: "DELETE", Action: ActionDrop, Times: 1},
		Rule{Name: "drop-after", Method: "PATCH", Action: ActionDropAfter, Times: 1},
	)
	c := proxyClient(t, &Proxy{Injector: in})

	resp, err := c.Post(srv.URL+"/v2.0/ports", "application/json", strings.NewReader(`{"port":{}}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 202 || string(body) != `POST /v2.0/ports {"port":{}}` || resp.Header.Get("X-Upstream") != "yes" {
		t.Errorf("forwarded answer %d %q %v", resp.StatusCode, body, resp.Header)
	}

	req, _ := http.NewRequest(http.MethodPut, srv.URL+"/v2.0/networks/1", strings.NewReader("{}"))
	resp, err = c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 409 || !strings.Contains(string(body), "conflictingRequest") || !strings.Contains(string(body), "rule conflict") {
		t.Errorf("409 answer %d %s", resp.StatusCode, body)
	}

	req, _ = http.NewRequest(http.MethodDelete, srv.URL+"/v2.0/ports/1", nil)
	if resp, err = c.Do(req); err == nil {
		resp.Body.Close()
		t.Errorf("dropped DELETE returned %d, want a connection error", resp.StatusCode)
	}
	before := n.Load()
	req, _ = http.NewRequest(http.MethodPatch, srv.URL+"/v2.0/ports/1", strings.NewReader("{}"))
	if resp, err = c.Do(req); err == nil {
		resp.Body.Close()
		t.Errorf("drop_after PATCH returned %d, want a connection error", resp.StatusCode)
	}
	if n.Load() != before+1 {
		t.Errorf("drop_after did not forward the request (upstream count %d -> %d)", before, n.Load())
	}
	if n.Load() != 2 {
		t.Errorf("upstream saw %d requests, want 2 (POST, PATCH)", n.Load())
	}
}

func TestProxyRefusesConnectAndOriginForm(t *testing.T) {
	p := &Proxy{Injector: mustInjector(t)}
	rec := httptest.NewRecorder()
	p.ServeHTTP(rec, httptest.NewRequest("GET", "/v2.0/ports", nil))
	if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), "absolute form") {
		t.Errorf("origin-form request: %d %s", rec.Code, rec.Body)
	}
	rec = httptest.NewRecorder()
	p.ServeHTTP(rec, httptest.NewRequest("CONNECT", "http://198.18.0.1:443", nil))
	if rec.Code != http.StatusBadRequest {
		t.Errorf("CONNECT: %d, want 400", rec.Code)
	}
}
