package main

import (
	"bytes"
	"context"
	"crypto"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

const testRT = "rt-0123456789abcdef"

// newTestIssuer is an issuer at a plain HTTP test server, its clock at now,
// accepting testRT for user re.
func newTestIssuer(t *testing.T, now time.Time) (*issuer, *httptest.Server) {
	t.Helper()
	st, err := loadState(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	is := &issuer{clientID: "asap2lab", usernameClaim: "preferred_username", lifetime: 20 * time.Second,
		key: st.signing, kid: keyID(&st.signing.PublicKey), now: func() time.Time { return now },
		logf: t.Logf, refresh: map[string]string{testRT: "re"}}
	srv := httptest.NewServer(is.handler())
	t.Cleanup(srv.Close)
	is.url = srv.URL
	return is, srv
}

func getJSON(t *testing.T, c *http.Client, u string, v any) {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", u, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
}

// refreshGrant posts a refresh_token grant as golang.org/x/oauth2 does
// (client id in HTTP Basic, or in the form when basic is false).
func refreshGrant(t *testing.T, tokenURL, client, grant, rt string, basic bool) (int, map[string]any) {
	t.Helper()
	form := url.Values{"grant_type": {grant}, "refresh_token": {rt}}
	if !basic {
		form.Set("client_id", client)
	}
	req, _ := http.NewRequest(http.MethodPost, tokenURL, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if basic {
		req.SetBasicAuth(url.QueryEscape(client), "")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, body
}

// verify checks token's RS256 signature against the key set at jwksURL,
// as the API server's JWT authenticator does, and returns its header and
// claims.
func verify(t *testing.T, jwksURL, token string) (header map[string]string, claims map[string]any) {
	t.Helper()
	var set struct {
		Keys []struct{ Kty, Alg, Kid, Use, N, E string }
	}
	getJSON(t, http.DefaultClient, jwksURL, &set)
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		t.Fatalf("id-token %q: %d parts", token, len(parts))
	}
	dec := func(s string, v any) {
		b, err := base64.RawURLEncoding.DecodeString(s)
		if err != nil {
			t.Fatal(err)
		}
		if v != nil {
			if err := json.Unmarshal(b, v); err != nil {
				t.Fatal(err)
			}
		}
	}
	dec(parts[0], &header)
	dec(parts[1], &claims)
	if len(set.Keys) != 1 || set.Keys[0].Kid != header["kid"] || set.Keys[0].Kty != "RSA" || set.Keys[0].Alg != "RS256" || header["alg"] != "RS256" {
		t.Fatalf("key set %+v, header %v: want one RSA RS256 key with the header's kid", set.Keys, header)
	}
	n, _ := base64.RawURLEncoding.DecodeString(set.Keys[0].N)
	e, _ := base64.RawURLEncoding.DecodeString(set.Keys[0].E)
	pub := &rsa.PublicKey{N: new(big.Int).SetBytes(n), E: int(new(big.Int).SetBytes(e).Int64())}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if err := rsa.VerifyPKCS1v15(pub, crypto.SHA256, sum[:], sig); err != nil {
		t.Fatalf("the id-token's signature does not verify with the key set: %v", err)
	}
	return header, claims
}

// TestRefreshChain: discovery as client-go's oidc auth-provider reads it,
// then a chain of refreshes: each answers a signed id-token of the
// configured lifetime and a new refresh-token that works too, the first one
// stays valid, and /stats counts the grants.
func TestRefreshChain(t *testing.T) {
	now := time.Date(2026, 12, 6, 4, 0, 0, 0, time.UTC)
	_, srv := newTestIssuer(t, now)
	var raw map[string]any
	getJSON(t, http.DefaultClient, srv.URL+discoveryPath, &raw)
	if raw["issuer"] != srv.URL || raw["token_endpoint"] != srv.URL+tokenPath || raw["jwks_uri"] != srv.URL+jwksPath {
		t.Fatalf("discovery %v: want issuer %s with its token endpoint and key set", raw, srv.URL)
	}
	rt := testRT
	for i, basic := range []bool{true, false, true} {
		code, body := refreshGrant(t, srv.URL+tokenPath, "asap2lab", "refresh_token", rt, basic)
		if code != http.StatusOK {
			t.Fatalf("grant %d: %d %v", i+1, code, body)
		}
		id, _ := body["id_token"].(string)
		_, claims := verify(t, srv.URL+jwksPath, id)
		want := map[string]any{"iss": srv.URL, "aud": "asap2lab", "sub": "re", "preferred_username": "re",
			"iat": float64(now.Unix()), "nbf": float64(now.Unix()), "exp": float64(now.Add(20 * time.Second).Unix())}
		if fmt.Sprint(claims) != fmt.Sprint(want) {
			t.Errorf("grant %d: claims %v, want %v", i+1, claims, want)
		}
		if body["expires_in"] != float64(20) || body["token_type"] != "Bearer" {
			t.Errorf("grant %d: expires_in %v, token_type %v", i+1, body["expires_in"], body["token_type"])
		}
		next, _ := body["refresh_token"].(string)
		if next == "" || next == rt {
			t.Fatalf("grant %d: refresh_token %q, want a new one", i+1, next)
		}
		rt = next
	}
	if code, body := refreshGrant(t, srv.URL+tokenPath, "asap2lab", "refresh_token", testRT, true); code != http.StatusOK {
		t.Errorf("the first refresh-token after rotation: %d %v, want it still valid (a read-only kubeconfig starts every run with it)", code, body)
	}
	var s stats
	getJSON(t, http.DefaultClient, srv.URL+statsPath, &s)
	if s != (stats{RefreshGrants: 4, Refused: 0, Lifetime: "20s"}) {
		t.Errorf("stats %+v, want 4 grants, none refused, 20s", s)
	}
}

// TestTokenRefused: what the token endpoint refuses, with the OAuth 2.0
// error a client reports, each counted.
func TestTokenRefused(t *testing.T) {
	_, srv := newTestIssuer(t, time.Now())
	for _, tc := range []struct {
		name, client, grant, rt string
		code                    int
		err                     string
	}{
		{"another client", "kubernetes", "refresh_token", testRT, http.StatusUnauthorized, "invalid_client"},
		{"no client", "", "refresh_token", testRT, http.StatusUnauthorized, "invalid_client"},
		{"password grant", "asap2lab", "password", testRT, http.StatusBadRequest, "unsupported_grant_type"},
		{"unknown refresh-token", "asap2lab", "refresh_token", "rt-unknown-0123456789", http.StatusBadRequest, "invalid_grant"},
		{"empty refresh-token", "asap2lab", "refresh_token", "", http.StatusBadRequest, "invalid_grant"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body := refreshGrant(t, srv.URL+tokenPath, tc.client, tc.grant, tc.rt, false)
			if code != tc.code || body["error"] != tc.err || body["id_token"] != nil {
				t.Errorf("%d %v, want %d %s and no id_token", code, body, tc.code, tc.err)
			}
		})
	}
	var s stats
	getJSON(t, http.DefaultClient, srv.URL+statsPath, &s)
	if s.RefreshGrants != 0 || s.Refused != 5 {
		t.Errorf("stats %+v, want 0 grants and 5 refused", s)
	}
}

func TestParseRefreshTokens(t *testing.T) {
	got, err := parseRefreshTokens("f", "# lab/kube/up.sh\n\n"+testRT+" asap2lab-re\n  rt-fedcba9876543210   other \n")
	if err != nil || len(got) != 2 || got[testRT] != "asap2lab-re" || got["rt-fedcba9876543210"] != "other" {
		t.Fatalf("got %v, %v", got, err)
	}
	for _, tc := range []struct{ text, want string }{
		{"", "f: no refresh-token"},
		{"# only a comment\n", "f: no refresh-token"},
		{testRT + "\nshort re\n" + testRT + " a b\n", `f:1: want "TOKEN USER", got 1 fields; f:2: refresh-token of 5 characters, want at least 16; f:3: want "TOKEN USER", got 3 fields`},
	} {
		if _, err := parseRefreshTokens("f", tc.text); err == nil || err.Error() != tc.want {
			t.Errorf("%q: %v, want %s", tc.text, err, tc.want)
		}
	}
}

func TestCheckListen(t *testing.T) {
	for listen, ok := range map[string]bool{
		"127.0.0.1:16445": true, "127.0.0.1:0": true, "[::1]:16445": true, "198.18.0.1:16445": true, "198.19.255.254:1": true,
		"0.0.0.0:16445": false, "[::]:16445": false, "10.0.0.1:16445": false, "198.20.0.1:16445": false,
		"localhost:16445": false, "127.0.0.1": false,
	} {
		if err := checkListen(listen); (err == nil) != ok {
			t.Errorf("checkListen(%q) = %v, want ok %v", listen, err, ok)
		}
	}
	o := options{listen: "0.0.0.0:1", lifetime: time.Millisecond, clientID: "c", usernameClaim: "u"}
	err := o.check()
	for _, want := range []string{"-dir is required", "-refresh-tokens is required", "-lifetime must be at least 1s, got 1ms", `-listen "0.0.0.0:1": 0.0.0.0 is neither loopback`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("check: %v, want it to say %q", err, want)
		}
	}
}

// TestServeTLS: the command's server over HTTPS with the CA it writes out;
// started again on the same directory it keeps its CA and signing key
// (the API server's trust and the tokens issued outlive a restart).
func TestServeTLS(t *testing.T) {
	dir := t.TempDir()
	tokens := filepath.Join(dir, "refresh-tokens")
	if err := os.WriteFile(tokens, []byte(testRT+" re\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	o := options{listen: "127.0.0.1:0", dir: filepath.Join(dir, "state"), refreshTokens: tokens,
		clientID: "asap2lab", usernameClaim: "preferred_username", lifetime: time.Minute}
	start := func() (url string, kid string, ca []byte) {
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		ready := make(chan string, 1)
		var serveErr error
		wg.Add(1)
		go func() { defer wg.Done(); serveErr = serve(ctx, o, t.Logf, func(u string) { ready <- u }) }()
		t.Cleanup(func() {
			cancel()
			wg.Wait()
			if serveErr != nil {
				t.Errorf("serve: %v", serveErr)
			}
		})
		select {
		case url = <-ready:
		case <-time.After(30 * time.Second):
			t.Fatal("the issuer did not listen within 30s")
		}
		ca, err := os.ReadFile(filepath.Join(o.dir, caCertFile))
		if err != nil {
			t.Fatal(err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(ca) {
			t.Fatalf("%s: no certificate", caCertFile)
		}
		c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
		var disc map[string]any
		getJSON(t, c, url+discoveryPath, &disc)
		if disc["issuer"] != url {
			t.Fatalf("discovery issuer %v, want %s", disc["issuer"], url)
		}
		var set struct{ Keys []struct{ Kid string } }
		getJSON(t, c, url+jwksPath, &set)
		if len(set.Keys) != 1 {
			t.Fatalf("key set %+v", set)
		}
		if !strings.HasPrefix(url, "https://127.0.0.1:") {
			t.Errorf("url %s", url)
		}
		return url, set.Keys[0].Kid, ca
	}
	_, kid1, ca1 := start()
	_, kid2, ca2 := start()
	if kid1 != kid2 || !bytes.Equal(ca1, ca2) {
		t.Errorf("second start: kid %s, CA changed %v; want the first's (kid %s)", kid2, !bytes.Equal(ca1, ca2), kid1)
	}
	for _, f := range []string{caKeyFile, signingFile} {
		if fi, err := os.Stat(filepath.Join(o.dir, f)); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v, mode %v; want 0600", f, err, fi.Mode().Perm())
		}
	}
}

func TestLoadStateHalfCA(t *testing.T) {
	dir := t.TempDir()
	if _, err := loadState(dir); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(dir, caKeyFile))
	if _, err := loadState(dir); err == nil || !strings.Contains(err.Error(), "remove both") {
		t.Errorf("ca.crt without ca.key: %v, want a refusal", err)
	}
}

func TestHelpAndBadFlag(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"-h"}, &out, &errb); code != 0 || !strings.Contains(out.String(), "usage: oidc") || errb.Len() != 0 {
		t.Errorf("-h: exit %d, stdout %q, stderr %q", code, out.String(), errb.String())
	}
	out.Reset()
	if code := run([]string{"-nope"}, &out, &errb); code != 2 || !strings.Contains(errb.String(), "flag provided but not defined: -nope") || out.Len() != 0 {
		t.Errorf("-nope: exit %d, stdout %q, stderr %q", code, out.String(), errb.String())
	}
	errb.Reset()
	if code := run([]string{"-listen", "0.0.0.0:1"}, &out, &errb); code != 1 || !strings.Contains(errb.String(), "-dir is required") {
		t.Errorf("no -dir: exit %d, stderr %q", code, errb.String())
	}
}
