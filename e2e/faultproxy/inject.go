package faultproxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/wait"
)

// Hit is one fault the injector gave.
type Hit struct {
	Time   time.Time `json:"time"`
	Rule   string    `json:"rule"`
	Action Action    `json:"action"`
	Status int       `json:"status,omitempty"`
	Method string    `json:"method"`
	URL    string    `json:"url"` // without query
}

// Injector decides, request by request, which fault (if any) applies. It is
// safe for concurrent use; Transport and Proxy share one.
type Injector struct {
	mu      sync.Mutex
	plan    Plan
	seen    []int // matching requests per rule
	fired   []int // faults given per rule
	hits    []Hit
	onHit   func(Hit)
	now     func() time.Time
	wait    func(ctx context.Context, d time.Duration) error
	compErr error
}

// NewInjector compiles plan (rules built in code need no Parse) and
// returns its injector. onHit, when not nil, is called for every fault
// (e.g. to append it to a file).
func NewInjector(plan Plan, onHit func(Hit)) (*Injector, error) {
	p := Plan{Rules: append([]Rule(nil), plan.Rules...)}
	if err := p.compile(); err != nil {
		return nil, err
	}
	return &Injector{plan: p, seen: make([]int, len(p.Rules)), fired: make([]int, len(p.Rules)),
		onHit: onHit, now: time.Now, wait: wait.Sleep}, nil
}

// Hits returns every fault given so far, in order.
func (in *Injector) Hits() []Hit {
	in.mu.Lock()
	defer in.mu.Unlock()
	return append([]Hit(nil), in.hits...)
}

// Fired returns how many faults rule name gave.
func (in *Injector) Fired(name string) int {
	in.mu.Lock()
	defer in.mu.Unlock()
	n := 0
	for i, r := range in.plan.Rules {
		if r.Name == name {
			n += in.fired[i]
		}
	}
	return n
}

// Unfired names the rules that never gave a fault (a test whose fault
// never fired proved nothing).
func (in *Injector) Unfired() []string {
	in.mu.Lock()
	defer in.mu.Unlock()
	var out []string
	for i, r := range in.plan.Rules {
		if in.fired[i] == 0 {
			out = append(out, r.Name)
		}
	}
	return out
}

// decide returns the rule that applies to req (nil = none) and records the hit.
func (in *Injector) decide(req *http.Request) *Rule {
	in.mu.Lock()
	defer in.mu.Unlock()
	for i := range in.plan.Rules {
		r := &in.plan.Rules[i]
		if !r.matches(req) {
			continue
		}
		if r.Times > 0 && in.fired[i] >= r.Times {
			continue
		}
		in.seen[i]++
		if in.seen[i] <= r.Skip {
			continue
		}
		in.fired[i]++
		u := *req.URL
		u.RawQuery = ""
		h := Hit{Time: in.now().UTC(), Rule: r.Name, Action: r.Action, Status: r.Status, Method: req.Method, URL: u.String()}
		in.hits = append(in.hits, h)
		if in.onHit != nil {
			in.onHit(h)
		}
		return r
	}
	return nil
}

// ErrDropped is what Transport returns for a dropped connection; it wraps
// io.ErrUnexpectedEOF, as net/http does when a server closes mid-answer.
var ErrDropped = fmt.Errorf("faultproxy: connection dropped: %w", io.ErrUnexpectedEOF)

// Transport is an http.RoundTripper that applies the injector's faults and
// passes everything else to Base.
type Transport struct {
	Base     http.RoundTripper // nil = http.DefaultTransport
	Injector *Injector
}

// RoundTrip implements http.RoundTripper.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	base := t.Base
	if base == nil {
		base = http.DefaultTransport
	}
	r := t.Injector.decide(req)
	if r == nil {
		return base.RoundTrip(req)
	}
	switch r.Action {
	case ActionStatus:
		if req.Body != nil {
			_, _ = io.Copy(io.Discard, req.Body)
			req.Body.Close()
		}
		return statusResponse(req, r), nil
	case ActionDrop:
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, ErrDropped
	case ActionDropAfter:
		resp, err := base.RoundTrip(req)
		if err != nil {
			return nil, err
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
		return nil, ErrDropped
	default: // ActionDelay
		if err := t.Injector.wait(req.Context(), r.Delay); err != nil {
			return nil, fmt.Errorf("faultproxy: delay %s of rule %s: %w", r.Delay, r.Name, err)
		}
		return base.RoundTrip(req)
	}
}

