package kube

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/rest"
	utilexec "k8s.io/client-go/util/exec"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/cri-streaming/pkg/streaming"
	remotecommandserver "k8s.io/cri-streaming/pkg/streaming/remotecommand"

	"github.com/mosk-qa/asap2-e2e/e2e/remote"
	"github.com/mosk-qa/asap2-e2e/e2e/remote/kubeaccess"
)

// The exec tests run client-go's executors against Kubernetes' own CRI
// streaming server (k8s.io/cri-streaming, the code container runtimes serve
// exec with), in process over TLS. The API server's pods/<pod>/exec URL is
// routed to the streaming server as the kubelet does: GetExec hands out a
// token, and the same request is served at /exec/<token>. Its Runtime runs
// the command on this machine with os/exec, so "the container" is the test
// process's host and a killed command can be checked by its pid.
//
// The streaming server speaks SPDY (v1..v4) and WebSocket v4 and older; v5
// over WebSocket is what the API server adds in front of the kubelet. So the
// runner's default executor (WebSocket v5 first) is refused and falls back to
// SPDY here, as against an API server older than 1.30; the WebSocket data
// path is exercised by offering v4.channel.k8s.io.

// localRuntime is a streaming.Runtime whose Exec runs cmd locally.
type localRuntime struct{}

func (localRuntime) Exec(_ context.Context, _ string, cmd []string, in io.Reader, out, errw io.WriteCloser, _ bool, resize <-chan remotecommandserver.TerminalSize) error {
	if resize != nil {
		go func() {
			for range resize {
			}
		}()
	}
	c := exec.Command(cmd[0], cmd[1:]...)
	c.Stdout, c.Stderr = out, errw
	if in != nil {
		// Not c.Stdin = in: Wait would then wait for the client's stdin to
		// end; a runtime ends the exec when the process exits.
		w, err := c.StdinPipe()
		if err != nil {
			return err
		}
		go func() {
			io.Copy(w, in)
			w.Close()
		}()
	}
	err := c.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		ws := ee.Sys().(syscall.WaitStatus)
		code := ws.ExitStatus()
		if ws.Signaled() { // as runc reports a signalled process
			code = 128 + int(ws.Signal())
		}
		return utilexec.CodeExitError{Err: err, Code: code}
	}
	return err
}

func (localRuntime) Attach(context.Context, string, io.Reader, io.WriteCloser, io.WriteCloser, bool, <-chan remotecommandserver.TerminalSize) error {
	return errors.New("attach: not in this test")
}

func (localRuntime) PortForward(context.Context, string, int32, io.ReadWriteCloser) error {
	return errors.New("port-forward: not in this test")
}

const testToken = "sekrit-bearer-token-0123456789"

type apiServer struct {
	srv  *httptest.Server
	conn *connTracker
	mu   sync.Mutex
	seen []string // "websocket" / "spdy" per exec request
	cmds [][]string
	// execPods are the pods of the exec requests in cmds.
	execPods []string
	// pods, when set, are the pods of namespace openstack the server
	// knows: get and list (label and node selectors) answer from them, and
	// an exec into a pod not among them is answered NotFound, as the API
	// server does. nil = every exec is served, nothing else is.
	pods map[string]corev1.Pod
}

// commands are the command lines of the exec requests, WebSocket's refused
// upgrades left out.
func (a *apiServer) commands() [][]string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([][]string(nil), a.cmds...)
}

func (a *apiServer) kinds() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.seen...)
}

// newAPIServer serves .../pods/<pod>/exec with the streaming server.
func newAPIServer(t *testing.T) *apiServer {
	t.Helper()
	cfg := streaming.DefaultConfig
	cfg.BaseURL = &url.URL{Scheme: "https", Host: "streaming.invalid", Path: "/"}
	ss, err := streaming.NewServer(cfg, localRuntime{})
	if err != nil {
		t.Fatal(err)
	}
	a := &apiServer{}
	a.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+testToken {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		if a.servePods(w, r) {
			return
		}
		if !strings.HasPrefix(r.URL.Path, "/api/v1/namespaces/openstack/pods/") || !strings.HasSuffix(r.URL.Path, "/exec") {
			http.NotFound(w, r)
			return
		}
		name := strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/api/v1/namespaces/openstack/pods/"), "/exec")
		if !a.hasPod(name) {
			writeStatus(w, apierrors.NewNotFound(corev1.Resource("pods"), name))
			return
		}
		kind := "spdy"
		if strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
			kind = "websocket"
		}
		a.mu.Lock()
		a.seen = append(a.seen, kind)
		a.mu.Unlock()
		q := r.URL.Query()
		if kind == "spdy" || len(wsProtocolsOf(r)) > 0 && !slices.Contains(wsProtocolsOf(r), "v5.channel.k8s.io") {
			a.mu.Lock()
			a.cmds = append(a.cmds, q["command"])
			a.execPods = append(a.execPods, name)
			a.mu.Unlock()
		}
		resp, err := ss.GetExec(&runtimeapi.ExecRequest{ContainerId: q.Get("container"), Cmd: q["command"],
			Stdin: q.Get("stdin") == "true", Stdout: q.Get("stdout") == "true", Stderr: q.Get("stderr") == "true"})
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		u, err := url.Parse(resp.Url)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		r.URL.Path, r.URL.RawQuery, r.RequestURI = u.Path, "", u.Path
		ss.ServeHTTP(w, r)
	}))
	a.conn = &connTracker{Listener: a.srv.Listener}
	a.srv.Listener = a.conn
	a.srv.StartTLS()
	// After the server's Close: the lingering connections' drains end too.
	t.Cleanup(a.conn.abort)
	t.Cleanup(a.srv.Close)
	return a
}

