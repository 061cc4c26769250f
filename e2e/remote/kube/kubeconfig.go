package kube

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// The run's own copy of the kubeconfig (issue 36, "credentials that last
// the run"). client-go writes refreshed credentials back into the
// kubeconfig they came from: the oidc auth-provider persists every new
// id-token (and a rotated refresh-token) into the file that defines the
// user, under a lock file beside it. A kubeconfig mounted read-only (a
// Kubernetes Secret) then fails every call once its id-token has expired
// ("could not persist new tokens: … read-only file system"), and runs that
// share one writable file (a fleet's shards) race on its lock. So the
// client is built from a private copy: the files client-go's loading rules
// merge (or the explicit one), minified to the chosen context, with the
// certificate files read into data, written 0600 in a directory of its own
// (0700, under $TMPDIR, removed by Close). The user's files are read once
// and never written.

// kubeconfigFile is the copy's name in its directory.
const kubeconfigFile = "kubeconfig"

// The oidc auth-provider's config keys (client-go's
// plugin/pkg/client/auth/oidc).
const (
	oidcIssuerURL    = "idp-issuer-url"
	oidcRefreshToken = "refresh-token"
	oidcIDToken      = "id-token"
	oidcCA           = "idp-certificate-authority"
	oidcCAData       = "idp-certificate-authority-data"
)

// credential is what the kubeconfig's user authenticates with, as far as
// the preflight cares.
type credential struct {
	// refreshes: the credential is obtained afresh on the client's first
	// call (an oidc auth-provider with a refresh-token, whose copy holds
	// no id-token; an exec plugin, which client-go runs on its first
	// call), so the preflight's first call proves it can be renewed.
	refreshes bool
	// what names it in messages: "auth-provider oidc (idp-issuer-url
	// https://…)", "exec plugin kubelogin", "token".
	what string
	// token, when set, is a bearer token that nothing renews (an inline
	// token, an oidc id-token without a refresh-token): its JWT exp is set
	// against the run's budget.
	token string
}

// privateCopy writes raw, the merged kubeconfig as loaded (its paths made
// absolute by the loading rules), minified to context ctxName (""
// = its current-context) and flattened, 0600 into a new private directory,
// and returns the copy's path and the user's credential. An oidc
// auth-provider with a refresh-token loses its id-token in the copy, so
// that client-go refreshes it on the first call.
func privateCopy(raw *clientcmdapi.Config, ctxName string) (path string, cred credential, err error) {
	cfg := raw.DeepCopy()
	if ctxName != "" {
		cfg.CurrentContext = ctxName
	}
	if err := clientcmdapi.MinifyConfig(cfg); err != nil {
		return "", cred, fmt.Errorf("minifying for context %s: %w", cfg.CurrentContext, err)
	}
	if err := clientcmdapi.FlattenConfig(cfg); err != nil {
		return "", cred, fmt.Errorf("reading the certificate files of context %s: %w", cfg.CurrentContext, err)
	}
	for name, u := range cfg.AuthInfos {
		if err := flattenOIDC(u); err != nil {
			return "", cred, fmt.Errorf("user %s: %w", name, err)
		}
		cred = credentialOf(u)
	}
	removeStaleCopies(os.TempDir())
	dir, err := os.MkdirTemp("", fmt.Sprintf("%s%d-", copyPrefix, os.Getpid()))
	if err != nil {
		return "", cred, fmt.Errorf("a private directory for the run's copy: %w", err)
	}
	path = filepath.Join(dir, kubeconfigFile)
	data, err := clientcmd.Write(*cfg)
	if err == nil {
		err = os.WriteFile(path, data, 0o600)
	}
	if err != nil {
		os.RemoveAll(dir)
		return "", cred, fmt.Errorf("writing the run's copy %s: %w", path, err)
	}
	return path, cred, nil
}

// copyPrefix begins the name of a run's private directory, followed by the
// pid of the process that made it: "asap2e2e-kubeconfig-<pid>-<random>".
const copyPrefix = "asap2e2e-kubeconfig-"

// removeStaleCopies deletes, in dir, the private directories of processes
// that no longer run: a run killed with SIGKILL could not remove its copy
// of the credentials, so the next run on the machine does. A directory
// whose process still runs (or whose pid another process took since), one
// of another user and one without a pid in its name are left alone.
func removeStaleCopies(dir string) (removed []string) {
	matches, _ := filepath.Glob(filepath.Join(dir, copyPrefix+"*"))
	for _, m := range matches {
		pidPart, _, ok := strings.Cut(strings.TrimPrefix(filepath.Base(m), copyPrefix), "-")
		pid, err := strconv.Atoi(pidPart)
		if !ok || err != nil || pid <= 0 || processRuns(pid) {
			continue
		}
		var st syscall.Stat_t
		if err := syscall.Lstat(m, &st); err != nil || int(st.Uid) != os.Getuid() || st.Mode&syscall.S_IFMT != syscall.S_IFDIR {
			continue
		}
		if os.RemoveAll(m) == nil {
			removed = append(removed, m)
		}
	}
	return removed
}

