// Package faultproxy injects API faults between the harness and a cloud:
// HTTP errors (500, 503, 409, ...), slow answers and dropped connections,
// chosen per request by a Plan of rules. It works as a RoundTripper
// (Transport, for in-process clients) and as a forward HTTP proxy (Proxy,
// for a harness run in another process: point HTTP_PROXY at it; the lab's
// APIs speak plain http). Every injected fault is recorded as a Hit, so a
// test can prove the fault really fired.
package faultproxy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"time"
)

// Action is what a rule does to a matching request.
type Action string

const (
	// ActionStatus answers with Rule.Status (and an OpenStack-style JSON
	// error body) without forwarding the request.
	ActionStatus Action = "status"
	// ActionDelay waits Rule.Delay, then forwards the request.
	ActionDelay Action = "delay"
	// ActionDrop closes the connection without any answer (the client sees
	// EOF / connection reset), without forwarding the request.
	ActionDrop Action = "drop"
	// ActionDropAfter forwards the request, then drops the connection
	// instead of returning the answer: the cloud did the work, the client
	// does not know.
	ActionDropAfter Action = "drop_after"
)

// Rule selects requests and says what to do with them.
//
// JSON form (a Plan is {"rules": [...]}):
//
//	{"name": "nova-create-500", "method": "POST", "path": "/servers$",
//	 "action": "status", "status": 500, "skip": 0, "times": 1}
type Rule struct {
	// Name labels the rule in hits and messages.
	Name string `json:"name"`
	// Method matches the request method exactly ("" = any).
	Method string `json:"method,omitempty"`
	// Path is a regular expression matched against the URL path ("" = any).
	Path string `json:"path,omitempty"`
	// Host matches the request host:port exactly ("" = any).
	Host   string        `json:"host,omitempty"`
	Action Action        `json:"action"`
	Status int           `json:"status,omitempty"` // ActionStatus
	Delay  time.Duration `json:"-"`                // ActionDelay
	// Skip lets the first Skip matching requests through untouched.
	Skip int `json:"skip,omitempty"`
	// Times bounds how often the fault fires (0 = every matching request
	// after Skip).
	Times int `json:"times,omitempty"`

	re *regexp.Regexp
}

// Plan is an ordered list of rules; the first rule that matches a request
// and still has faults to give decides.
type Plan struct {
	Rules []Rule `json:"rules"`
}

// MarshalJSON writes Delay as a Go duration string ("3s").
func (r Rule) MarshalJSON() ([]byte, error) {
	type plain Rule
	out := struct {
		plain
		Delay string `json:"delay,omitempty"`
	}{plain: plain(r)}
	if r.Delay > 0 {
		out.Delay = r.Delay.String()
	}
	return json.Marshal(out)
}

// Parse decodes a JSON plan strictly (unknown keys are errors) and checks
// every rule; all problems are reported at once, each naming the rule by
// index and name.
func Parse(data []byte) (Plan, error) {
	var raw struct {
		Rules []json.RawMessage `json:"rules"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&raw); err != nil {
		return Plan{}, fmt.Errorf("fault plan: %w", err)
	}
	var p Plan
	var errs []error
	for i, msg := range raw.Rules {
		var rj struct {
			Name   string `json:"name"`
			Method string `json:"method"`
			Path   string `json:"path"`
			Host   string `json:"host"`
			Action Action `json:"action"`
			Status int    `json:"status"`
			Delay  string `json:"delay"`
			Skip   int    `json:"skip"`
			Times  int    `json:"times"`
		}
		d := json.NewDecoder(bytes.NewReader(msg))
		d.DisallowUnknownFields()
		if err := d.Decode(&rj); err != nil {
			errs = append(errs, fmt.Errorf("fault plan: rules[%d]: %w", i, err))
			continue
		}
		r := Rule{Name: rj.Name, Method: rj.Method, Path: rj.Path, Host: rj.Host, Action: rj.Action,
			Status: rj.Status, Skip: rj.Skip, Times: rj.Times}
		if rj.Delay != "" {
			dur, err := time.ParseDuration(rj.Delay)
			if err != nil {
				errs = append(errs, fmt.Errorf("fault plan: rules[%d] (%s): delay: %w", i, rj.Name, err))
				continue
			}
			r.Delay = dur
		}
		p.Rules = append(p.Rules, r)
	}
	if len(errs) == 0 {
		if err := p.compile(); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return Plan{}, errors.Join(errs...)
	}
	return p, nil
}

// compile checks every rule and compiles its path expression.
func (p *Plan) compile() error {
	var errs []error
	for i := range p.Rules {
		r := &p.Rules[i]
		at := fmt.Sprintf("fault plan: rules[%d] (%s)", i, r.Name)
		if r.Name == "" {
			errs = append(errs, fmt.Errorf("fault plan: rules[%d]: name: must be set", i))
		}
		switch r.Action {
		case ActionStatus:
			if r.Status < 400 || r.Status > 599 {
				errs = append(errs, fmt.Errorf("%s: status: must be 400..599 for action status, got %d", at, r.Status))
			}
		case ActionDelay:
			if r.Delay <= 0 {
				errs = append(errs, fmt.Errorf("%s: delay: must be > 0 for action delay, got %s", at, r.Delay))
			}
		case ActionDrop, ActionDropAfter:
		default:
			errs = append(errs, fmt.Errorf("%s: action: must be one of status, delay, drop, drop_after, got %q", at, r.Action))
		}
		if r.Skip < 0 {
			errs = append(errs, fmt.Errorf("%s: skip: must be >= 0, got %d", at, r.Skip))
		}
		if r.Times < 0 {
			errs = append(errs, fmt.Errorf("%s: times: must be >= 0, got %d", at, r.Times))
		}
		if r.Method != "" && r.Method != strings.ToUpper(r.Method) {
			errs = append(errs, fmt.Errorf("%s: method: must be upper case, got %q", at, r.Method))
		}
		re, err := regexp.Compile(r.Path)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: path: %w", at, err))
			continue
		}
		r.re = re
	}
	return errors.Join(errs...)
}

func (r *Rule) matches(req *http.Request) bool {
	if r.Method != "" && r.Method != req.Method {
		return false
	}
	if r.Host != "" && r.Host != req.URL.Host {
		return false
	}
	return r.re == nil || r.re.MatchString(req.URL.Path)
}
