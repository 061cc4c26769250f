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
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/mosk-qa/asap2-e2e/e2e/remote/kubeaccess"
)

// podsAPI is an API server's pods list endpoint, over TLS (clientcmd
// sends no credentials to a plain-HTTP server), that records the
// Authorization header of each request. cluster is the kubeconfig's
// cluster entry for it.
func podsAPI(t *testing.T, pods ...corev1.Pod) (cluster string, auths func() []string) {
	t.Helper()
	var mu sync.Mutex
	var seen []string
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Get("Authorization"))
		mu.Unlock()
		if r.URL.Path != "/api/v1/namespaces/openstack/pods" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		list := corev1.PodList{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "PodList"}, Items: pods}
		json.NewEncoder(w).Encode(list)
	}))
	t.Cleanup(srv.Close)
	ca := base64.StdEncoding.EncodeToString(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}))
	cluster = fmt.Sprintf("{server: %s, certificate-authority-data: %s}", srv.URL, ca)
	return cluster, func() []string { mu.Lock(); defer mu.Unlock(); return append([]string(nil), seen...) }
}

func writeFile(t *testing.T, dir, name, data string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// idToken is an unsigned JWT whose exp is in an hour: the oidc auth
// provider sends a token it holds until it expires (it reads exp, the API
// server verifies the signature).
func idToken() string {
	enc := base64.RawURLEncoding.EncodeToString
	payload := fmt.Sprintf(`{"iss":"https://keycloak.mosk.example/auth/realms/iam","aud":"kaas","exp":%d}`, time.Now().Add(time.Hour).Unix())
	return enc([]byte(`{"alg":"RS256","typ":"JWT"}`)) + "." + enc([]byte(payload)) + "." + enc([]byte("sig"))
}

// A kubeconfig with the legacy auth-provider oidc (MOSK's Keycloak
// kubeconfigs) loads, and its id-token is what the API server gets. On the
// code before the import: `no Auth Provider found for name "oidc"`.
func TestKubeconfigWithOIDCAuthProvider(t *testing.T) {
	cluster, auths := podsAPI(t, *ovsPod("openvswitch-vswitchd-default-2xk9p", nodeA))
	tok := idToken()
	kc := writeFile(t, t.TempDir(), "mosk.yaml", `apiVersion: v1
kind: Config
clusters:
- name: mosk
  cluster: `+cluster+`
users:
- name: keycloak-re
  user:
    auth-provider:
      name: oidc
      config:
        idp-issuer-url: https://keycloak.mosk.example/auth/realms/iam
        client-id: kaas
        id-token: `+tok+`
contexts:
- name: mosk
  context: {cluster: mosk, user: keycloak-re}
current-context: mosk
`)
	k := mosk
	k.Kubeconfig = kc
	c, err := NewCluster(k, kubeaccess.Options{})
	if err != nil {
		t.Fatal(err)
	}
	closeAfter(t, c)
	pod, err := c.FindPod(context.Background(), nodeA)
	if err != nil {
		t.Fatal(err)
	}
	if pod.Name != "openvswitch-vswitchd-default-2xk9p" {
		t.Errorf("pod %+v", pod)
	}
	if a := auths(); len(a) == 0 || a[0] != "Bearer "+tok {
		t.Errorf("Authorization headers %q, want the id-token", a)
	}
	if want := "kubeconfig " + kc + ", context mosk (user keycloak-re)"; c.Source() != want {
		t.Errorf("source %q, want %q", c.Source(), want)
	}
}

// $KUBECONFIG with two files is merged as kubectl merges it (the first
// file's current-context; users in one file, contexts in the other), and
// an explicit context picks another. The client is built from the run's
// copy: minified to the context (the other context and user left out),
// the certificate file (a path relative to its kubeconfig) read into
// data, 0600 in a 0700 directory of its own.
func TestKubeconfigPathListAndContext(t *testing.T) {
	cluster, auths := podsAPI(t, *ovsPod("openvswitch-vswitchd-default-2xk9p", nodeA))
	dir := t.TempDir()
	var entry struct {
		Server string `json:"server"`
		CA     string `json:"certificate-authority-data"`
	}
	if err := yaml.Unmarshal([]byte(cluster), &entry); err != nil {
		t.Fatal(err)
	}
	ca, _ := base64.StdEncoding.DecodeString(entry.CA)
	writeFile(t, dir, "ca.crt", string(ca))
	cluster = "{server: " + entry.Server + ", certificate-authority: ca.crt}"
	a := writeFile(t, dir, "contexts.yaml", `apiVersion: v1
kind: Config
contexts:
- name: mosk
  context: {cluster: mosk, user: ci}
- name: mosk-admin
  context: {cluster: mosk, user: admin}
current-context: mosk
`)
	b := writeFile(t, dir, "credentials.yaml", `apiVersion: v1
kind: Config
clusters:
- name: mosk
  cluster: `+cluster+`
users:
- name: ci
  user: {token: ci-token}
- name: admin
  user: {token: admin-token}
`)
	t.Setenv("KUBECONFIG", a+string(os.PathListSeparator)+b)
	for _, tc := range []struct{ context, token, source, other string }{
		{"", "Bearer ci-token", "kubeconfig " + a + ":" + b + ", context mosk (user ci)", "admin"},
		{"mosk-admin", "Bearer admin-token", "kubeconfig " + a + ":" + b + ", context mosk-admin (user admin)", "ci"},
	} {
		k := mosk
		k.Context = tc.context
		c, err := NewCluster(k, kubeaccess.Options{})
		if err != nil {
			t.Fatal(err)
		}
		closeAfter(t, c)
		if _, err := c.FindPod(context.Background(), nodeA); err != nil {
			t.Fatal(err)
		}
		if got := auths(); got[len(got)-1] != tc.token {
			t.Errorf("context %q: sent %q, want %q", tc.context, got[len(got)-1], tc.token)
		}
		if c.Source() != tc.source {
			t.Errorf("source %q, want %q", c.Source(), tc.source)
		}
		p := c.KubeconfigCopy()
		if filepath.Dir(p) == dir {
			t.Errorf("the copy %s is in the kubeconfig's directory", p)
		}
		readCopyMode(t, p)
		data, _ := os.ReadFile(p)
		user := strings.TrimPrefix(tc.token, "Bearer ")
		for _, w := range []string{"token: " + user, "certificate-authority-data: " + entry.CA} {
			if !bytes.Contains(data, []byte(w)) {
				t.Errorf("context %q: the copy does not say %q:\n%s", tc.context, w, data)
			}
		}
		for _, w := range []string{tc.other + "-token", "certificate-authority: "} {
			if bytes.Contains(data, []byte(w)) {
				t.Errorf("context %q: the copy keeps %q:\n%s", tc.context, w, data)
			}
		}
	}
}

// Nothing to load (no $KUBECONFIG, no ~/.kube/config, not in a pod): the
// error says where it looked, the service account included.
func TestNoKubeconfigAnywhere(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	t.Setenv("KUBECONFIG", "")
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	_, err := NewCluster(mosk, kubeaccess.Options{})
	if err == nil || !strings.Contains(err.Error(), "kubeconfig ($KUBECONFIG, else ~/.kube/config; in a pod, its service account) (hypervisors.kubernetes.kubeconfig, context)") {
		t.Errorf("got %v", err)
	}
}
