package kube

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/mosk-qa/asap2-e2e/e2e/config"
	"github.com/mosk-qa/asap2-e2e/e2e/remote/kubeaccess"
)

// jwt is an unsigned JWT (alg none) with claims: client-go's oidc
// auth-provider reads only its exp (the API server would verify it).
func jwt(claims string) string {
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(`{"alg":"none","typ":"JWT"}`)) + "." + enc([]byte(claims)) + "."
}

// fakeIdP is an OpenID Connect provider (Keycloak) as client-go's oidc
// auth-provider uses it: the discovery document and a token endpoint that
// answers a refresh_token grant with a new id-token, valid for life, and a
// new refresh-token. With revoke, the refresh-token used is revoked
// (Keycloak's "Revoke Refresh Token"), so a chain of refreshes only works
// when each new one was kept. refuse, when set, refuses every refresh
// with invalid_grant and that description.
type fakeIdP struct {
	url    string
	life   time.Duration
	revoke bool
	refuse string

	mu        sync.Mutex
	valid     map[string]bool // refresh-tokens
	issued    []string        // id-tokens, in order
	refreshes []string        // the refresh-token of each grant
}

func newFakeIdP(t *testing.T, life time.Duration, refreshTokens ...string) *fakeIdP {
	t.Helper()
	idp := &fakeIdP{life: life, valid: map[string]bool{}}
	for _, rt := range refreshTokens {
		idp.valid[rt] = true
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"issuer": idp.url, "token_endpoint": idp.url + "/protocol/openid-connect/token",
			"id_token_signing_alg_values_supported": []string{"none"}})
	})
	mux.HandleFunc("POST /protocol/openid-connect/token", idp.token)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	idp.url = srv.URL
	return idp
}

func (idp *fakeIdP) token(w http.ResponseWriter, r *http.Request) {
	idp.mu.Lock()
	defer idp.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	rt := r.PostFormValue("refresh_token")
	idp.refreshes = append(idp.refreshes, rt)
	refuse := func(desc string) {
		w.WriteHeader(http.StatusBadRequest)
		json.NewEncoder(w).Encode(map[string]string{"error": "invalid_grant", "error_description": desc})
	}
	switch {
	case r.PostFormValue("grant_type") != "refresh_token":
		refuse("grant_type " + r.PostFormValue("grant_type"))
		return
	case idp.refuse != "":
		refuse(idp.refuse)
		return
	case !idp.valid[rt]:
		refuse("Invalid refresh token")
		return
	}
	n := len(idp.issued) + 1
	next := fmt.Sprintf("%s.%d", strings.Split(rt, ".")[0], n)
	if idp.revoke {
		delete(idp.valid, rt)
	}
	idp.valid[next] = true
	id := jwt(fmt.Sprintf(`{"iss":%q,"aud":"kaas","sub":"re","n":%d,"exp":%d}`, idp.url, n, time.Now().Add(idp.life).Unix()))
	idp.issued = append(idp.issued, id)
	json.NewEncoder(w).Encode(map[string]any{"access_token": fmt.Sprintf("at-%d", n), "token_type": "Bearer",
		"expires_in": int(idp.life.Seconds()), "refresh_token": next, "id_token": id})
}

// accepts says whether token is an id-token the IdP issued and not yet
// expired, as an API server with --oidc-issuer-url decides.
func (idp *fakeIdP) accepts(token string) bool {
	idp.mu.Lock()
	defer idp.mu.Unlock()
	exp, ok := jwtExpiry(token)
	return ok && slices.Contains(idp.issued, token) && time.Now().Before(exp)
}

func (idp *fakeIdP) snapshot() (issued, refreshes []string) {
	idp.mu.Lock()
	defer idp.mu.Unlock()
	return slices.Clone(idp.issued), slices.Clone(idp.refreshes)
}