// kill closes the listener and every connection: the port refuses from
// now on.
func (a *apiServer) kill() { a.conn.abort() }

func (a *apiServer) hasPod(name string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.pods == nil {
		return true
	}
	_, ok := a.pods[name]
	return ok
}

// setPods replaces the pods the server knows.
func (a *apiServer) setPods(pods ...corev1.Pod) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.pods = map[string]corev1.Pod{}
	for _, p := range pods {
		a.pods[p.Name] = p
	}
}

// servePods answers a get or a list of the pods of namespace openstack
// when the server knows pods.
func (a *apiServer) servePods(w http.ResponseWriter, r *http.Request) bool {
	const prefix = "/api/v1/namespaces/openstack/pods"
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.pods == nil || r.Method != http.MethodGet || !strings.HasPrefix(r.URL.Path, prefix) || strings.HasSuffix(r.URL.Path, "/exec") {
		return false
	}
	if name := strings.TrimPrefix(strings.TrimPrefix(r.URL.Path, prefix), "/"); name != "" {
		p, ok := a.pods[name]
		if !ok {
			writeStatus(w, apierrors.NewNotFound(corev1.Resource("pods"), name))
			return true
		}
		writeJSON(w, &p)
		return true
	}
	sel, err := labels.Parse(r.URL.Query().Get("labelSelector"))
	if err != nil {
		writeStatus(w, apierrors.NewBadRequest(err.Error()))
		return true
	}
	fsel, err := fields.ParseSelector(r.URL.Query().Get("fieldSelector"))
	if err != nil {
		writeStatus(w, apierrors.NewBadRequest(err.Error()))
		return true
	}
	list := corev1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"}}
	for _, p := range a.pods {
		if sel.Matches(labels.Set(p.Labels)) && fsel.Matches(fields.Set{"spec.nodeName": p.Spec.NodeName}) {
			list.Items = append(list.Items, p)
		}
	}
	writeJSON(w, &list)
	return true
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

func writeStatus(w http.ResponseWriter, err *apierrors.StatusError) {
	st := err.Status()
	st.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(int(st.Code))
	json.NewEncoder(w).Encode(&st)
}

// runner is a Runner on the test API server, logging to dir/commands.jsonl.
func (a *apiServer) runner(t *testing.T, dir string, wsProtocols ...string) (*Runner, *remote.CommandLog) {
	t.Helper()
	log, err := remote.OpenCommandLog(filepath.Join(dir, "commands.jsonl"), 0)
	if err != nil {
		t.Fatal(err)
	}
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: a.srv.Certificate().Raw})
	rc := &rest.Config{Host: a.srv.URL, BearerToken: testToken, TLSClientConfig: rest.TLSClientConfig{CAData: ca}}
	c, err := newCluster(rc, mosk, kubeaccess.Options{Log: log, KillGrace: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	c.wsProtocols = wsProtocols
	return c.runnerFor("cmp-1", kubeaccess.Pod{Node: "cmp-1", Namespace: "openstack", Name: "openvswitch-vswitchd-default-abcde", Container: "openvswitch-vswitchd"}), log
}

func TestExecOverSPDYFallback(t *testing.T) {
	a := newAPIServer(t)
	dir := t.TempDir()
	r, log := a.runner(t, dir)
	ctx := context.Background()
	var logged []string
	r.c.logf = func(format string, args ...any) { logged = append(logged, fmt.Sprintf(format, args...)) }

	res, err := r.Run(ctx, "echo out; echo err >&2; exit 3")
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 3 || string(res.Stdout) != "out\n" || string(res.Stderr) != "err\n" {
		t.Errorf("got exit %d, stdout %q, stderr %q; want 3, \"out\\n\", \"err\\n\" (the wrapper's line removed)", res.ExitCode, res.Stdout, res.Stderr)
	}
	var ee *remote.ExitError
	if !errors.As(res.Err(), &ee) {
		t.Errorf("Err() = %v, want an ExitError", res.Err())
	}
	if got := a.kinds(); strings.Join(got, ",") != "websocket,spdy" {
		t.Errorf("exec requests %v, want websocket (v5, refused) then spdy", got)
	}

	if res, err := r.Run(ctx, "true"); err != nil || res.ExitCode != 0 {
		t.Errorf("true: exit %d, %v", res.ExitCode, err)
	}
	// The refusal is remembered: the next exec goes straight to SPDY.
	if got := a.kinds(); strings.Join(got, ",") != "websocket,spdy,spdy" {
		t.Errorf("exec requests %v, want websocket (refused), spdy, then spdy alone", got)
	}
	if p := r.c.ExecProtocol(); p != "spdy" {
		t.Errorf("ExecProtocol() = %q after a refused upgrade, want spdy", p)
	}
	if len(logged) != 1 || !strings.Contains(logged[0], "refused the WebSocket upgrade") || !strings.Contains(logged[0], "use SPDY from here on") {
		t.Errorf("the run's log got %q, want one line saying the upgrade was refused and SPDY is used", logged)
	}

	const size = 6 << 20
	res, err = r.Run(ctx, "head -c "+strconv.Itoa(size)+" /dev/zero | tr '\\0' a; echo tail >&2")
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Stdout) != size || bytes.Count(res.Stdout, []byte("a")) != size || string(res.Stderr) != "tail\n" {
		t.Errorf("large output: %d bytes of stdout (want %d), stderr %q", len(res.Stdout), size, res.Stderr)
	}

	if err := log.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, "commands.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(data, []byte(testToken)) {
		t.Error("the bearer token is in the command log")
	}
	if !bytes.Contains(data, []byte(`"target":"hypervisor cmp-1 (pod openstack/openvswitch-vswitchd-default-abcde, container openvswitch-vswitchd)","cmd":"echo out; echo err \u003e\u00262; exit 3"`)) {
		t.Errorf("command log lacks the first command with its target:\n%.600s", data)
	}
	if bytes.Contains(data, []byte("ASAP2E2E-PGID")) || bytes.Contains(data, []byte("asap2e2e "+"'")) {
		t.Errorf("the wrapper leaked into the command log:\n%.600s", data)
	}
}

