package cloud

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzFaultMessage: error bodies come from the cloud (or whatever sits in
// front of it). Seeds are the documented fault shapes of TestFaultMessage.
// The message must be deterministic, valid UTF-8 when the body is, and
// bounded when it is the body itself.
func FuzzFaultMessage(f *testing.F) {
	for _, seed := range []string{
		`{"itemNotFound": {"code": 404, "message": "Instance s1 could not be found."}}`,
		`{"NeutronError": {"type": "X", "message": "Conflict", "detail": "port p1 in use"}}`,
		`{"error": {"code": 401, "message": "The request you have made requires authentication.", "title": "Unauthorized"}}`,
		`{"a": {"message": "first"}, "b": {"message": "second"}}`,
		"<html><body><h1>503 Service Unavailable</h1>\nNo server is available</body></html>",
		"",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		m := FaultMessage(body)
		for range 3 {
			if again := FaultMessage(body); again != m {
				t.Fatalf("not deterministic: %q then %q", m, again)
			}
		}
		if utf8.Valid(body) && !utf8.ValidString(m) {
			t.Fatalf("valid UTF-8 body gave invalid message %q", m)
		}
		if strings.HasSuffix(m, "...") && len(m) > maxMessage+3 {
			t.Fatalf("message of %d bytes exceeds the bound %d", len(m), maxMessage)
		}
	})
}

// Two fault objects in one body: the message is the same every time.
func TestFaultMessageDeterministic(t *testing.T) {
	body := []byte(`{"b": {"message": "second"}, "a": {"message": "first"}}`)
	for range 50 {
		if got := FaultMessage(body); got != "first" {
			t.Fatalf("FaultMessage = %q, want %q (keys in order)", got, "first")
		}
	}
	long := []byte(strings.Repeat("é", maxMessage))
	if got := FaultMessage(long); !utf8.ValidString(got) {
		t.Errorf("cut inside a character: %q", got[len(got)-8:])
	}
}