// versionAPI is an API server over TLS answering /version and /api to a
// request whose bearer token accept takes, 401 to any other; it records
// the bearer token of each request. cluster is the kubeconfig's cluster
// entry for it.
func versionAPI(t *testing.T, accept func(token string) bool) (cluster string, tokens func() []string) {
	t.Helper()
	var mu sync.Mutex
	var seen []string
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		mu.Lock()
		seen = append(seen, tok)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if !accept(tok) {
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"Unauthorized","reason":"Unauthorized","code":401}`)
			return
		}
		switch r.URL.Path {
		case "/version":
			fmt.Fprint(w, `{"major":"1","minor":"29","gitVersion":"v1.29.4"}`)
		case "/api":
			fmt.Fprint(w, `{"kind":"APIVersions","versions":["v1"],"serverAddressByClientCIDRs":[{"clientCIDR":"0.0.0.0/0","serverAddress":"127.0.0.1"}]}`)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	ca := base64.StdEncoding.EncodeToString(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}))
	cluster = fmt.Sprintf("{server: %s, certificate-authority-data: %s}", srv.URL, ca)
	return cluster, func() []string { mu.Lock(); defer mu.Unlock(); return slices.Clone(seen) }
}

// oneUser is a kubeconfig of one cluster entry, one user (name, its
// user: block as YAML) and context mosk joining them.
func oneUser(cluster, name, user string) string {
	return `apiVersion: v1
kind: Config
clusters:
- name: mosk
  cluster: ` + cluster + `
users:
- name: ` + name + `
  user: ` + user + `
contexts:
- name: mosk
  context: {cluster: mosk, user: ` + name + `}
current-context: mosk
`
}

// oidcKubeconfig is a MOSK Keycloak kubeconfig: context mosk, user
// keycloak-re with the oidc auth-provider, its id-token expired an hour
// ago (the run is past its first minutes) and its refresh-token rt.
func oidcKubeconfig(cluster, issuer, rt string) string {
	expired := jwt(fmt.Sprintf(`{"iss":%q,"aud":"kaas","exp":%d}`, issuer, time.Now().Add(-time.Hour).Unix()))
	return oneUser(cluster, "keycloak-re", fmt.Sprintf("{auth-provider: {name: oidc, config: {idp-issuer-url: %s, client-id: kaas, id-token: %s, refresh-token: %s}}}",
		issuer, expired, rt))
}

// readCopy is the run's copy of the kubeconfig, checked for its mode.
func readCopy(t *testing.T, c *Cluster) *clientcmdapi.AuthProviderConfig {
	t.Helper()
	p := c.KubeconfigCopy()
	if p == "" {
		t.Fatal("no copy of the kubeconfig")
	}
	readCopyMode(t, p)
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var kc struct {
		Users []struct {
			User struct {
				AuthProvider *clientcmdapi.AuthProviderConfig `json:"auth-provider"`
			} `json:"user"`
		} `json:"users"`
	}
	if err := yaml.Unmarshal(data, &kc); err != nil || len(kc.Users) != 1 || kc.Users[0].User.AuthProvider == nil {
		t.Fatalf("copy %s: %v\n%s", p, err, data)
	}
	return kc.Users[0].User.AuthProvider
}

// closeAfter closes c at the test's end and checks its copy is gone.
func closeAfter(t *testing.T, c *Cluster) {
	t.Helper()
	dir := filepath.Dir(c.KubeconfigCopy())
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Error(err)
		}
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("after Close the copy's directory %s: %v", dir, err)
		}
	})
}

// readCopyMode checks the copy's and its directory's modes.
func readCopyMode(t *testing.T, p string) {
	t.Helper()
	for _, f := range []struct {
		path string
		mode os.FileMode
	}{{p, 0o600}, {filepath.Dir(p), 0o700 | os.ModeDir}} {
		st, err := os.Stat(f.path)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode() != f.mode {
			t.Errorf("%s: mode %v, want %v", f.path, st.Mode(), f.mode)
		}
	}
}

// refreshingCluster is a Cluster from an oidc kubeconfig in its own
// directory, against an API server that takes only the IdP's live
// id-tokens; the IdP's id-tokens live 2 s, less than the auth-provider's
// 10 s margin, so every call refreshes.
func refreshingCluster(t *testing.T, idp *fakeIdP, rt string) (c *Cluster, kubeconfig string, tokens func() []string) {
	t.Helper()
	cluster, tokens := versionAPI(t, idp.accepts)
	kubeconfig = writeFile(t, t.TempDir(), "mosk.yaml", oidcKubeconfig(cluster, idp.url, rt))
	k := mosk
	k.Kubeconfig = kubeconfig
	c, err := NewCluster(k, kubeaccess.Options{API: config.Interval{Timeout: 10 * time.Second, Poll: time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	closeAfter(t, c)
	return c, kubeconfig, tokens
}

// The preflight refreshes an oidc id-token with its refresh-token before
// anything else; a refresh-token the IdP refuses (expired, revoked) stops
// it there, naming the kubeconfig, context, user and the IdP's answer,
// and no access review is asked.
func TestPreflightRefreshesOIDC(t *testing.T) {
	idp := newFakeIdP(t, 2*time.Second, "rt-ok", "rt-gone")
	c, _, tokens := refreshingCluster(t, idp, "rt-ok")
	if ap := readCopy(t, c); ap.Config["id-token"] != "" || ap.Config["refresh-token"] != "rt-ok" {
		t.Errorf("the copy's auth-provider %v: want no id-token (refreshed on the first call) and the refresh-token", ap.Config)
	}
	r := c.Preflight(context.Background(), kubeaccess.PreflightInput{RunBudget: 3 * time.Hour})
	if len(r.Checks) == 0 || r.Checks[0].Problem != "" || !strings.Contains(r.Checks[0].What, "obtained afresh (auth-provider oidc (idp-issuer-url "+idp.url+"), its refresh-token)") {
		t.Fatalf("first check %+v", r.Checks)
	}
	// The first call refreshed with the kubeconfig's refresh-token (the
	// access reviews after it, to this API server that has none, refresh
	// again: the id-tokens live 2 s).
	issued, refreshes := idp.snapshot()
	if len(issued) == 0 || refreshes[0] != "rt-ok" {
		t.Errorf("IdP issued %d, refreshes %q: want the first with rt-ok", len(issued), refreshes)
	}
	if got := tokens(); len(got) == 0 || got[0] != issued[0] {
		t.Errorf("the API server got %q first, want the refreshed id-token", got)
	}
	if len(r.Warnings) != 0 {
		t.Errorf("warnings %q for a refreshing credential", r.Warnings)
	}

	idp.refuse = "Token is not active"
	c, kc, tokens := refreshingCluster(t, idp, "rt-gone")
	r = c.Preflight(context.Background(), kubeaccess.PreflightInput{})
	if len(r.Checks) != 1 {
		t.Fatalf("checks %+v: want the credentials' alone", r.Checks)
	}
	for _, w := range []string{"the credentials of kubeconfig " + kc + ", context mosk (user keycloak-re) could not be obtained afresh",
		"auth-provider oidc (idp-issuer-url " + idp.url + ")", "failed to refresh token", "invalid_grant", "Token is not active", "hypervisors.kubernetes.kubeconfig"} {
		if !strings.Contains(r.Checks[0].Problem, w) {
			t.Errorf("problem %q\ndoes not say %q", r.Checks[0].Problem, w)
		}
	}
	if got := tokens(); len(got) != 0 {
		t.Errorf("the API server was called with %q after the refresh failed", got)
	}
	if err := r.Err(); err == nil || !strings.Contains(err.Error(), "1 problem(s)") {
		t.Errorf("Err: %v", err)
	}
}

// An exec credential plugin runs on the preflight's first call; one that
// fails (a kubelogin that needs a browser) stops the preflight, named.
func TestPreflightRunsExecPlugin(t *testing.T) {
	cluster, tokens := versionAPI(t, func(tok string) bool { return tok == "exec-token" })
	dir := t.TempDir()
	plugin := func(script string) string {
		return oneUser(cluster, "sso", fmt.Sprintf(`{exec: {apiVersion: client.authentication.k8s.io/v1, command: /bin/sh, args: ["-c", %q], interactiveMode: Never}}`, script))
	}
	k := mosk
	k.Kubeconfig = writeFile(t, dir, "ok.yaml", plugin(`echo '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"exec-token"}}'`))
	c, err := NewCluster(k, kubeaccess.Options{})
	if err != nil {
		t.Fatal(err)
	}
	closeAfter(t, c)
	r := c.Preflight(context.Background(), kubeaccess.PreflightInput{})
	if len(r.Checks) == 0 || r.Checks[0].Problem != "" || !strings.Contains(r.Checks[0].What, "(exec plugin /bin/sh)") {
		t.Errorf("checks %+v", r.Checks)
	}
	if got := tokens(); len(got) == 0 || got[0] != "exec-token" {
		t.Errorf("the API server got %q, want the plugin's token", got)
	}

	k.Kubeconfig = writeFile(t, dir, "login.yaml", plugin(`echo 'error: a browser login is needed' >&2; exit 1`))
	c, err = NewCluster(k, kubeaccess.Options{})
	if err != nil {
		t.Fatal(err)
	}
	closeAfter(t, c)
	r = c.Preflight(context.Background(), kubeaccess.PreflightInput{})
	if len(r.Checks) != 1 || !strings.Contains(r.Checks[0].Problem, "the credentials of kubeconfig "+k.Kubeconfig+", context mosk (user sso) could not be obtained afresh (exec plugin /bin/sh)") ||
		!strings.Contains(r.Checks[0].Problem, "exit code 1") {
		t.Errorf("checks %+v", r.Checks)
	}
}

// A bearer token (a service account's, `kubectl create token`) is a JWT
// whose exp the preflight sets against the run's budget: one that expires
// before is a warning naming both; one that lasts, or a token that is no
// JWT, none.
func TestTokenExpiryWarning(t *testing.T) {
	now := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	sa := func(exp time.Time) string {
		return jwt(fmt.Sprintf(`{"iss":"https://kubernetes.default.svc","sub":"system:serviceaccount:openstack:asap2-e2e","exp":%d}`, exp.Unix()))
	}
	src := "kubeconfig /etc/asap2/kubeconfig, context mosk (user asap2-e2e)"
	for _, tc := range []struct {
		name, token string
		want        []string // nil: no warning
	}{
		{"expires mid-run", sa(now.Add(time.Hour)), []string{"the token of " + src + " expires in 1h0m0s (exp 2026-12-03T11:00:00Z), the run needs up to 3h10m0s", "--duration=4h", "hypervisors.kubernetes.kubeconfig"}},
		{"expired", sa(now.Add(-90 * time.Second)), []string{"expired 1m30s ago", "the run needs up to 3h10m0s"}},
		{"lasts the run", sa(now.Add(8 * time.Hour)), nil},
		{"not a JWT", "ci-token", nil},
		{"three parts, no JSON", "a.b.c", nil},
		{"a JWT without exp", jwt(`{"sub":"x"}`), nil},
	} {
		got := tokenWarning(src, credential{what: "token", token: tc.token}, 3*time.Hour+10*time.Minute, now)
		if tc.want == nil {
			if got != "" {
				t.Errorf("%s: warning %q", tc.name, got)
			}
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: warning %q\ndoes not say %q", tc.name, got, w)
			}
		}
	}
	// No budget, no warning.
	if got := tokenWarning(src, credential{what: "token", token: sa(now.Add(time.Minute))}, 0, now); got != "" {
		t.Errorf("no budget: %q", got)
	}
}

// The preflight gives the warning for a kubeconfig's token (not for a
// token file, which is read again as it rotates), and it does not refuse.
func TestPreflightWarnsOfShortToken(t *testing.T) {
	cluster, _ := podsAPI(t)
	tok := jwt(fmt.Sprintf(`{"sub":"system:serviceaccount:openstack:asap2-e2e","exp":%d}`, time.Now().Add(30*time.Minute+30*time.Second).Unix()))
	dir := t.TempDir()
	tokFile := writeFile(t, dir, "token", tok)
	s := newRBACServer(allAccess, ovsPod("openvswitch-vswitchd-default-2xk9p", nodeA))
	for _, tc := range []struct {
		file, user string
		warn       bool
	}{{"inline.yaml", "{token: " + tok + "}", true}, {"file.yaml", "{tokenFile: " + tokFile + "}", false}} {
		k := mosk
		k.Kubeconfig = writeFile(t, dir, tc.file, oneUser(cluster, "asap2-e2e", tc.user))
		built, err := NewCluster(k, kubeaccess.Options{})
		if err != nil {
			t.Fatal(err)
		}
		closeAfter(t, built)
		// The preflight's calls go to the RBAC fake; the credential is
		// the kubeconfig's.
		c := clusterFor(s, mosk, kubeaccess.Options{})
		c.source, c.cred = built.source, built.cred
		r := c.Preflight(context.Background(), kubeaccess.PreflightInput{RunBudget: 2 * time.Hour})
		if err := r.Err(); err != nil {
			t.Errorf("%s: %v", tc.file, err)
		}
		if !tc.warn {
			if len(r.Warnings) != 0 {
				t.Errorf("%s: warnings %q", tc.file, r.Warnings)
			}
			continue
		}
		if len(r.Warnings) != 1 || !strings.Contains(r.Warnings[0], "the token of kubeconfig "+k.Kubeconfig+", context mosk (user asap2-e2e) expires in 30m") ||
			!strings.Contains(r.Warnings[0], "the run needs up to 2h0m0s") {
			t.Errorf("%s: warnings %q", tc.file, r.Warnings)
		}
	}
}

// Two clients built at once from one kubeconfig (a run's cluster and
// another's, or two shards' of one fleet) each get a copy of their own:
// the refreshes go there, no lock file is made beside the source, which
// is never written.
func TestConcurrentClientsOwnCopies(t *testing.T) {
	idp := newFakeIdP(t, 2*time.Second, "rt-shared")
	cluster, _ := versionAPI(t, idp.accepts)
	dir := t.TempDir()
	src := writeFile(t, dir, "mosk.yaml", oidcKubeconfig(cluster, idp.url, "rt-shared"))
	before, _ := os.ReadFile(src)
	k := mosk
	k.Kubeconfig = src
	var wg sync.WaitGroup
	cs := make([]*Cluster, 2)
	errs := make([]error, 2)
	for i := range cs {
		wg.Go(func() {
			cs[i], errs[i] = NewCluster(k, kubeaccess.Options{})
			if errs[i] == nil {
				for range 3 {
					if _, err := cs[i].ServerVersion(context.Background()); err != nil {
						errs[i] = err
						return
					}
				}
			}
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("client %d: %v", i, err)
		}
		closeAfter(t, cs[i])
		readCopyMode(t, cs[i].KubeconfigCopy())
	}
	if a, b := cs[0].KubeconfigCopy(), cs[1].KubeconfigCopy(); filepath.Dir(a) == filepath.Dir(b) || filepath.Dir(a) == dir || filepath.Dir(b) == dir {
		t.Errorf("copies %s and %s: want a directory each, neither the source's %s", a, b, dir)
	}
	if issued, _ := idp.snapshot(); len(issued) < 3 {
		t.Errorf("%d refreshes, want one per call (3 or more)", len(issued))
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 || ents[0].Name() != "mosk.yaml" {
		t.Errorf("the source's directory holds %v, want mosk.yaml alone (no lock file)", ents)
	}
	if after, _ := os.ReadFile(src); !bytes.Equal(before, after) {
		t.Errorf("the source kubeconfig was written:\n%s", after)
	}
}

// A run killed with SIGKILL leaves its private copy; the next run on the
// machine removes the copies of processes that no longer run, and only those.
func TestStaleCopiesRemoved(t *testing.T) {
	dir := t.TempDir()
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	dead := filepath.Join(dir, fmt.Sprintf("%s%d-123", copyPrefix, gone.Process.Pid))
	alive := filepath.Join(dir, fmt.Sprintf("%s%d-456", copyPrefix, os.Getpid()))
	noPid := filepath.Join(dir, copyPrefix+"789")
	other := filepath.Join(dir, "something-else")
	for _, d := range []string{dead, alive, noPid, other} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, kubeconfigFile), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if processRuns(gone.Process.Pid) {
		t.Skipf("pid %d was taken again", gone.Process.Pid)
	}
	got := removeStaleCopies(dir)
	if len(got) != 1 || got[0] != dead {
		t.Errorf("removed %q, want only %s", got, dead)
	}
	for _, d := range []string{alive, noPid, other} {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("%s: %v (it must stay)", d, err)
		}
	}
	if _, err := os.Stat(dead); !os.IsNotExist(err) {
		t.Errorf("%s still there: %v", dead, err)
	}
}
