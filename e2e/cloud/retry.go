package cloud

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"syscall"
	"time"

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
type RetryTransport struct {
	Base     http.RoundTripper // nil = http.DefaultTransport
	Interval wait.Interval
	Logf     Logf // one line per retry; nil = silent

	sleep func(ctx context.Context, d time.Duration) error // tests replace it
	now   func() time.Time
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
	if !safeMethods[req.Method] && !allowed {
		return base.RoundTrip(req)
	}
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
	start := now()
	deadline := start.Add(t.Interval.Timeout)
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
		reason, retry := retryable(resp, err)
		if !retry || ctx.Err() != nil {
			return resp, err
		}
		wait := t.Interval.Poll
		if resp != nil {
			if ra := retryAfter(resp.Header.Get("Retry-After")); ra > wait {
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
		if resp != nil {
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
			resp.Body.Close()
		}
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

// retryAfter parses a Retry-After of whole seconds (the HTTP-date form is
// ignored: the poll interval applies).
func retryAfter(v string) time.Duration {
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		return 0
	}
	return time.Duration(n) * time.Second
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
