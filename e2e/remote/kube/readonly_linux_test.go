//go:build linux

package kube

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/mosk-qa/asap2-e2e/e2e/remote/kubeaccess"
)

// readOnlyChild is set in the environment of the test binary's child that
// withReadOnly starts in a mount namespace of its own.
const readOnlyChild = "ASAP2E2E_TEST_READONLY_CHILD"

// withReadOnly runs test with readOnly, which makes a directory read-only
// as a Secret's mount is, for root too. Root passes permission bits, so as
// root the test runs again in a child of the test binary in a private
// mount namespace (the Go runtime's Unshareflags, with / made private),
// where readOnly bind-mounts the directory onto itself read-only: a write
// fails with EROFS. Other users get mode 0555 on the directory and 0444 on
// its files.
func withReadOnly(t *testing.T, test func(t *testing.T, readOnly func(dir string))) {
	if os.Getenv(readOnlyChild) != "" || os.Geteuid() != 0 {
		test(t, func(dir string) { makeReadOnly(t, dir) })
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^"+t.Name()+"$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), readOnlyChild+"=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS}
	out, err := cmd.CombinedOutput()
	if errors.Is(err, syscall.EPERM) {
		t.Skipf("root without CAP_SYS_ADMIN: no mount namespace for a read-only directory (%v)", err)
	}
	t.Logf("the test in its own mount namespace:\n%s", out)
	if err != nil || !bytes.Contains(out, []byte("--- PASS: "+t.Name())) {
		t.Fatalf("the test in its own mount namespace: %v", err)
	}
}

func makeReadOnly(t *testing.T, dir string) {
	t.Helper()
	if os.Getenv(readOnlyChild) != "" {
		if err := syscall.Mount(dir, dir, "", syscall.MS_BIND, ""); err != nil {
			t.Fatalf("bind mount %s: %v", dir, err)
		}
		// Cleanups run last in first out: unmounted before the temporary
		// directory is removed.
		t.Cleanup(func() {
			if err := syscall.Unmount(dir, 0); err != nil {
				t.Errorf("unmount %s: %v", dir, err)
			}
		})
		if err := syscall.Mount("", dir, "", syscall.MS_BIND|syscall.MS_REMOUNT|syscall.MS_RDONLY, ""); err != nil {
			t.Fatalf("remount %s read-only: %v", dir, err)
		}
	} else {
		ents, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			if err := os.Chmod(filepath.Join(dir, e.Name()), 0o444); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Chmod(dir, 0o555); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Chmod(dir, 0o755) })
	}
	// It really is: neither a new file (the lock file) nor the kubeconfig
	// can be written.
	if err := os.WriteFile(filepath.Join(dir, "probe"), nil, 0o600); err == nil {
		t.Fatalf("%s is writable after making it read-only", dir)
	}
}

// clientAsBefore is the client as NewCluster built it before the run's
// copy: from the user's kubeconfig itself, which client-go then persists
// refreshed tokens into.
func clientAsBefore(t *testing.T, kubeconfig string) kubernetes.Interface {
	t.Helper()
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	rc, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// A kubeconfig mounted read-only (a Kubernetes Secret) whose oidc id-token
// has expired: built from the file itself (the old code), every call fails
// once the id-token needs a refresh ("could not persist new tokens: …
// read-only file system"); built from the run's copy, the calls go on
// across several refreshes, each with the refresh-token the previous one
// returned (the IdP revokes a used one, so the chain holds only if each
// was kept), and the source is never written.
func TestReadOnlyKubeconfigAcrossRefreshes(t *testing.T) {
	withReadOnly(t, func(t *testing.T, readOnly func(string)) {
		idp := newFakeIdP(t, 2*time.Second, "old-rt", "new-rt")
		idp.revoke = true
		oldAPI, _ := versionAPI(t, idp.accepts)
		newAPI, newTokens := versionAPI(t, idp.accepts)
		dir := t.TempDir()
		oldKC := writeFile(t, dir, "old.yaml", oidcKubeconfig(oldAPI, idp.url, "old-rt"))
		newKC := writeFile(t, dir, "mosk.yaml", oidcKubeconfig(newAPI, idp.url, "new-rt"))
		source, _ := os.ReadFile(newKC)
		readOnly(dir)
		if f, err := os.OpenFile(newKC, os.O_WRONLY, 0); err == nil {
			f.Close()
			t.Fatalf("%s is writable", newKC)
		}

		// The old code: the refresh succeeds at the IdP, its persisting
		// into the read-only file does not, and the call fails.
		_, err := clientAsBefore(t, oldKC).Discovery().ServerVersion()
		if err == nil || !strings.Contains(err.Error(), "could not persist new tokens") ||
			!(strings.Contains(err.Error(), "read-only file system") || strings.Contains(err.Error(), "permission denied")) {
			t.Fatalf("the old code's call: %v, want could not persist new tokens: … read-only file system", err)
		}
		t.Logf("the old code: %v", err)

		k := mosk
		k.Kubeconfig = newKC
		c, err := NewCluster(k, kubeaccess.Options{})
		if err != nil {
			t.Fatal(err)
		}
		closeAfter(t, c)
		const calls = 4
		for i := range calls {
			v, err := c.ServerVersion(context.Background())
			if err != nil || v != "v1.29.4" {
				t.Fatalf("call %d from the copy: %q, %v", i+1, v, err)
			}
		}
		issued, refreshes := idp.snapshot()
		var chain []string
		for _, rt := range refreshes {
			if strings.HasPrefix(rt, "new-rt") {
				chain = append(chain, rt)
			}
		}
		if len(chain) != calls || chain[0] != "new-rt" {
			t.Fatalf("refreshes %q: want %d, the first with new-rt", chain, calls)
		}
		for i := 1; i < calls; i++ {
			if !strings.HasPrefix(chain[i], "new-rt.") || chain[i] == chain[i-1] {
				t.Errorf("refresh %d used %q after %q: want the one the previous refresh returned", i+1, chain[i], chain[i-1])
			}
		}
		seen := newTokens()
		if len(seen) != calls {
			t.Errorf("the API server got %d calls, want %d", len(seen), calls)
		}
		for i := 1; i < len(seen); i++ {
			if seen[i] == seen[i-1] {
				t.Errorf("calls %d and %d sent the same id-token: no refresh", i, i+1)
			}
		}
		ap := readCopy(t, c)
		if last := issued[len(issued)-1]; ap.Config["id-token"] != last || ap.Config["refresh-token"] == "new-rt" {
			t.Errorf("the copy holds id-token %q and refresh-token %q: want the last refresh's", ap.Config["id-token"], ap.Config["refresh-token"])
		}
		if after, _ := os.ReadFile(newKC); !bytes.Equal(after, source) {
			t.Errorf("the source kubeconfig changed:\n%s", after)
		}
	})
}
