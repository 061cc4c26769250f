package kube

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/remotecommand"
	utilexec "k8s.io/client-go/util/exec"
	"k8s.io/streaming/pkg/httpstream"

	"github.com/mosk-qa/asap2-e2e/e2e/remote"
	"github.com/mosk-qa/asap2-e2e/e2e/remote/kubeaccess"
)

// Runner runs commands in one pod's container. It implements remote.Runner
// and is safe for concurrent use.
//
// The OVS pod of a node (Cluster.Runner) can vanish under a run: a
// DaemonSet rollout or a drain deletes it and the DaemonSet creates another
// on the same node, under another name. A command whose exec fails then is
// not run again (its output would straddle an ovs-vswitchd restart); its
// error, a kubeaccess.PodGoneError, names the pod that vanished, its node
// and namespace, and the replacement found by the same label selector and
// node, if any; the later commands run in the replacement, and the run's
// log says "pod X on node Y was replaced by Z". So every replacement fails
// exactly the command that found it, and the check whose evidence that
// command was part of records it in its reason. A pod created again under
// the same name between two commands is not seen (no exec fails); its UID
// tells it apart when an exec fails. A debug pod (RunnerIn) is not
// followed. Each move is told to kubeaccess.Options.Replaced, so that the
// run's results name every pod its commands ran in.
type Runner struct {
	c  *Cluster
	hv string
	// follow: the pod was found by the OVS selector and node, and its
	// replacement is looked up the same way when it vanishes.
	follow bool

	mu   sync.Mutex
	pod  kubeaccess.Pod
	name string
	// moveMu is held from a move to the end of its report (log and
	// Options.Replaced), so that the reports of two moves come in the
	// order of the moves.
	moveMu sync.Mutex
}

var _ kubeaccess.PodRunner = (*Runner)(nil)

// Name is "hypervisor <hv> (pod <ns>/<pod>, container <c>)", the pod the
// next command runs in.
func (r *Runner) Name() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.name
}

// Pod is where the next command runs.
func (r *Runner) Pod() kubeaccess.Pod {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.pod
}

func (r *Runner) current() (kubeaccess.Pod, string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.pod, r.name
}

// Run runs cmd to completion or until ctx ends (then the command's process
// group in the container is killed).
func (r *Runner) Run(ctx context.Context, cmd string) (remote.Result, error) {
	p, err := r.start(ctx, cmd, false)
	if err != nil {
		return remote.Result{Target: r.Name(), Cmd: cmd, ExitCode: -1}, err
	}
	return p.Wait()
}

// Start runs cmd in the background; Stop or cancelling ctx stops it.
func (r *Runner) Start(ctx context.Context, cmd string) (remote.Process, error) {
	return r.start(ctx, cmd, true)
}

// executor is kubectl's (v1.30+): WebSocket first, SPDY when the upgrade is
// refused (an older API server, a proxy that does not pass WebSockets).
func (r *Runner) executor(pod kubeaccess.Pod, argv []string, stdin bool) (remotecommand.Executor, error) {
	u := r.c.client.CoreV1().RESTClient().Post().
		Namespace(pod.Namespace).Resource("pods").Name(pod.Name).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{
			Container: pod.Container, Command: argv,
			Stdin: stdin, Stdout: true, Stderr: true,
		}, scheme.ParameterCodec).URL()
	return newExecutor(r.c, u)
}

func newExecutor(c *Cluster, u *url.URL) (remotecommand.Executor, error) {
	spdy, err := remotecommand.NewSPDYExecutor(c.rest, "POST", u)
	if err != nil {
		return nil, fmt.Errorf("spdy executor: %w", err)
	}
	var ws remotecommand.Executor
	if c.wsProtocols != nil {
		ws, err = remotecommand.NewWebSocketExecutorForProtocols(c.rest, "GET", u.String(), c.wsProtocols...)
	} else {
		ws, err = remotecommand.NewWebSocketExecutor(c.rest, "GET", u.String())
	}
	if err != nil {
		return nil, fmt.Errorf("websocket executor: %w", err)
	}
	return &protocolExecutor{c: c, ws: ws, spdy: spdy}, nil
}

