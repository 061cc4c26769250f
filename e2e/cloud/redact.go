package cloud

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"
)

// Logf is a printf-style log sink (a suite passes GinkgoWriter.Printf, a tool
// log.Printf). The package never logs through anything else.
type Logf func(format string, args ...any)

// Mask replaces every secret in a redacted text.
const Mask = "***"

// minSecretLen keeps very short values (which would mask half of every line)
// out of the literal replacement; the patterns still catch them in context.
const minSecretLen = 4

var (
	// Header style: "X-Auth-Token: abc", "x-subject-token=abc", JSON or Go
	// map renderings of the same header ("X-Auth-Token":["abc"]).
	tokenHeaderRE = regexp.MustCompile(`(?i)((?:x-auth-token|x-subject-token|x-service-token|authorization)"?\s*[:=]\s*\[?\s*"?)[^\s"\],}]+`)
	// JSON fields holding secrets, e.g. "password": "s3cret".
	secretFieldRE = regexp.MustCompile(`(?i)("(?:password|secret|application_credential_secret|token|passcode|totp)"\s*:\s*")((?:[^"\\]|\\.)*)"`)
	// query or form style: password=s3cret&...
	secretParamRE = regexp.MustCompile(`(?i)((?:password|secret|token)=)[^&\s]+`)
)

// Redactor removes credentials from text before it reaches a log: the
// literal values it was given (passwords, application credential secrets,
// tokens, including tokens issued later, through sources) and anything in
// the shape of an auth header or a JSON password field.
type Redactor struct {
	mu      sync.Mutex
	secrets map[string]bool
	sources []func() string
}

// NewRedactor returns a Redactor that knows the given secret values.
func NewRedactor(secrets ...string) *Redactor {
	r := &Redactor{secrets: map[string]bool{}}
	r.Add(secrets...)
	return r
}

// Add registers more secret values (empty and very short ones are ignored).
func (r *Redactor) Add(secrets ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range secrets {
		if len(s) >= minSecretLen {
			r.secrets[s] = true
		}
	}
}

// AddSource registers a function returning a secret that changes over time,
// such as the current token of a provider client (re-authentication issues
// new ones).
func (r *Redactor) AddSource(f func() string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sources = append(r.sources, f)
}

// Redact returns s with every known secret and every credential-shaped
// field masked.
func (r *Redactor) Redact(s string) string {
	if r != nil {
		r.mu.Lock()
		lits := make([]string, 0, len(r.secrets)+len(r.sources))
		for v := range r.secrets {
			lits = append(lits, v)
		}
		sources := append([]func() string(nil), r.sources...)
		r.mu.Unlock()
		for _, f := range sources {
			if v := f(); len(v) >= minSecretLen {
				lits = append(lits, v)
			}
		}
		// Longest first, so a secret containing another is masked whole.
		sort.Slice(lits, func(i, j int) bool { return len(lits[i]) > len(lits[j]) })
		for _, v := range lits {
			s = strings.ReplaceAll(s, v, Mask)
		}
	}
	s = tokenHeaderRE.ReplaceAllString(s, "${1}"+Mask)
	s = secretFieldRE.ReplaceAllString(s, `${1}`+Mask+`"`)
	s = secretParamRE.ReplaceAllString(s, "${1}"+Mask)
	return s
}

// Logf wraps a sink so that every line goes through Redact. A nil sink
// gives a Logf that discards.
func (r *Redactor) Logf(sink Logf) Logf {
	if sink == nil {
		return func(string, ...any) {}
	}
	return func(format string, args ...any) {
		sink("%s", r.Redact(fmt.Sprintf(format, args...)))
	}
}
