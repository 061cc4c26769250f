package cloud

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/config"
	"github.com/mosk-qa/asap2-e2e/e2e/wait"
)

type allowRetryKey struct{}

// AllowRetry marks the requests made with ctx as safe to retry even when
// their method is not (a POST the caller knows to be idempotent, e.g. a
// server action that is harmless to repeat). Never use it for creates.
func AllowRetry(ctx context.Context) context.Context {
	return context.WithValue(ctx, allowRetryKey{}, true)
}

// RetryTransport retries requests that are safe to repeat (GET, HEAD,
// DELETE, or any request whose context went through AllowRetry) when the
// cloud answers 502, 503 or 504 or the connection is reset, refused or
// dropped. Attempts are Interval.Poll apart (longer when the answer carries
// a Retry-After), and no attempt starts after Interval.Timeout since the
// first. Each retry is logged. The last answer or error is returned as it
// came, so gophercloud reports its status code and message.
//
// A refusal for the request's rate — 429 Too Many Requests, or 413 with a
// Retry-After, as Nova's and Neutron's rate limiters and the proxies in
// front of them answer — is waited out whatever the method (the service
// did not act on the request, so a create is repeated too, when its body
// can be sent again): Retry-After (seconds or an HTTP date) as asked, cut
// to RateLimit.Poll, or without one Interval.Poll doubling up to it; the
// waits of one request end at RateLimit.Timeout. Each wait is logged with
// the service that refused, and counted in RateLimits. A refusal whose
// message speaks of a quota is no rate limit: it is returned at once, as
// 403 and 409 "Quota exceeded" are (QuotaExceeded names the quota).
type RetryTransport struct {
	Base     http.RoundTripper // nil = http.DefaultTransport
	Interval wait.Interval
	// RateLimit bounds the waits after rate-limit refusals (the
	// rate_limit interval): Poll the longest single wait, Timeout all of
	// one request's. Zero: config.DefaultIntervals' rate_limit.
	RateLimit wait.Interval
	// RateLimits counts the rate-limit refusals waited out; nil = none.
	RateLimits *RateLimits
	Logf       Logf // one line per retry; nil = silent

	services atomic.Pointer[[]serviceEndpoint]                // for the log: whose URL it is
	sleep    func(ctx context.Context, d time.Duration) error // tests replace it
	now      func() time.Time
}

// RateLimits counts the requests a cloud refused for their rate and the
// RetryTransport waited out. It is safe for concurrent use; a nil one
// counts nothing.
type RateLimits struct{ n atomic.Int64 }

// Refused is how many rate-limit refusals were waited out so far.
func (r *RateLimits) Refused() int64 {
	if r == nil {
		return 0
	}
	return r.n.Load()
}

func (r *RateLimits) add() {
	if r != nil {
		r.n.Add(1)
	}
}

// serviceEndpoint names the service behind an endpoint URL.
type serviceEndpoint struct{ prefix, name string }

// NameServices tells the transport which service each endpoint URL is
// (e.g. "compute" for Nova's), so its log says which service refused.
func (t *RetryTransport) NameServices(byEndpoint map[string]string) {
	var out []serviceEndpoint
	if old := t.services.Load(); old != nil {
		out = append(out, *old...)
	}
	for prefix, name := range byEndpoint {
		if prefix != "" {
			out = append(out, serviceEndpoint{strings.TrimSuffix(prefix, "/"), name})
		}
	}
	// Longest prefix first: a service under another's path wins.
	slices.SortFunc(out, func(a, b serviceEndpoint) int { return len(b.prefix) - len(a.prefix) })
	t.services.Store(&out)
}

// service is the name of the service u belongs to, else its host.
func (t *RetryTransport) service(u *url.URL) string {
	s := u.String()
	if known := t.services.Load(); known != nil {
		for _, e := range *known {
			if strings.HasPrefix(s, e.prefix) {
				return e.name
			}
		}
	}
	return "the cloud at " + u.Host
}