func TestExecOverWebSocket(t *testing.T) {
	a := newAPIServer(t)
	r, _ := a.runner(t, t.TempDir(), "v4.channel.k8s.io")
	res, err := r.Run(context.Background(), "echo hi; echo oops >&2; exit 4")
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 4 || string(res.Stdout) != "hi\n" || string(res.Stderr) != "oops\n" {
		t.Errorf("got exit %d, stdout %q, stderr %q", res.ExitCode, res.Stdout, res.Stderr)
	}
	if got := a.kinds(); strings.Join(got, ",") != "websocket" {
		t.Errorf("exec requests %v, want websocket only", got)
	}
	if p := r.c.ExecProtocol(); p != "websocket" {
		t.Errorf("ExecProtocol() = %q, want websocket", p)
	}
	testCancelKills(t, r)
}

func TestCancelKillsTheCommandSPDY(t *testing.T) {
	a := newAPIServer(t)
	r, _ := a.runner(t, t.TempDir())
	testCancelKills(t, r)
}

// testCancelKills cancels a command that runs a shell and a child sleep,
// and checks both processes are gone. The kill's path is under test, not
// its grace: the TERM's own exec gets a minute to be answered (under go test
// -race at SCHED_IDLE beside a lab it took longer than the runners' 1 s, and
// the runner then rightly dropped the stream as unanswered), and the waits
// below are bounds a healthy run stays far inside.
func testCancelKills(t *testing.T, r *Runner) {
	t.Helper()
	r.c.grace = time.Minute
	pids := filepath.Join(t.TempDir(), "pids")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	var res remote.Result
	go func() {
		var err error
		res, err = r.Run(ctx, "sleep 300 & echo $$ $! > "+pids+"; wait")
		done <- err
	}()
	var ids []int
	deadline := time.Now().Add(10 * time.Second)
	for len(ids) < 2 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
		data, _ := os.ReadFile(pids)
		ids = ids[:0]
		for _, f := range strings.Fields(string(data)) {
			if n, err := strconv.Atoi(f); err == nil {
				ids = append(ids, n)
			}
		}
	}
	if len(ids) < 2 {
		cancel()
		t.Fatalf("the command did not start: %v", <-done)
	}
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) || res.ExitCode != -1 {
			t.Errorf("Run after cancel: exit %d, %v; want -1 and context.Canceled", res.ExitCode, err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Run did not return within a minute of the cancel")
	}
	for _, pid := range ids {
		deadline := time.Now().Add(time.Minute)
		for alive(pid) && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if alive(pid) {
			t.Errorf("pid %d still runs after the cancel", pid)
		}
	}
}

