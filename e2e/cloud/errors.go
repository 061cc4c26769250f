package cloud

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/gophercloud/gophercloud/v2"
)

// APIError is an error answer of an OpenStack API, with the service's own
// message pulled out of its body (Nova "computeFault"/"badRequest"/...,
// Neutron "NeutronError", Keystone "error", Glance plain text). It wraps the
// gophercloud error, so gophercloud.ResponseCodeIs keeps working.
type APIError struct {
	Method    string
	URL       string
	Status    int
	Message   string // the service's message, or the trimmed body
	RequestID string // x-openstack-request-id / x-compute-request-id, when sent
	Err       error
}

func (e *APIError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s: %d %s", e.Method, e.URL, e.Status, http.StatusText(e.Status))
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	if e.RequestID != "" {
		fmt.Fprintf(&b, " (request %s)", e.RequestID)
	}
	return b.String()
}

func (e *APIError) Unwrap() error { return e.Err }

// Describe turns a gophercloud unexpected-response error anywhere in err's
// chain into an *APIError (status, the service's message, request id); any
// other error is returned as it is. Callers use it to put the cloud's own
// words in a failure: `fmt.Errorf("create port: %w", cloud.Describe(err))`.
func Describe(err error) error {
	if err == nil {
		return nil
	}
	var already *APIError
	if errors.As(err, &already) {
		return err
	}
	var ue gophercloud.ErrUnexpectedResponseCode
	if !errors.As(err, &ue) {
		return err
	}
	return &APIError{
		Method:    ue.Method,
		URL:       ue.URL,
		Status:    ue.Actual,
		Message:   FaultMessage(ue.Body),
		RequestID: requestID(ue.ResponseHeader),
		Err:       err,
	}
}

// StatusCode returns the HTTP status of an API error in err's chain, or 0.
func StatusCode(err error) int {
	var ae *APIError
	if errors.As(err, &ae) {
		return ae.Status
	}
	var ue gophercloud.ErrUnexpectedResponseCode
	if errors.As(err, &ue) {
		return ue.Actual
	}
	return 0
}

func requestID(h http.Header) string {
	for _, k := range []string{"X-Openstack-Request-Id", "X-Compute-Request-Id", "X-Request-Id"} {
		if v := h.Get(k); v != "" {
			return v
		}
	}
	return ""
}

// maxMessage bounds a message taken from a raw body.
const maxMessage = 500

// FaultMessage extracts the human message of an OpenStack error body:
// {"<anyFault>": {"message": ...}} (Nova, Cinder), {"NeutronError":
// {"message": ..., "detail": ...}}, {"error": {"message": ...}} (Keystone),
// {"message": ...}; otherwise the body itself, whitespace-collapsed and
// bounded (Glance answers in text).
func FaultMessage(body []byte) string {
	var top map[string]json.RawMessage
	if json.Unmarshal(body, &top) == nil {
		if m := messageOf(top); m != "" {
			return m
		}
		// In key order, so a body with several fault objects always gives
		// the same message.
		for _, k := range slices.Sorted(maps.Keys(top)) {
			var inner map[string]json.RawMessage
			if json.Unmarshal(top[k], &inner) == nil {
				if m := messageOf(inner); m != "" {
					return m
				}
			}
		}
	}
	s := strings.Join(strings.Fields(string(body)), " ")
	if len(s) > maxMessage {
		cut := maxMessage
		for cut > 0 && !utf8.RuneStart(s[cut]) { // never split a character
			cut--
		}
		s = s[:cut] + "..."
	}
	return s
}

func messageOf(m map[string]json.RawMessage) string {
	var msg, detail string
	if raw, ok := m["message"]; ok {
		_ = json.Unmarshal(raw, &msg)
	}
	if raw, ok := m["detail"]; ok {
		_ = json.Unmarshal(raw, &detail)
	}
	if msg != "" && detail != "" && detail != msg {
		return msg + " (" + detail + ")"
	}
	return msg
}

// quotaMessage matches the services' words for a quota refusal: Nova's
// "Quota exceeded for cores: Requested 8, but already used 16 of 20
// cores" (403), Neutron's "Quota exceeded for resources: ['port']." (409),
// Cinder's and Nova's old "OverQuota" / "over quota" (413).
var quotaMessage = regexp.MustCompile(`(?i)quota exceeded|over ?quota|exceeds? .*quota`)

// quotaName finds the quota a message names: "cores", "port".
var quotaName = regexp.MustCompile(`(?i)quota exceeded for (?:resources: \[?'?)?([a-z_ ,']+?)'?\]?(?:[:.]|$)`)

// QuotaExceeded says whether err is the cloud refusing for a quota (403,
// 409 or 413 whose message says so), and names the quota ("cores",
// "port"; "a quota" when the message names none). A quota refusal is
// never retried: waiting frees no quota; the run fails with its name.
func QuotaExceeded(err error) (string, bool) {
	var ae *APIError
	if !errors.As(Describe(err), &ae) {
		return "", false
	}
	switch ae.Status {
	case http.StatusForbidden, http.StatusConflict, http.StatusRequestEntityTooLarge:
	default:
		return "", false
	}
	if !quotaMessage.MatchString(ae.Message) {
		return "", false
	}
	if m := quotaName.FindStringSubmatch(ae.Message); m != nil {
		return strings.Trim(m[1], " ,'"), true
	}
	return "a quota", true
}