// safeMethods are retried without being told.
var safeMethods = map[string]bool{http.MethodGet: true, http.MethodHead: true, http.MethodDelete: true}

// RoundTrip implements http.RoundTripper.
func (t *RetryTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	base := t.Base
	if base == nil {
		base = http.DefaultTransport
	}
	ctx := req.Context()
	allowed, _ := ctx.Value(allowRetryKey{}).(bool)
	safe := safeMethods[req.Method] || allowed
	if req.Body != nil && req.Body != http.NoBody && req.GetBody == nil {
		return base.RoundTrip(req) // the body cannot be sent twice
	}
	now, sleep := t.now, t.sleep
	if now == nil {
		now = time.Now
	}
	if sleep == nil {
		sleep = wait.Sleep
	}
	limit := t.RateLimit
	if limit.Timeout <= 0 || limit.Poll <= 0 {
		limit = config.DefaultIntervals[config.IntervalRateLimit]
	}
	start := now()
	deadline := start.Add(t.Interval.Timeout)
	var limitedFor time.Duration // waited after rate-limit refusals
	backoff := t.Interval.Poll
	if backoff <= 0 {
		backoff = limit.Poll
	}
	for attempt := 1; ; attempt++ {
		try := req
		if attempt > 1 {
			try = req.Clone(ctx)
			if req.GetBody != nil {
				body, err := req.GetBody()
				if err != nil {
					return nil, fmt.Errorf("retry %s %s: %w", req.Method, req.URL.Redacted(), err)
				}
				try.Body = body
			}
		}
		resp, err := base.RoundTrip(try)
		if ctx.Err() == nil && rateLimited(resp, now()) {
			w, why := backoff, "no Retry-After: backing off"
			if ra := retryAfter(resp.Header.Get("Retry-After"), now()); ra > 0 {
				w, why = ra, "as its Retry-After asks"
			} else {
				backoff = min(2*backoff, limit.Poll)
			}
			if w > limit.Poll {
				w, why = limit.Poll, fmt.Sprintf("Retry-After %s cut to rate_limit poll", w)
			}
			svc := t.service(req.URL)
			if limitedFor+w > limit.Timeout {
				if t.Logf != nil {
					t.Logf("cloud: %s refused %s %s for its rate (%s); giving up after %s of waiting (rate_limit timeout %s)",
						svc, req.Method, req.URL.Redacted(), resp.Status, limitedFor, limit.Timeout)
				}
				return resp, err
			}
			drain(resp)
			t.RateLimits.add()
			limitedFor += w
			if t.Logf != nil {
				t.Logf("cloud: %s refused %s %s for its rate (%s): waiting %s (%s), then trying again (%s of at most %s waited for this request)",
					svc, req.Method, req.URL.Redacted(), resp.Status, w, why, limitedFor, limit.Timeout)
			}
			if err := sleep(ctx, w); err != nil {
				return nil, fmt.Errorf("%s %s: %s refused it for its rate, and the wait before trying again was cut short: %w", req.Method, req.URL.Redacted(), svc, err)
			}
			continue
		}
		reason, retry := retryable(resp, err)
		if !safe || !retry || ctx.Err() != nil {
			return resp, err
		}
		wait := t.Interval.Poll
		if resp != nil {
			if ra := retryAfter(resp.Header.Get("Retry-After"), now()); ra > wait {
				wait = ra
			}
		}
		if now().Add(wait).After(deadline) {
			if t.Logf != nil {
				t.Logf("cloud: %s %s: %s; giving up after %d attempts in %s (api_retry timeout %s)",
					req.Method, req.URL.Redacted(), reason, attempt, now().Sub(start).Round(time.Millisecond), t.Interval.Timeout)
			}
			return resp, err
		}
		drain(resp)
		if t.Logf != nil {
			t.Logf("cloud: %s %s: %s; retry %d in %s", req.Method, req.URL.Redacted(), reason, attempt, wait)
		}
		if err := sleep(ctx, wait); err != nil {
			return nil, fmt.Errorf("%s %s: %s, and the wait before retrying was cut short: %w", req.Method, req.URL.Redacted(), reason, err)
		}
	}
}