// alive: the process exists and is not a zombie.
func alive(pid int) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(data, ')')
	return i < 0 || i+2 >= len(data) || data[i+2] != 'Z'
}

// Stop delivers TERM, so a capture prints its summary (tcpdump's "N packets
// captured" on stderr) and exits 0, as over SSH.
// The command says it is ready through a fifo (no sleep that a loaded
// machine outlasts), and the grace is long: the TERM path is under test, and
// neither the wait for the process group's id nor the KILL may win a race
// on a loaded machine (go test -race beside the lab).
func TestStopDeliversTERM(t *testing.T) {
	a := newAPIServer(t)
	r, _ := a.runner(t, t.TempDir())
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
	start := time.Now()
	res, err := p.Stop()
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 0 || string(res.Stdout) != "listening\n" || !strings.Contains(string(res.Stderr), "3 packets captured") {
		t.Errorf("got exit %d, stdout %q, stderr %q; want 0, the output and the summary", res.ExitCode, res.Stdout, res.Stderr)
	}
	if d := time.Since(start); d >= r.c.grace {
		t.Errorf("Stop took %s: the TERM did not end it before the KILL grace", d)
	}
}

// A debug pod's runner execs like the OVS pod's, through the same
// streaming protocol, and the command log names the debug pod.
func TestDebugPodRunnerExecs(t *testing.T) {
	a := newAPIServer(t)
	dir := t.TempDir()
	r, log := a.runner(t, dir)
	dr, err := r.c.RunnerIn("cmp-1", kubeaccess.Pod{Node: "cmp-1", Namespace: "openstack", Name: podName, Container: DebugContainer})
	if err != nil {
		t.Fatal(err)
	}
	res, err := dr.Run(context.Background(), `for t in sh no-such-tool-x; do command -v "$t" >/dev/null 2>&1 && echo "$t"; done; true`)
	if err != nil || res.ExitCode != 0 || string(res.Stdout) != "sh\n" {
		t.Fatalf("probe: exit %d, stdout %q, %v", res.ExitCode, res.Stdout, err)
	}
	if err := log.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, "commands.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(data, []byte(`"target":"hypervisor cmp-1 (pod openstack/`+podName+`, container debug)"`)) {
		t.Errorf("command log does not name the debug pod:\n%.500s", data)
	}
	if _, err := clusterFor(nil, mosk, kubeaccess.Options{}).RunnerIn("cmp-1", kubeaccess.Pod{}); err == nil {
		t.Error("a discovery-only cluster made a runner")
	}
}

// klogLines captures what client-go logs through klog (its "Unhandled
// Error" reports among them) until the test ends.
func klogLines(t *testing.T) func() string {
	t.Helper()
	var mu sync.Mutex
	var buf strings.Builder
	setClientLogSink(func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(&buf, format+"\n", args...)
	})
	t.Cleanup(klogReset)
	return func() string {
		mu.Lock()
		defer mu.Unlock()
		return buf.String()
	}
}

// A successful command leaves nothing in client-go's log: its stdin copy
// ends with an EOF, not a read on a closed pipe ("Copying stdin failed"
// err="io: read/write on closed pipe", which reached the run's output).
// The servers here are the CRI streaming server alone, so whatever klog
// gets is the client's.
func TestSuccessfulExecLogsNoStdinError(t *testing.T) {
	logged := klogLines(t)
	for _, proto := range [][]string{nil, {"v4.channel.k8s.io"}} {
		a := newAPIServer(t)
		r, _ := a.runner(t, t.TempDir(), proto...)
		for i := 0; i < 3; i++ {
			if res, err := r.Run(context.Background(), "echo ok"); err != nil || res.ExitCode != 0 || string(res.Stdout) != "ok\n" {
				t.Fatalf("echo ok (%v): exit %d, stdout %q, %v", proto, res.ExitCode, res.Stdout, err)
			}
		}
	}
	// client-go's stdin copy runs on after the stream's end: give it the
	// time to fail, as it did.
	time.Sleep(200 * time.Millisecond)
	if out := logged(); strings.Contains(out, "Copying stdin failed") {
		t.Errorf("client-go logged a stdin error on a successful command:\n%s", out)
	}
}

// wsProtocolsOf are the WebSocket subprotocols r offers.
func wsProtocolsOf(r *http.Request) []string {
	var out []string
	for _, h := range r.Header.Values("Sec-WebSocket-Protocol") {
		for _, p := range strings.Split(h, ",") {
			out = append(out, strings.TrimSpace(p))
		}
	}
	return out
}
