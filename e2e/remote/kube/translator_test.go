package kube

import (
	"bytes"
	"context"
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	utilproxy "k8s.io/apimachinery/pkg/util/proxy"
	apiproxy "k8s.io/apiserver/pkg/util/proxy"
	"k8s.io/client-go/rest"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/cri-streaming/pkg/streaming"
	remotecommandserver "k8s.io/cri-streaming/pkg/streaming/remotecommand"
	"k8s.io/streaming/pkg/httpstream/wsstream"

	"github.com/mosk-qa/asap2-e2e/e2e/remote/kubeaccess"
)

// The production path of every API server since 1.30: a WebSocket request
// for v5.channel.k8s.io is served by k8s.io/apiserver's own
// StreamTranslatorHandler, which speaks SPDY to the kubelet's streaming
// server; any other request is proxied as is by apimachinery's
// UpgradeAwareHandler. The API server's pods/exec handler wires the two
// together with NewTranslatingHandler and
// wsstream.IsWebSocketRequestWithStreamCloseProtocol (kubernetes
// pkg/registry/core/pod/rest/subresources.go, feature gate
// TranslateStreamCloseWebsocketRequests, on by default since 1.30); the
// test server below does the same, with the CRI streaming server of
// exec_test.go (reached over HTTP, as the kubelet's) behind it.

// countingRuntime is localRuntime counting the execs still running, so a
// test can tell that nothing is left running on the "node" after a cancel.
type countingRuntime struct {
	localRuntime
	running atomic.Int32
}

func (c *countingRuntime) Exec(ctx context.Context, id string, cmd []string, in io.Reader, out, errw io.WriteCloser, tty bool, resize <-chan remotecommandserver.TerminalSize) error {
	c.running.Add(1)
	defer c.running.Add(-1)
	return c.localRuntime.Exec(ctx, id, cmd, in, out, errw, tty, resize)
}

type translatingAPIServer struct {
	srv     *httptest.Server
	runtime *countingRuntime
	mu      sync.Mutex
	seen    []string // "translated" (WebSocket v5) / "proxied" per exec request
}

func (a *translatingAPIServer) kinds() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.seen...)
}

type responder struct{ t *testing.T }

func (r responder) Error(w http.ResponseWriter, _ *http.Request, err error) {
	r.t.Logf("proxy error: %v", err)
	http.Error(w, err.Error(), http.StatusBadGateway)
}

func newTranslatingAPIServer(t *testing.T) *translatingAPIServer {
	t.Helper()
	a := &translatingAPIServer{runtime: &countingRuntime{}}
	// The kubelet's side: the CRI streaming server on plain HTTP.
	var ss streaming.Server
	kubelet := lingeringServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { ss.ServeHTTP(w, r) }), false)
	cfg := streaming.DefaultConfig
	base, err := url.Parse(kubelet.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	cfg.BaseURL = base
	ss, err = streaming.NewServer(cfg, a.runtime)
	if err != nil {
		t.Fatal(err)
	}
	a.srv = lingeringServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+testToken {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		if !strings.HasPrefix(r.URL.Path, "/api/v1/namespaces/openstack/pods/") || !strings.HasSuffix(r.URL.Path, "/exec") {
			http.NotFound(w, r)
			return
		}
		q := r.URL.Query()
		opts := apiproxy.Options{Stdin: q.Get("stdin") == "true", Stdout: q.Get("stdout") == "true", Stderr: q.Get("stderr") == "true", Tty: q.Get("tty") == "true"}
		resp, err := ss.GetExec(&runtimeapi.ExecRequest{ContainerId: q.Get("container"), Cmd: q["command"],
			Stdin: opts.Stdin, Stdout: opts.Stdout, Stderr: opts.Stderr, Tty: opts.Tty})
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		location, err := url.Parse(resp.Url)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		kind := "proxied"
		if wsstream.IsWebSocketRequestWithStreamCloseProtocol(r) {
			kind = "translated"
		}
		a.mu.Lock()
		a.seen = append(a.seen, kind)
		a.mu.Unlock()
		delegate := utilproxy.NewUpgradeAwareHandler(location, nil, false, true, responder{t})
		apiproxy.NewTranslatingHandler(delegate, apiproxy.NewStreamTranslatorHandler(location, nil, 0, opts),
			wsstream.IsWebSocketRequestWithStreamCloseProtocol).ServeHTTP(w, r)
	}), true)
	return a
}

// lingeringServer is an httptest server (over TLS when tls is set) whose
// connections close lingering (linger_test.go), closed when the test ends.
func lingeringServer(t *testing.T, h http.Handler, tls bool) *httptest.Server {
	s := httptest.NewUnstartedServer(h)
	l := &connTracker{Listener: s.Listener}
	s.Listener = l
	if tls {
		s.StartTLS()
	} else {
		s.Start()
	}
	t.Cleanup(l.abort)
	t.Cleanup(s.Close)
	return s
}

