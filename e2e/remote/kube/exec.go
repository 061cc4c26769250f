package kube

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/remotecommand"
	utilexec "k8s.io/client-go/util/exec"
	"k8s.io/streaming/pkg/httpstream"

	"github.com/mosk-qa/asap2-e2e/e2e/remote"
)

// Runner runs commands in one pod's container. It implements remote.Runner
// and is safe for concurrent use.
type Runner struct {
	c    *Cluster
	pod  Pod
	name string
}

var _ remote.Runner = (*Runner)(nil)

// Name is "hypervisor <hv> (pod <ns>/<pod>, container <c>)".
func (r *Runner) Name() string { return r.name }

// Pod is where the commands run.
func (r *Runner) Pod() Pod { return r.pod }

// Run runs cmd to completion or until ctx ends (then the command's process
// group in the container is killed).
func (r *Runner) Run(ctx context.Context, cmd string) (remote.Result, error) {
	p, err := r.start(ctx, cmd, false)
	if err != nil {
		return remote.Result{Target: r.name, Cmd: cmd, ExitCode: -1}, err
	}
	return p.Wait()
}

// Start runs cmd in the background; Stop or cancelling ctx stops it.
func (r *Runner) Start(ctx context.Context, cmd string) (remote.Process, error) {
	return r.start(ctx, cmd, true)
}

// executor is kubectl's (v1.30+): WebSocket first, SPDY when the upgrade is
// refused (an older API server, a proxy that does not pass WebSockets).
func (r *Runner) executor(argv []string, stdin bool) (remotecommand.Executor, error) {
	u := r.c.client.CoreV1().RESTClient().Post().
		Namespace(r.pod.Namespace).Resource("pods").Name(r.pod.Name).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{
			Container: r.pod.Container, Command: argv,
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
	return remotecommand.NewFallbackExecutor(ws, spdy, func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	})
}

func (r *Runner) start(ctx context.Context, cmd string, background bool) (*process, error) {
	startTime := time.Now()
	fail := func(err error) (*process, error) {
		err = fmt.Errorf("%s: %q: %w", r.name, cmd, err)
		r.c.log.Record(remote.Result{Target: r.name, Cmd: cmd, ExitCode: -1}, startTime, false, background, err)
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return fail(fmt.Errorf("not started: %w", err))
	}
	w := remote.Wrap(cmd, r.c.grace)
	ex, err := r.executor([]string{"sh", "-c", w.Line}, true)
	if err != nil {
		return fail(err)
	}
	stdinR, stdinW := io.Pipe()
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	p := &process{
		r: r, ctx: ctx, cmd: cmd, background: background, start: startTime,
		w: w, stdin: stdinW, cancelStream: cancel,
		stopReq: make(chan struct{}), done: make(chan struct{}), exited: make(chan error, 1),
	}
	go func() {
		p.exited <- ex.StreamWithContext(sctx, remotecommand.StreamOptions{Stdin: stdinR, Stdout: &p.stdout, Stderr: w.Stderr()})
		stdinR.Close()
	}()
	go p.supervise()
	return p, nil
}

// signalGroup sends signal to a process group in the container through an
// exec of its own, waiting at most the kill grace.
func (r *Runner) signalGroup(pgid int, signal string) error {
	ctx, cancel := context.WithTimeout(context.Background(), r.c.grace)
	defer cancel()
	start := time.Now()
	line := remote.KillLine(pgid, signal)
	var out remote.Output
	ex, err := r.executor([]string{"sh", "-c", line}, false)
	if err == nil {
		err = ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &out, Stderr: &out})
	}
	res := remote.Result{Target: r.name, Cmd: line, Stdout: out.Bytes(), Duration: time.Since(start)}
	res.ExitCode = exitOf(err)
	if err != nil && res.ExitCode == -1 {
		err = fmt.Errorf("%s: sending %s to process group %d: %w", r.name, signal, pgid, err)
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

// process is one command started by Runner.
type process struct {
	r          *Runner
	ctx        context.Context
	cmd        string
	background bool
	start      time.Time

	w            *remote.Wrapped
	stdout       remote.Output
	stdin        *io.PipeWriter
	cancelStream context.CancelFunc

	stopOnce sync.Once
	stopReq  chan struct{}
	exited   chan error // the stream's result

	done chan struct{}
	res  remote.Result
	err  error
}

func (p *process) Wait() (remote.Result, error) {
	<-p.done
	return p.res, p.err
}

func (p *process) Stop() (remote.Result, error) {
	p.stopOnce.Do(func() { close(p.stopReq) })
	return p.Wait()
}

func (p *process) supervise() {
	var streamErr error
	var why error // non-nil when stopped because the context ended
	var notes []string
	select {
	case streamErr = <-p.exited:
	case <-p.ctx.Done():
		why = context.Cause(p.ctx)
		streamErr, notes = p.kill()
	case <-p.stopReq:
		streamErr, notes = p.kill()
	}
	p.stdin.Close()
	p.cancelStream()

	res := remote.Result{
		Target: p.r.name, Cmd: p.cmd,
		Stdout: p.stdout.Bytes(), Stderr: p.w.StderrBytes(),
		Duration: time.Since(p.start), ExitCode: exitOf(streamErr),
	}
	var err error
	switch {
	case why != nil:
		res.ExitCode = -1
		err = fmt.Errorf("%s: %q stopped: %w", p.r.name, p.cmd, why)
	case res.ExitCode == -1:
		err = fmt.Errorf("%s: %q: no exit status: %w", p.r.name, p.cmd, streamErr)
	}
	if len(notes) > 0 {
		se := &remote.StopError{Notes: notes}
		if err != nil {
			err = fmt.Errorf("%w (%w)", err, se)
		} else {
			err = fmt.Errorf("%s: %q: %w", p.r.name, p.cmd, se)
		}
	}
	p.res, p.err = res, err
	p.r.c.log.Record(res, p.start, false, p.background, err)
	close(p.done)
}

// kill stops the command: TERM to its process group (an exec of its own) and
// the end of its stdin (the watchdog's TERM); KILL when it has not ended a
// grace period later; the stream is dropped when even that is not answered.
func (p *process) kill() (error, []string) {
	var notes []string
	grace := p.r.c.grace
	pgid, ok := p.w.PGID()
	if !ok {
		idWait := time.NewTimer(grace)
		select {
		case <-p.w.PGIDReady():
			pgid, ok = p.w.PGID()
		case err := <-p.exited:
			idWait.Stop()
			return err, nil
		case <-idWait.C:
			notes = append(notes, "the process group id was not reported within the grace period; relying on the watchdog in the container")
		}
		idWait.Stop()
	}
	if ok {
		if err := p.r.signalGroup(pgid, "TERM"); err != nil {
			notes = append(notes, err.Error())
		}
	}
	p.stdin.Close()
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case err := <-p.exited:
		return err, notes
	case <-t.C:
	}
	if ok {
		if err := p.r.signalGroup(pgid, "KILL"); err != nil {
			notes = append(notes, err.Error())
		}
	}
	t.Reset(grace)
	select {
	case err := <-p.exited:
		return err, notes
	case <-t.C:
	}
	notes = append(notes, fmt.Sprintf("the exec stream did not end within %s after KILL; dropped it (the watchdog in the container ends the command when its stdin closes)", grace))
	p.cancelStream()
	return errNoExit, notes
}

var errNoExit = errors.New("no exit status: the exec stream was dropped")