// protocolExecutor is client-go's fallback executor (WebSocket, then SPDY
// when the upgrade is refused) that remembers the refusal for the cluster:
// an API server that refused one exec's upgrade (before 1.30, or with
// TranslateStreamCloseWebsocketRequests off, or behind a proxy that drops
// WebSockets) refuses them all, so each later exec goes straight to SPDY,
// and the run's log says once which protocol its commands use. The
// refusal comes before any stream is opened, so stdin is still unread when
// SPDY takes over.
type protocolExecutor struct {
	c        *Cluster
	ws, spdy remotecommand.Executor
}

func (e *protocolExecutor) Stream(o remotecommand.StreamOptions) error {
	return e.StreamWithContext(context.Background(), o)
}

func (e *protocolExecutor) StreamWithContext(ctx context.Context, o remotecommand.StreamOptions) error {
	if e.c.spdyOnly.Load() {
		return e.spdy.StreamWithContext(ctx, o)
	}
	err := e.ws.StreamWithContext(ctx, o)
	if err == nil || !(httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)) {
		return err
	}
	if e.c.spdyOnly.CompareAndSwap(false, true) && e.c.logf != nil {
		e.c.logf("kubernetes: pods/exec: the API server refused the WebSocket upgrade (%v); this run's commands use SPDY from here on", err)
	}
	return e.spdy.StreamWithContext(ctx, o)
}

// ExecProtocol is the protocol this cluster's execs use now: "websocket"
// until the API server refused an upgrade, "spdy" after.
func (c *Cluster) ExecProtocol() string {
	if c.spdyOnly.Load() {
		return "spdy"
	}
	return "websocket"
}

func (r *Runner) start(ctx context.Context, cmd string, background bool) (remote.Process, error) {
	startTime := time.Now()
	pod, name := r.current()
	fail := func(err error) (remote.Process, error) {
		err = fmt.Errorf("%s: %q: %w", name, cmd, err)
		r.c.log.Record(remote.Result{Target: name, Cmd: cmd, ExitCode: -1}, startTime, false, background, err)
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return fail(fmt.Errorf("not started: %w", err))
	}
	marker := newTrailerMarker()
	w := remote.Wrap(withTrailer(podCommand(pod, cmd), marker), r.c.grace)
	stderr := newTrailerWriter(w.Stderr(), marker)
	ex, err := r.executor(pod, []string{"sh", "-c", w.Line}, true)
	if err != nil {
		return fail(err)
	}
	stdinR, stdinW := io.Pipe()
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	var stdout remote.Output
	exited := make(chan error, 1)
	t := &execTransport{r: r, ctx: ctx, pod: pod, name: name, stdin: stdinW, cancelStream: cancel}
	go func() {
		err := ex.StreamWithContext(sctx, remotecommand.StreamOptions{Stdin: stdinR, Stdout: &stdout, Stderr: stderr})
		exited <- untrailed(err, stderr.end(), t.stopping.Load())
		// The stream is over; client-go's stdin copy may still wait on
		// the pipe. Ending it from the writer's side gives that copy an
		// EOF, a clean end; closing the reader would fail its read with
		// io.ErrClosedPipe, which client-go reports through klog as
		// "Copying stdin failed" on every successful command.
		stdinW.Close()
	}()
	via := r.c.via(pod)
	return remote.Supervise(remote.Supervision{
		Ctx: ctx, Target: name, Cmd: cmd, Start: startTime, Background: background, Log: r.c.log,
		Wrapped: w, Stdout: &stdout, Exited: exited,
		Transport: t,
		Grace:     r.c.grace, AfterKill: r.c.grace,
		NoPGIDNote:     "the process group id was not reported within the grace period (" + via + "); relying on the watchdog in the container",
		UnansweredNote: "the API server did not answer the signal's exec (" + via + "); dropped the exec stream (the watchdog in the container ends the command when its stdin closes)",
		DroppedNote:    "the exec stream (" + via + ") did not end within %s after KILL; dropped it (the watchdog in the container ends the command when its stdin closes)",
		NoExitErr:      fmt.Errorf("%w (%s)", errNoExit, via),
	}), nil
}