// errorBody is an OpenStack-style error document naming the rule, so a
// harness message that quotes the cloud shows where the fault came from.
func errorBody(r *Rule) []byte {
	key := "computeFault"
	switch r.Status {
	case http.StatusConflict:
		key = "conflictingRequest"
	case http.StatusServiceUnavailable:
		key = "serviceUnavailable"
	}
	b, _ := json.Marshal(map[string]any{key: map[string]any{
		"code":    r.Status,
		"message": fmt.Sprintf("injected by faultproxy rule %s", r.Name),
	}})
	return b
}

func statusResponse(req *http.Request, r *Rule) *http.Response {
	body := errorBody(r)
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	return &http.Response{
		Status:        fmt.Sprintf("%d %s", r.Status, http.StatusText(r.Status)),
		StatusCode:    r.Status,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        h,
		Body:          io.NopCloser(strings.NewReader(string(body))),
		ContentLength: int64(len(body)),
		Request:       req,
	}
}

// Proxy is a forward HTTP proxy (requests in absolute form, as clients send
// them to $HTTP_PROXY) applying the injector's faults. CONNECT (https) is
// refused: faults need to see the requests.
type Proxy struct {
	Injector *Injector
	// Upstream sends the forwarded requests (nil = a transport without
	// proxy, so $HTTP_PROXY of this process does not loop back).
	Upstream http.RoundTripper
}

var hopHeaders = []string{"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate",
	"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

var directTransport = func() http.RoundTripper {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.Proxy = nil
	return t
}()

// ServeHTTP implements http.Handler.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.Method == http.MethodConnect || !req.URL.IsAbs() || req.URL.Scheme != "http" {
		http.Error(w, fmt.Sprintf("faultproxy: only plain http requests in absolute form are proxied, got %s %s", req.Method, req.RequestURI), http.StatusBadRequest)
		return
	}
	up := p.Upstream
	if up == nil {
		up = directTransport
	}
	out := req.Clone(req.Context())
	out.RequestURI = ""
	for _, h := range hopHeaders {
		out.Header.Del(h)
	}
	if req.ContentLength == 0 {
		out.Body = nil
	}
	r := p.Injector.decide(req)
	if r != nil {
		switch r.Action {
		case ActionStatus:
			resp := statusResponse(req, r)
			writeResponse(w, resp)
			return
		case ActionDrop:
			hijackClose(w)
			return
		case ActionDropAfter:
			resp, err := up.RoundTrip(out)
			if err == nil {
				_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
				resp.Body.Close()
			}
			hijackClose(w)
			return
		case ActionDelay:
			if err := p.Injector.wait(req.Context(), r.Delay); err != nil {
				return // the client went away
			}
		}
	}
	resp, err := up.RoundTrip(out)
	if err != nil {
		if errors.Is(err, context.Canceled) {
			return
		}
		http.Error(w, fmt.Sprintf("faultproxy: upstream %s: %v", req.URL.Host, err), http.StatusBadGateway)
		return
	}
	writeResponse(w, resp)
}

func writeResponse(w http.ResponseWriter, resp *http.Response) {
	defer resp.Body.Close()
	for _, h := range hopHeaders {
		resp.Header.Del(h)
	}
	for k, vs := range resp.Header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = io.Copy(w, resp.Body)
}

// hijackClose closes the client's connection with no answer at all.
func hijackClose(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic(http.ErrAbortHandler) // net/http closes the connection
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0) // RST: the client sees "connection reset"
	}
	conn.Close()
}

// Listen starts p on addr (e.g. "127.0.0.1:0") and returns its URL
// ("http://127.0.0.1:PORT", the value for HTTP_PROXY) and a stop function.
func (p *Proxy) Listen(addr string) (string, func() error, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, fmt.Errorf("faultproxy: listen on %s: %w", addr, err)
	}
	srv := &http.Server{Handler: p, ReadHeaderTimeout: 30 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return "http://" + ln.Addr().String(), srv.Close, nil
}