// retryable says whether an answer is worth another attempt, and why.
func retryable(resp *http.Response, err error) (string, bool) {
	if err != nil {
		switch {
		case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
			return "", false
		case errors.Is(err, syscall.ECONNRESET):
			return "connection reset", true
		case errors.Is(err, syscall.ECONNREFUSED):
			return "connection refused", true
		case errors.Is(err, syscall.EPIPE):
			return "broken pipe", true
		case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
			return "connection dropped", true
		}
		return "", false
	}
	switch resp.StatusCode {
	case http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return resp.Status, true
	}
	return "", false
}

// drain reads and closes an answer that is not returned.
func drain(resp *http.Response) {
	if resp != nil {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
	}
}

// rateLimited says whether an answer refuses the request for its rate:
// 429, or 413 with a Retry-After in the future (Nova's old rate limiter;
// its old quota refusal was a 413 too, with none, or with a message that
// names a quota). Its body, read to look, is put back.
func rateLimited(resp *http.Response, now time.Time) bool {
	if resp == nil {
		return false
	}
	switch resp.StatusCode {
	case http.StatusTooManyRequests:
	case http.StatusRequestEntityTooLarge:
		if retryAfter(resp.Header.Get("Retry-After"), now) <= 0 {
			return false
		}
	default:
		return false
	}
	const peek = 64 << 10
	body, _ := io.ReadAll(io.LimitReader(resp.Body, peek))
	resp.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(body), resp.Body), resp.Body}
	return !quotaMessage.MatchString(string(body))
}

// retryAfter parses a Retry-After: whole seconds, or an HTTP date (the
// time until it). 0 when absent, unparsable or past.
func retryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil {
		return max(time.Duration(n)*time.Second, 0)
	}
	if at, err := http.ParseTime(v); err == nil && at.After(now) {
		return at.Sub(now).Round(time.Second)
	}
	return 0
}

// LogTransport logs one line per request: method, URL, status, duration,
// and for requests with a body (e.g. the Keystone auth POST), the body, all
// through the Redactor. It is for debugging a cloud (--v); it never logs
// response bodies.
type LogTransport struct {
	Base     http.RoundTripper
	Logf     Logf
	Redactor *Redactor
	now      func() time.Time
}

// maxLoggedBody bounds the request body a LogTransport shows.
const maxLoggedBody = 4096

// RoundTrip implements http.RoundTripper.
func (t *LogTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	base := t.Base
	if base == nil {
		base = http.DefaultTransport
	}
	now := t.now
	if now == nil {
		now = time.Now
	}
	logf := t.Redactor.Logf(t.Logf)
	body := ""
	if req.GetBody != nil {
		if rc, err := req.GetBody(); err == nil {
			b, _ := io.ReadAll(io.LimitReader(rc, maxLoggedBody))
			rc.Close()
			body = " body " + string(b)
		}
	}
	headers := ""
	for _, k := range []string{"X-Auth-Token", "Openstack-Api-Version", "X-Openstack-Nova-Api-Version"} {
		if v := req.Header.Get(k); v != "" {
			headers += " " + k + ": " + v
		}
	}
	start := now()
	resp, err := base.RoundTrip(req)
	took := now().Sub(start).Round(time.Millisecond)
	if err != nil {
		logf("cloud: %s %s%s%s -> error after %s: %v", req.Method, req.URL.Redacted(), headers, body, took, err)
		return resp, err
	}
	logf("cloud: %s %s%s%s -> %s in %s", req.Method, req.URL.Redacted(), headers, body, resp.Status, took)
	return resp, err
}