// processRuns tells whether a process with that pid exists (signal 0:
// EPERM means it exists and belongs to another user).
func processRuns(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// flattenOIDC reads an oidc auth-provider's idp-certificate-authority file
// into its data (FlattenConfig knows only the cluster's and the client
// certificate's files) and drops the id-token when a refresh-token can
// renew it.
func flattenOIDC(u *clientcmdapi.AuthInfo) error {
	if u.AuthProvider == nil || u.AuthProvider.Name != "oidc" {
		return nil
	}
	c := u.AuthProvider.Config
	if f := c[oidcCA]; f != "" && c[oidcCAData] == "" {
		if !filepath.IsAbs(f) && u.LocationOfOrigin != "" {
			f = filepath.Join(filepath.Dir(u.LocationOfOrigin), f)
		}
		b, err := os.ReadFile(f)
		if err != nil {
			return fmt.Errorf("auth-provider oidc %s: %w", oidcCA, err)
		}
		c[oidcCAData] = base64.StdEncoding.EncodeToString(b)
		delete(c, oidcCA)
	}
	if c[oidcRefreshToken] != "" && c[oidcIssuerURL] != "" {
		delete(c, oidcIDToken)
	}
	return nil
}

// credentialOf says what u authenticates with (after flattenOIDC).
func credentialOf(u *clientcmdapi.AuthInfo) credential {
	switch {
	case u.AuthProvider != nil && u.AuthProvider.Name == "oidc":
		c := u.AuthProvider.Config
		what := fmt.Sprintf("auth-provider oidc (%s %s)", oidcIssuerURL, c[oidcIssuerURL])
		if c[oidcRefreshToken] != "" && c[oidcIssuerURL] != "" {
			return credential{refreshes: true, what: what + ", its refresh-token"}
		}
		return credential{what: what + ", its id-token, no refresh-token", token: c[oidcIDToken]}
	case u.Exec != nil:
		return credential{refreshes: true, what: "exec plugin " + u.Exec.Command}
	case u.Token != "" && u.TokenFile == "":
		// A token file is read again as it changes (a projected service
		// account token, rotated by the kubelet): no expiry to warn of.
		return credential{what: "token", token: u.Token}
	}
	return credential{}
}

// fromCopy is the client config of the copy at path: its only file, so
// refreshed credentials are persisted there (and its lock file is there).
func fromCopy(path string) (*rest.Config, error) {
	rules := &clientcmd.ClientConfigLoadingRules{ExplicitPath: path}
	return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
}

// Close removes the run's copy of the kubeconfig (and the credentials
// client-go persisted into it); the cluster's calls fail after it.
func (c *Cluster) Close() error {
	if c.copyDir == "" {
		return nil
	}
	err := os.RemoveAll(c.copyDir)
	c.copyDir = ""
	return err
}

// jwtExpiry is the exp claim of token when it is a JWT (three base64url
// parts, the middle one a JSON object with a numeric exp); ok false for
// any other token.
func jwtExpiry(token string) (exp time.Time, ok bool) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return time.Time{}, false
	}
	payload, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[1], "="))
	if err != nil {
		return time.Time{}, false
	}
	var claims struct {
		Exp *json.Number `json:"exp"`
	}
	if err := json.Unmarshal(payload, &claims); err != nil || claims.Exp == nil {
		return time.Time{}, false
	}
	secs, err := claims.Exp.Float64()
	if err != nil {
		return time.Time{}, false
	}
	return time.Unix(int64(secs), 0), true
}

// tokenWarning says when token, a bearer token nothing renews, expires
// before the run's budget is over (now+budget); "" when it lasts, when it
// is no JWT, or with no budget.
func tokenWarning(source string, cred credential, budget time.Duration, now time.Time) string {
	if cred.token == "" || budget <= 0 {
		return ""
	}
	exp, ok := jwtExpiry(cred.token)
	if !ok || !exp.Before(now.Add(budget)) {
		return ""
	}
	left := exp.Sub(now).Round(time.Second)
	when := "expires in " + left.String()
	if left <= 0 {
		when = "expired " + (-left).String() + " ago"
	}
	return fmt.Sprintf("the %s of %s %s (exp %s), the run needs up to %s (plan.RunBudget): the API server refuses it from then on; "+
		"give the run one that lasts it (kubectl create token … --duration=%s) (hypervisors.kubernetes.kubeconfig, context)",
		cred.what, source, when, exp.UTC().Format(time.RFC3339), budget.Round(time.Second), durationFlag(budget))
}

// durationFlag is d rounded up to whole hours, as kubectl's --duration
// takes it ("4h").
func durationFlag(d time.Duration) string {
	h := (d + time.Hour - 1) / time.Hour
	return fmt.Sprintf("%dh", h)
}
