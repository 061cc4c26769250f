package cloud

import (
	"strings"
	"testing"
)

// passwordOverride is clouds.WithPassword, named for the tests.
var passwordOverride = cloudsWithPassword

func TestRedact(t *testing.T) {
	token := "gAAAAABlive-token-9999"
	r := NewRedactor("Literal-Secret-1234", "abc") // "abc" is too short to mask literally
	r.AddSource(func() string { return token })
	cases := []struct{ in, want string }{
		{"X-Auth-Token: gAAAAABother", "X-Auth-Token: ***"},
		{"x-subject-token=zzz123 next", "x-subject-token=*** next"},
		{`map[X-Auth-Token:[gAAAAABother] Accept:[application/json]]`, `map[X-Auth-Token:[***] Accept:[application/json]]`},
		{`{"X-Auth-Token": "gAAAAABother"}`, `{"X-Auth-Token": "***"}`},
		{`{"user": {"name": "demo", "password": "p\"w d"}}`, `{"user": {"name": "demo", "password": "***"}}`},
		{`{"application_credential_secret":"s"}`, `{"application_credential_secret":"***"}`},
		{"auth?password=hunter2&x=1", "auth?password=***&x=1"},
		{"the value Literal-Secret-1234 leaked", "the value *** leaked"},
		{"token in a URL: /v3/tokens/gAAAAABlive-token-9999 ok", "token in a URL: /v3/tokens/*** ok"},
		{"abc stays", "abc stays"},
	}
	for _, c := range cases {
		if got := r.Redact(c.in); got != c.want {
			t.Errorf("Redact(%q)\n got %q\nwant %q", c.in, got, c.want)
		}
	}
	// A token issued later (re-authentication) is masked too.
	token = "gAAAAABnew-token-0000"
	if got := r.Redact("saw gAAAAABnew-token-0000"); got != "saw ***" {
		t.Errorf("new token not masked: %q", got)
	}
	var lines []string
	logf := r.Logf(func(format string, args ...any) {
		lines = append(lines, strings.TrimSpace(format+" "+args[0].(string)))
	})
	logf("request with %s", "Literal-Secret-1234")
	if len(lines) != 1 || strings.Contains(lines[0], "Literal-Secret-1234") {
		t.Errorf("Logf did not redact: %q", lines)
	}
	var nilR *Redactor
	if got := nilR.Redact("X-Auth-Token: t0k3n"); got != "X-Auth-Token: ***" {
		t.Errorf("nil Redactor: %q", got)
	}
}

// The error bodies below have the shapes documented in the API guides:
// Nova docs.openstack.org/api-guide/compute/faults.html, Neutron
// docs.openstack.org/api-ref/network/v2 ("NeutronError"), Keystone
// docs.openstack.org/api-ref/identity/v3 (error object); Glance answers
// webob's plain text.
func TestFaultMessage(t *testing.T) {
	cases := []struct{ body, want string }{
		{`{"itemNotFound": {"code": 404, "message": "Instance s1 could not be found."}}`, "Instance s1 could not be found."},
		{`{"NeutronError": {"type": "IpAddressGenerationFailure", "message": "No more IP addresses available on network n1.", "detail": ""}}`, "No more IP addresses available on network n1."},
		{`{"NeutronError": {"type": "X", "message": "Conflict", "detail": "port p1 in use"}}`, "Conflict (port p1 in use)"},
		{`{"error": {"code": 401, "message": "The request you have made requires authentication.", "title": "Unauthorized"}}`, "The request you have made requires authentication."},
		{"404 Not Found\n\nThe resource could not be found.\n\n   ", "404 Not Found The resource could not be found."},
		{``, ""},
	}
	for _, c := range cases {
		if got := FaultMessage([]byte(c.body)); got != c.want {
			t.Errorf("FaultMessage(%q) = %q, want %q", c.body, got, c.want)
		}
	}
	long := strings.Repeat("x", 2000)
	if got := FaultMessage([]byte(long)); len(got) != maxMessage+3 {
		t.Errorf("long body not bounded: %d chars", len(got))
	}
}
