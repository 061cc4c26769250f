package main

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Paths the issuer serves below its URL. The discovery document names the
// others, so only it is fixed by the protocol.
const (
	discoveryPath = "/.well-known/openid-configuration"
	jwksPath      = "/keys"
	tokenPath     = "/token"
	statsPath     = "/stats"
)

// issuer is an OpenID Connect provider reduced to what a kubeconfig's
// `auth-provider: oidc` and the API server's JWT authenticator use: the
// discovery document, the signing key set and a token endpoint that answers
// a refresh_token grant with an RS256 id-token. There is no login: the
// refresh-tokens it accepts at first are given to it (refreshTokens), as a
// Keycloak login would have left one in a kubeconfig. Each grant returns a
// new refresh-token too; the earlier ones stay valid (Keycloak's default,
// "Revoke Refresh Token" off), so a read-only kubeconfig's refresh-token
// starts any number of runs.
type issuer struct {
	url           string        // the iss claim and the discovery document's issuer
	clientID      string        // the aud claim; the only client it serves
	usernameClaim string        // the claim that holds the user's name (besides sub)
	lifetime      time.Duration // of each id-token
	key           *rsa.PrivateKey
	kid           string
	now           func() time.Time
	logf          func(format string, args ...any)

	mu      sync.Mutex
	refresh map[string]string // refresh-token → user
	grants  int               // refresh grants answered with an id-token
	refused int               // token requests refused
}

// stats is what statsPath answers: the counters the lab's job asserts on.
type stats struct {
	RefreshGrants int    `json:"refresh_grants"`
	Refused       int    `json:"refused"`
	Lifetime      string `json:"id_token_lifetime"`
}

// keyID names key in the key set and the id-tokens' header: the first bytes
// of the SHA-256 of its modulus, stable across restarts with the same key.
func keyID(key *rsa.PublicKey) string {
	sum := sha256.Sum256(key.N.Bytes())
	return base64.RawURLEncoding.EncodeToString(sum[:12])
}

func (is *issuer) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+discoveryPath, is.discovery)
	mux.HandleFunc("GET "+jwksPath, is.jwks)
	mux.HandleFunc("POST "+tokenPath, is.token)
	mux.HandleFunc("GET "+statsPath, is.stats)
	return mux
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}

func (is *issuer) discovery(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{
		"issuer":                                is.url,
		"jwks_uri":                              is.url + jwksPath,
		"token_endpoint":                        is.url + tokenPath,
		"authorization_endpoint":                is.url + "/authorize", // required by the spec; never served (no login)
		"response_types_supported":              []string{"id_token"},
		"subject_types_supported":               []string{"public"},
		"id_token_signing_alg_values_supported": []string{"RS256"},
		"grant_types_supported":                 []string{"refresh_token"},
		"token_endpoint_auth_methods_supported": []string{"client_secret_basic", "client_secret_post", "none"},
		"claims_supported":                      []string{"iss", "aud", "sub", "exp", "iat", "nbf", is.usernameClaim},
	})
}

func (is *issuer) jwks(w http.ResponseWriter, _ *http.Request) {
	pub := is.key.PublicKey
	writeJSON(w, http.StatusOK, map[string]any{"keys": []map[string]string{{
		"kty": "RSA", "use": "sig", "alg": "RS256", "kid": is.kid,
		"n": base64.RawURLEncoding.EncodeToString(pub.N.Bytes()),
		"e": base64.RawURLEncoding.EncodeToString(big.NewInt(int64(pub.E)).Bytes()),
	}}})
}

func (is *issuer) stats(w http.ResponseWriter, _ *http.Request) {
	is.mu.Lock()
	s := stats{RefreshGrants: is.grants, Refused: is.refused, Lifetime: is.lifetime.String()}
	is.mu.Unlock()
	writeJSON(w, http.StatusOK, s)
}