// runner is a Runner with client-go's default executor (WebSocket v5, SPDY
// on a refused upgrade) on the translating API server.
func (a *translatingAPIServer) runner(t *testing.T) *Runner {
	t.Helper()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: a.srv.Certificate().Raw})
	rc := &rest.Config{Host: a.srv.URL, BearerToken: testToken, TLSClientConfig: rest.TLSClientConfig{CAData: ca}}
	c, err := newCluster(rc, mosk, kubeaccess.Options{KillGrace: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return c.runnerFor("cmp-1", kubeaccess.Pod{Node: "cmp-1", Namespace: "openstack", Name: "openvswitch-vswitchd-default-abcde", Container: "openvswitch-vswitchd"})
}

// waitIdle waits until no exec runs in the streaming server's runtime.
func (a *translatingAPIServer) waitIdle(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for a.runtime.running.Load() != 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := a.runtime.running.Load(); n != 0 {
		t.Errorf("%d exec(s) still running in the container runtime", n)
	}
}

func TestExecThroughStreamTranslator(t *testing.T) {
	a := newTranslatingAPIServer(t)
	r := a.runner(t)
	ctx := context.Background()

	res, err := r.Run(ctx, "echo out; echo err >&2; exit 3")
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 3 || string(res.Stdout) != "out\n" || string(res.Stderr) != "err\n" {
		t.Errorf("got exit %d, stdout %q, stderr %q; want 3, \"out\\n\", \"err\\n\"", res.ExitCode, res.Stdout, res.Stderr)
	}
	if res, err := r.Run(ctx, "true"); err != nil || res.ExitCode != 0 || len(res.Stdout) != 0 || len(res.Stderr) != 0 {
		t.Errorf("true: exit %d, stdout %q, stderr %q, %v", res.ExitCode, res.Stdout, res.Stderr, err)
	}
	if res, err := r.Run(ctx, "exit 255"); err != nil || res.ExitCode != 255 {
		t.Errorf("exit 255: exit %d, %v", res.ExitCode, err)
	}

	// Several MiB on stdout and on stderr at once, kept apart.
	const size = 5 << 20
	res, err = r.Run(ctx, "head -c "+strconv.Itoa(size)+" /dev/zero | tr '\\0' a & head -c "+strconv.Itoa(size/2)+" /dev/zero | tr '\\0' b >&2; wait")
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Stdout) != size || bytes.Count(res.Stdout, []byte("a")) != size {
		t.Errorf("stdout: %d bytes, %d of them 'a'; want %d of 'a'", len(res.Stdout), bytes.Count(res.Stdout, []byte("a")), size)
	}
	if len(res.Stderr) != size/2 || bytes.Count(res.Stderr, []byte("b")) != size/2 {
		t.Errorf("stderr: %d bytes, %d of them 'b'; want %d of 'b'", len(res.Stderr), bytes.Count(res.Stderr, []byte("b")), size/2)
	}

	// Every exec went through the translator: WebSocket v5 was accepted,
	// nothing fell back to SPDY.
	for i, k := range a.kinds() {
		if k != "translated" {
			t.Errorf("exec request %d was %s, want translated (WebSocket v5)", i, k)
		}
	}
	a.waitIdle(t)
}

func TestCancelKillsThroughStreamTranslator(t *testing.T) {
	a := newTranslatingAPIServer(t)
	r := a.runner(t)
	testCancelKills(t, r)
	// The TERM of the cancel is an exec of its own, translated too.
	if k := a.kinds(); len(k) < 2 || strings.Count(strings.Join(k, ","), "translated") != len(k) {
		t.Errorf("exec requests %v, want the command and its kill, all translated", k)
	}
	a.waitIdle(t)
}

// Stop (TERM to the group, as for a capture) ends the command with its
// summary and exit 0 through the translator too. As in TestStopDeliversTERM,
// the command says it is ready through a fifo and the grace is long: the
// TERM path is under test, and under go test -race on a starved machine the
// TERM's own exec took longer than a 1 s grace (the runner then rightly
// dropped the stream as unanswered).
func TestStopThroughStreamTranslator(t *testing.T) {
	a := newTranslatingAPIServer(t)
	r := a.runner(t)
	r.c.grace = time.Minute
	fifo := filepath.Join(t.TempDir(), "ready.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := r.Start(context.Background(), `trap 'echo "3 packets captured" >&2; exit 0' TERM; echo listening; echo ready > `+fifo+`; while :; do sleep 0.1; done`)
	if err != nil {
		t.Fatal(err)
	}
	if data, err := os.ReadFile(fifo); err != nil || string(data) != "ready\n" {
		t.Fatalf("fifo: %q %v", data, err)
	}
	res, err := p.Stop()
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 0 || string(res.Stdout) != "listening\n" || !strings.Contains(string(res.Stderr), "3 packets captured") {
		t.Errorf("got exit %d, stdout %q, stderr %q; want 0, the output and the summary", res.ExitCode, res.Stdout, res.Stderr)
	}
	a.waitIdle(t)
}