// via names the way a command reaches pod: "exec through the API server
// <URL> into pod <ns>/<name> on node <node>".
func (c *Cluster) via(pod kubeaccess.Pod) string {
	return fmt.Sprintf("exec through the API server %s into pod %s/%s on node %s", c.server(), pod.Namespace, pod.Name, pod.Node)
}

// server is the API server's URL.
func (c *Cluster) server() string {
	if c.rest == nil {
		return "(none)"
	}
	return c.rest.Host
}

// execTransport is one command's exec stream, for the supervisor.
type execTransport struct {
	r            *Runner
	ctx          context.Context // the command's
	pod          kubeaccess.Pod  // where it runs
	name         string
	stdin        *io.PipeWriter
	cancelStream context.CancelFunc
	// stopping: the supervisor began to stop the command (a signal, the
	// end of its stdin), so a KILL may end it without its trailer.
	stopping atomic.Bool
}

func (t *execTransport) Signal(pgid int, signal string) error {
	t.stopping.Store(true)
	return t.r.signalGroup(t.pod, t.name, pgid, signal)
}

// Unanswered: the signal's exec got no answer from the API server (no
// connection, or none within the kill grace), so neither will the KILL's.
func (t *execTransport) Unanswered(err error) bool { return unreachable(err) }
func (t *execTransport) EndStdin() {
	t.stopping.Store(true)
	t.stdin.Close()
}
func (t *execTransport) Close() { t.cancelStream() }
func (t *execTransport) ExitOf(err error) (int, string) {
	return exitOf(err), ""
}

// NoExit is the error of a command whose exec stream ended without an
// exit status: the pod that vanished (PodGoneError) when it did, else the
// stream's error naming the API server, the pod and its node.
func (t *execTransport) NoExit(streamErr error) error {
	return t.r.explain(t.ctx, t.pod, fmt.Errorf("no exit status: %w", streamErr))
}

// signalGroup sends signal to a process group in the container of pod
// through an exec of its own, waiting at most the kill grace.
func (r *Runner) signalGroup(pod kubeaccess.Pod, name string, pgid int, signal string) error {
	ctx, cancel := context.WithTimeout(context.Background(), r.c.grace)
	defer cancel()
	start := time.Now()
	line := remote.KillLine(pgid, signal)
	var out remote.Output
	ex, err := r.executor(pod, []string{"sh", "-c", line}, false)
	if err == nil {
		err = ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &out, Stderr: &out})
	}
	res := remote.Result{Target: name, Cmd: line, Stdout: out.Bytes(), Duration: time.Since(start)}
	res.ExitCode = exitOf(err)
	if err != nil && res.ExitCode == -1 {
		err = fmt.Errorf("%s: sending %s to process group %d (%s): %w", name, signal, pgid, r.c.via(pod), err)
	} else {
		err = nil
	}
	r.c.log.Record(res, start, false, false, err)
	return err
}

// exitOf is the command's exit status from the stream's error: nil = 0; the
// server's non-zero exit code (exec.CodeExitError); -1 = none (transport).
func exitOf(err error) int {
	if err == nil {
		return 0
	}
	var ee utilexec.ExitError
	if errors.As(err, &ee) && ee.Exited() {
		return ee.ExitStatus()
	}
	return -1
}

// podCommand is what the wrapper runs for cmd in pod p: cmd itself, or,
// when the pod mounts the host's / (HostRoot), cmd under `chroot HostRoot`
// in the host's /bin/sh, so its programs are the host's. Only the command
// is chrooted: the wrapper (its /proc reads, setsid, the watchdog) and the
// kill execs run in the container as they do in the OVS container, since
// the host's /proc under HostRoot shows the host's PID namespace, not the
// pod's that $$ and the process group ids belong to.
func podCommand(p kubeaccess.Pod, cmd string) string {
	if p.HostRoot == "" {
		return cmd
	}
	return "chroot " + remote.ShellQuote(p.HostRoot) + " /bin/sh -c " + remote.ShellQuote(cmd)
}

var errNoExit = errors.New("no exit status: the exec stream was dropped")