// token answers the token endpoint (RFC 6749 section 6, the refresh): the
// client is this issuer's client id, in HTTP Basic (client_secret_basic,
// as golang.org/x/oauth2 tries first) or in the form (client_secret_post,
// or a public client's client_id alone); there is no client secret to check.
func (is *issuer) token(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		is.refuse(w, http.StatusBadRequest, "invalid_request", err.Error())
		return
	}
	client := r.PostForm.Get("client_id")
	if id, _, ok := r.BasicAuth(); ok {
		client = id
	}
	if subtle.ConstantTimeCompare([]byte(client), []byte(is.clientID)) != 1 {
		w.Header().Set("WWW-Authenticate", `Basic realm="asap2lab-oidc"`)
		is.refuse(w, http.StatusUnauthorized, "invalid_client", fmt.Sprintf("unknown client %q", client))
		return
	}
	if gt := r.PostForm.Get("grant_type"); gt != "refresh_token" {
		is.refuse(w, http.StatusBadRequest, "unsupported_grant_type", fmt.Sprintf("grant_type %q: only refresh_token is served", gt))
		return
	}
	rt := r.PostForm.Get("refresh_token")
	is.mu.Lock()
	user, ok := is.refresh[rt]
	is.mu.Unlock()
	if !ok || rt == "" {
		is.refuse(w, http.StatusBadRequest, "invalid_grant", "unknown refresh token")
		return
	}
	now := is.now()
	exp := now.Add(is.lifetime)
	id, err := is.sign(map[string]any{
		"iss": is.url, "aud": is.clientID, "sub": user, is.usernameClaim: user,
		"iat": now.Unix(), "nbf": now.Unix(), "exp": exp.Unix(),
	})
	if err == nil {
		var next string
		if next, err = randomToken(); err == nil {
			is.mu.Lock()
			is.refresh[next] = user
			is.grants++
			n := is.grants
			is.mu.Unlock()
			is.logf("refresh grant %d: user %s, client %s, id-token exp %s (%s)", n, user, client, exp.UTC().Format(time.RFC3339), is.lifetime)
			writeJSON(w, http.StatusOK, map[string]any{
				"access_token": id, "id_token": id, "token_type": "Bearer",
				"expires_in": int(is.lifetime / time.Second), "refresh_token": next,
			})
			return
		}
	}
	is.refuse(w, http.StatusInternalServerError, "server_error", err.Error())
}

// refuse answers an OAuth 2.0 error and counts it.
func (is *issuer) refuse(w http.ResponseWriter, code int, kind, desc string) {
	is.mu.Lock()
	is.refused++
	is.mu.Unlock()
	is.logf("token request refused: %s: %s", kind, desc)
	writeJSON(w, code, map[string]string{"error": kind, "error_description": desc})
}

// sign is a compact JWS of claims, RS256 with the issuer's key.
func (is *issuer) sign(claims map[string]any) (string, error) {
	header, err := json.Marshal(map[string]string{"alg": "RS256", "typ": "JWT", "kid": is.kid})
	if err != nil {
		return "", err
	}
	payload, err := json.Marshal(claims)
	if err != nil {
		return "", err
	}
	enc := base64.RawURLEncoding.EncodeToString
	input := enc(header) + "." + enc(payload)
	sum := sha256.Sum256([]byte(input))
	sig, err := rsa.SignPKCS1v15(nil, is.key, crypto.SHA256, sum[:])
	if err != nil {
		return "", err
	}
	return input + "." + enc(sig), nil
}

// randomToken is an opaque refresh-token: 32 random bytes, base64url.
func randomToken() (string, error) {
	b := make([]byte, 32)
	if _, err := io.ReadFull(rand.Reader, b); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// parseRefreshTokens reads the refresh-tokens the issuer accepts at first:
// one "TOKEN USER" a line; blank lines and lines starting with # are
// skipped. Every bad line is named.
func parseRefreshTokens(name, text string) (map[string]string, error) {
	out := map[string]string{}
	var problems []string
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		switch {
		case len(f) != 2:
			problems = append(problems, fmt.Sprintf("%s:%d: want \"TOKEN USER\", got %d fields", name, i+1, len(f)))
		case len(f[0]) < 16:
			problems = append(problems, fmt.Sprintf("%s:%d: refresh-token of %d characters, want at least 16", name, i+1, len(f[0])))
		default:
			out[f[0]] = f[1]
		}
	}
	if len(problems) == 0 && len(out) == 0 {
		problems = append(problems, name+": no refresh-token")
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("%s", strings.Join(problems, "; "))
	}
	return out, nil
}
