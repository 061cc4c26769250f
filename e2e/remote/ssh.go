package remote

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"

	"github.com/mosk-qa/asap2-e2e/e2e/wait"
)

// Defaults for DialOptions fields left zero.
const (
	// DefaultConnectTimeout bounds one TCP connect plus SSH handshake of one hop.
	DefaultConnectTimeout = 20 * time.Second
	// DefaultKillGrace is how long a stopped command gets between TERM and KILL.
	DefaultKillGrace = 5 * time.Second
)

// DefaultKeepAlive is what NewDialer sets: a probe every 15 s, and the
// connection is given up when one is unanswered for 60 s.
var DefaultKeepAlive = wait.Interval{Timeout: 60 * time.Second, Poll: 15 * time.Second}

func logWarn(msg string) { log.Print(msg) }

// Hop is one SSH server on the way to (or being) the target.
type Hop struct {
	Address string // host or IP
	Port    int    // 0 = 22
	User    string
}

func (h Hop) addr() string {
	port := h.Port
	if port == 0 {
		port = 22
	}
	return net.JoinHostPort(h.Address, strconv.Itoa(port))
}

func (h Hop) String() string { return h.User + "@" + h.addr() }

// Auth says how the client authenticates. Both may be set: the key file is
// offered first, then the agent's keys.
type Auth struct {
	// KeyFile is an unencrypted private key (OpenSSH, PEM or PKCS#8).
	// Passphrase-protected keys belong in the agent.
	KeyFile string
	// Agent uses the SSH agent at AgentSocket, or $SSH_AUTH_SOCK when empty.
	Agent       bool
	AgentSocket string
}

// DialOptions configures Dial.
type DialOptions struct {
	// Name identifies the target in logs, errors and Result.Target, e.g.
	// "guest server-a (198.18.20.5)". Default: user@host:port.
	Name   string
	Target Hop
	// Jumps are the jump hosts, the first dialled directly, each next one
	// through the previous, the target through the last.
	Jumps    []Hop
	Auth     Auth
	HostKeys *HostKeys // required
	// Log receives every command run through the client; nil = no log.
	Log *CommandLog
	// Sudo runs every command as `sudo -n` (hypervisors with a non-root user).
	Sudo bool
	// Ready is the retry loop while the target boots: attempts until
	// Ready.Timeout, Ready.Poll apart (normally the "ssh_ready" interval).
	// A zero Timeout means one attempt. A refused host key is never retried.
	Ready wait.Interval
	// ConnectTimeout bounds one connect + handshake per hop; 0 = DefaultConnectTimeout.
	ConnectTimeout time.Duration
	// KillGrace is the time between TERM and KILL when a command is stopped;
	// 0 = DefaultKillGrace.
	KillGrace time.Duration
	// KeepAlive probes the target every KeepAlive.Poll and closes the
	// connection when no answer came within KeepAlive.Timeout, so commands on
	// a host that vanished fail instead of hanging. Zero Poll = no probes.
	KeepAlive wait.Interval

	// dialTCP, when set, makes the first hop's TCP connection instead of
	// net.Dialer (the package's tests: a connection made outside the
	// bound, so that the handshake's bound alone is under test).
	dialTCP func(ctx context.Context, addr string) (net.Conn, error)
}

// Client is an SSH connection to one target (through its jump hosts). It
// implements Runner and is safe for concurrent use.
type Client struct {
	name     string
	target   Hop
	log      *CommandLog
	sudo     bool
	grace    time.Duration
	timeout  time.Duration
	hostKeys *HostKeys

	opts  DialOptions   // for extra connections to the target
	conns []*ssh.Client // jump hosts first, target last

	extraMu sync.Mutex
	extra   []*ssh.Client // more connections to the target, once its MaxSessions is reached

	closeOnce sync.Once
	closed    chan struct{}
	mu        sync.Mutex
	lost      error // why keepalive closed the connection
}

var _ Runner = (*Client)(nil)

// Dial connects to the target through its jump hosts, retrying until
// o.Ready.Timeout while the target is not reachable yet.
func Dial(ctx context.Context, o DialOptions) (*Client, error) {
	if o.HostKeys == nil {
		return nil, fmt.Errorf("ssh dial %s: no host key policy given", o.Target)
	}
	if o.Target.Address == "" || o.Target.User == "" {
		return nil, fmt.Errorf("ssh dial: target needs address and user, got %q", o.Target.String())
	}
	for i, j := range o.Jumps {
		if j.Address == "" || j.User == "" {
			return nil, fmt.Errorf("ssh dial %s: jump host %d needs address and user, got %q", o.Target, i+1, j.String())
		}
	}
	if o.Ready.Timeout > 0 && o.Ready.Poll <= 0 {
		return nil, fmt.Errorf("ssh dial %s: ready interval needs a poll > 0, got %s", o.Target, o.Ready.Poll)
	}
	if o.KeepAlive.Poll > 0 && o.KeepAlive.Timeout <= 0 {
		return nil, fmt.Errorf("ssh dial %s: keepalive needs a timeout > 0, got %s", o.Target, o.KeepAlive.Timeout)
	}
	if o.ConnectTimeout <= 0 {
		o.ConnectTimeout = DefaultConnectTimeout
	}
	if o.KillGrace <= 0 {
		o.KillGrace = DefaultKillGrace
	}
	if o.Name == "" {
		o.Name = o.Target.String()
	}
	path := o.Target.String()
	if len(o.Jumps) > 0 {
		var hops []string
		for _, j := range o.Jumps {
			hops = append(hops, j.String())
		}
		path += " via " + strings.Join(hops, " -> ")
	}

	label := o.Name
	if label != path {
		label += " (" + path + ")"
	}

	var conns []*ssh.Client
	var err error
	if o.Ready.Timeout > 0 {
		err = wait.Poll(ctx, o.Ready, "ssh "+label, func(ctx context.Context) (bool, error) {
			var err error
			if conns, err = dialChain(ctx, o); final(err) {
				return false, wait.Stop(err)
			}
			return err == nil, err
		}) // no attempt outlives the ready interval
	} else if conns, err = dialChain(ctx, o); err != nil && !final(err) && ctx.Err() != nil { // one attempt
		err = &wait.PollError{What: "ssh " + label, Attempts: 1, Last: err, Err: ctx.Err()}
	}
	var pe *wait.PollError
	switch {
	case err == nil:
	case !errors.As(err, &pe):
		return nil, fmt.Errorf("ssh %s: %w", label, err)
	case pe.TimedOut:
		return nil, fmt.Errorf("ssh %s: not reachable within %s (%d attempts, every %s): %w",
			label, o.Ready.Timeout, pe.Attempts, o.Ready.Poll, pe.Last)
	default:
		return nil, fmt.Errorf("ssh %s: gave up after %d attempts: %w (last error: %w)", label, pe.Attempts, pe.Err, pe.Last)
	}
	c := &Client{name: o.Name, target: o.Target, log: o.Log, sudo: o.Sudo, grace: o.KillGrace,
		timeout: o.ConnectTimeout, hostKeys: o.HostKeys, opts: o, conns: conns, closed: make(chan struct{})}
	if o.KeepAlive.Poll > 0 {
		go c.keepAlive(o.KeepAlive)
	}
	return c, nil
}

// final tells a dial error no retry can fix: a refused host key or a
// permanent error.
func final(err error) bool {
	var hk *HostKeyError
	return errors.As(err, &hk) || errors.Is(err, errPermanent)
}

// errPermanent marks dial errors a retry cannot fix (unreadable key file...).
var errPermanent = errors.New("permanent")

type permanentError struct{ err error }

func (e permanentError) Error() string        { return e.err.Error() }
func (e permanentError) Unwrap() []error      { return []error{e.err, errPermanent} }
func permanent(format string, a ...any) error { return permanentError{fmt.Errorf(format, a...)} }

// dialChain connects every hop once.
func dialChain(ctx context.Context, o DialOptions) ([]*ssh.Client, error) {
	hops := append(append([]Hop(nil), o.Jumps...), o.Target)
	var conns []*ssh.Client
	for i, hop := range hops {
		var prev *ssh.Client
		var prevHop Hop
		if i > 0 {
			prev, prevHop = conns[i-1], hops[i-1]
		}
		c, err := dialHop(ctx, prev, prevHop, hop, o)
		if err != nil {
			for k := len(conns) - 1; k >= 0; k-- {
				conns[k].Close()
			}
			return nil, err
		}
		conns = append(conns, c)
	}
	return conns, nil
}

// dialHop connects to hop directly (prev == nil) or through prev.
func dialHop(ctx context.Context, prev *ssh.Client, prevHop, hop Hop, o DialOptions) (*ssh.Client, error) {
	cfg, cleanup, err := clientConfig(hop, o)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	hctx, cancel := context.WithTimeout(ctx, o.ConnectTimeout)
	defer cancel()
	var raw net.Conn
	switch {
	case prev != nil:
		raw, err = prev.DialContext(hctx, "tcp", hop.addr())
	case o.dialTCP != nil:
		raw, err = o.dialTCP(hctx, hop.addr())
	default:
		d := net.Dialer{}
		raw, err = d.DialContext(hctx, "tcp", hop.addr())
	}
	if err != nil {
		via := ""
		if prev != nil {
			via = " via " + prevHop.String()
		}
		if hctx.Err() != nil && ctx.Err() == nil {
			err = fmt.Errorf("%w (no connection within %s)", err, o.ConnectTimeout)
		}
		return nil, fmt.Errorf("connecting to %s%s: %w", hop.addr(), via, err)
	}
	// Deadlines are not supported on channels through a jump host, so a
	// stuck handshake is ended by closing the connection.
	stop := context.AfterFunc(hctx, func() { raw.Close() })
	c, chans, reqs, err := ssh.NewClientConn(raw, hop.addr(), cfg)
	stopped := stop()
	if err == nil && !stopped {
		c.Close()
		err = fmt.Errorf("handshake interrupted: %w", context.Cause(hctx))
	}
	if err != nil {
		raw.Close()
		if hctx.Err() != nil && ctx.Err() == nil {
			err = fmt.Errorf("%w (no handshake within %s)", err, o.ConnectTimeout)
		}
		return nil, fmt.Errorf("ssh handshake with %s: %w", hop, err)
	}
	return ssh.NewClient(c, chans, reqs), nil
}

// clientConfig builds the per-hop config; cleanup releases the agent connection.
func clientConfig(hop Hop, o DialOptions) (*ssh.ClientConfig, func(), error) {
	// All keys go into one publickey method: the client tries each method
	// name only once, so a second publickey method would never be used.
	var fileSigner ssh.Signer
	var agentClient agent.ExtendedAgent
	cleanup := func() {}
	if o.Auth.KeyFile != "" {
		pem, err := os.ReadFile(o.Auth.KeyFile)
		if err != nil {
			return nil, cleanup, permanent("reading private key %s: %w", o.Auth.KeyFile, err)
		}
		fileSigner, err = ssh.ParsePrivateKey(pem)
		if err != nil {
			var pm *ssh.PassphraseMissingError
			if errors.As(err, &pm) {
				return nil, cleanup, permanent("private key %s is passphrase-protected: load it into ssh-agent and enable the agent instead", o.Auth.KeyFile)
			}
			return nil, cleanup, permanent("parsing private key %s: %w", o.Auth.KeyFile, err)
		}
	}
	if o.Auth.Agent {
		sock := o.Auth.AgentSocket
		if sock == "" {
			sock = os.Getenv("SSH_AUTH_SOCK")
		}
		if sock == "" {
			return nil, cleanup, permanent("ssh agent requested but SSH_AUTH_SOCK is not set")
		}
		conn, err := net.Dial("unix", sock)
		if err != nil {
			return nil, cleanup, fmt.Errorf("connecting to ssh agent at %s: %w", sock, err)
		}
		cleanup = func() { conn.Close() }
		agentClient = agent.NewClient(conn)
	}
	if fileSigner == nil && agentClient == nil {
		return nil, cleanup, permanent("no SSH authentication configured: set a private key file or enable the agent")
	}
	signers := func() ([]ssh.Signer, error) {
		var out []ssh.Signer
		if fileSigner != nil {
			out = append(out, fileSigner)
		}
		if agentClient != nil {
			s, err := agentClient.Signers()
			if err != nil {
				return nil, fmt.Errorf("listing ssh agent keys: %w", err)
			}
			out = append(out, s...)
		}
		return out, nil
	}
	return &ssh.ClientConfig{
		User:              hop.User,
		Auth:              []ssh.AuthMethod{ssh.PublicKeysCallback(signers)},
		HostKeyCallback:   o.HostKeys.callback(hop.addr()),
		HostKeyAlgorithms: o.HostKeys.algorithms(hop.addr()),
		Timeout:           o.ConnectTimeout,
	}, cleanup, nil
}

// Name identifies the remote side.
func (c *Client) Name() string { return c.name }

// HostKeys is the policy the client was dialled with.
func (c *Client) HostKeys() *HostKeys { return c.hostKeys }

// Close closes the target connection and then the jump host connections.
// Commands still running see a transport error; the remote side stops them
// (see wrap.go).
func (c *Client) Close() error {
	var errs []error
	c.closeOnce.Do(func() {
		close(c.closed)
		c.extraMu.Lock()
		for _, x := range c.extra {
			if err := x.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
				errs = append(errs, err)
			}
		}
		c.extra = nil
		c.extraMu.Unlock()
		for i := len(c.conns) - 1; i >= 0; i-- {
			if err := c.conns[i].Close(); err != nil && !errors.Is(err, net.ErrClosed) {
				errs = append(errs, err)
			}
		}
	})
	if len(errs) > 0 {
		return fmt.Errorf("closing ssh %s: %w", c.name, errors.Join(errs...))
	}
	return nil
}

// Lost returns why the keepalive gave up on the connection, or nil.
func (c *Client) Lost() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lost
}

// keepAlive sends keepalive@openssh.com requests (as ssh's
// ServerAliveInterval does) and closes the client when one goes unanswered.
func (c *Client) keepAlive(iv wait.Interval) {
	tick := time.NewTicker(iv.Poll)
	defer tick.Stop()
	for {
		select {
		case <-c.closed:
			return
		case <-tick.C:
		}
		answered := make(chan error, 1)
		go func() {
			_, _, err := c.conn().SendRequest("keepalive@openssh.com", true, nil)
			answered <- err
		}()
		timer := time.NewTimer(iv.Timeout)
		var err error
		select {
		case <-c.closed:
			timer.Stop()
			return
		case err = <-answered:
			timer.Stop()
		case <-timer.C:
			err = fmt.Errorf("no answer to keepalive within %s", iv.Timeout)
		}
		if err != nil {
			c.mu.Lock()
			c.lost = fmt.Errorf("ssh %s: connection lost: %w", c.name, err)
			c.mu.Unlock()
			c.Close()
			return
		}
	}
}

func (c *Client) conn() *ssh.Client { return c.conns[len(c.conns)-1] }

// newSession opens a session on the target. A server allows only so many
// sessions per connection (OpenSSH MaxSessions, default 10) and refuses
// more; then the session goes to another connection to the target (through
// the same jump hosts), opened on demand.
func (c *Client) newSession(ctx context.Context) (*ssh.Session, error) {
	c.extraMu.Lock()
	targets := append([]*ssh.Client{c.conn()}, c.extra...)
	c.extraMu.Unlock()
	for _, t := range targets {
		s, err := openSession(ctx, t)
		if err == nil {
			return s, nil
		}
		if !sessionLimit(err) {
			return nil, err
		}
	}
	select {
	case <-c.closed:
		return nil, fmt.Errorf("client closed")
	default:
	}
	var prev *ssh.Client
	var prevHop Hop
	if n := len(c.conns); n > 1 {
		prev, prevHop = c.conns[n-2], c.opts.Jumps[len(c.opts.Jumps)-1]
	}
	x, err := dialHop(ctx, prev, prevHop, c.target, c.opts)
	if err != nil {
		return nil, fmt.Errorf("all %d connections are at the server's session limit; another one: %w", len(targets), err)
	}
	c.extraMu.Lock()
	select {
	case <-c.closed:
		c.extraMu.Unlock()
		x.Close()
		return nil, fmt.Errorf("client closed")
	default:
	}
	c.extra = append(c.extra, x)
	c.extraMu.Unlock()
	return openSession(ctx, x)
}

// errNoSession is a server that did not open a session channel before the
// context ended: a peer that stopped answering (its sshd frozen, its host
// gone) keeps the TCP connection up and never replies.
var errNoSession = errors.New("the server did not open a session")

// openSession opens a session on t, or gives up when ctx ends first; x/crypto
// ssh's NewSession takes no context and would wait until the keepalive gave
// the connection up. A session that opens after that is closed at once.
func openSession(ctx context.Context, t *ssh.Client) (*ssh.Session, error) {
	if ctx.Done() == nil {
		return t.NewSession()
	}
	type opened struct {
		s   *ssh.Session
		err error
	}
	ch := make(chan opened, 1)
	go func() {
		s, err := t.NewSession()
		ch <- opened{s, err}
	}()
	select {
	case o := <-ch:
		return o.s, o.err
	case <-ctx.Done():
		go func() {
			if o := <-ch; o.s != nil {
				o.s.Close()
			}
		}()
		return nil, fmt.Errorf("%w: %w", errNoSession, context.Cause(ctx))
	}
}

// sessionLimit reports a refused session channel. OpenSSH refuses one over
// MaxSessions as "connect failed (open failed)"; others say prohibited or
// resource shortage.
func sessionLimit(err error) bool {
	var oce *ssh.OpenChannelError
	if !errors.As(err, &oce) {
		return false
	}
	switch oce.Reason {
	case ssh.Prohibited, ssh.ConnectionFailed, ssh.ResourceShortage:
		return true
	}
	return false
}

// Run runs cmd (a sh command line) to completion or until ctx is cancelled.
func (c *Client) Run(ctx context.Context, cmd string) (Result, error) {
	p, err := c.start(ctx, cmd, false)
	if err != nil {
		return Result{Target: c.name, Cmd: cmd, ExitCode: -1}, err
	}
	return p.Wait()
}

// Start runs cmd in the background; Stop or cancelling ctx stops it.
func (c *Client) Start(ctx context.Context, cmd string) (Process, error) {
	return c.start(ctx, cmd, true)
}

func (c *Client) start(ctx context.Context, cmd string, background bool) (Process, error) {
	startTime := time.Now()
	fail := func(err error) (Process, error) {
		err = fmt.Errorf("%s: %q: %w", c.name, cmd, err)
		c.log.Record(Result{Target: c.name, Cmd: cmd, ExitCode: -1}, startTime, c.sudo, background, err)
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return fail(fmt.Errorf("not started: %w", err))
	}
	sess, err := c.newSession(ctx)
	if err != nil {
		return fail(fmt.Errorf("opening session: %w", err))
	}
	w := wrap(cmd, c.grace, c.sudo)
	var stdout Output
	sess.Stdout = &stdout
	sess.Stderr = w.Stderr()
	stdin, err := sess.StdinPipe()
	if err != nil {
		sess.Close()
		return fail(fmt.Errorf("opening stdin: %w", err))
	}
	if err := sess.Start(w.Line); err != nil {
		sess.Close()
		return fail(fmt.Errorf("starting: %w", err))
	}
	exited := make(chan error, 1)
	go func() { exited <- sess.Wait() }()
	return Supervise(Supervision{
		Ctx: ctx, Target: c.name, Cmd: cmd, Start: startTime, Background: background, Sudo: c.sudo, Log: c.log,
		Wrapped: w, Stdout: &stdout, Exited: exited,
		Transport: &sshTransport{c: c, sess: sess, stdin: stdin},
		Grace:     c.grace, AfterKill: c.timeout,
		NoPGIDNote:     "the remote process group id was not reported within the grace period; relying on the remote watchdog",
		UnansweredNote: "closed the session without an exit status; the remote watchdog stops the command if the server runs again",
		DroppedNote:    "the session did not end within %s after KILL; closed it",
		NoExitErr:      errNoExit,
	}), nil
}

// sshTransport is one command's session, for the supervisor.
type sshTransport struct {
	c     *Client
	sess  *ssh.Session
	stdin io.WriteCloser
}

func (t *sshTransport) Signal(pgid int, signal string) error { return t.c.signalGroup(pgid, signal) }

// Unanswered: the server did not open the signal's session. A KILL would
// meet the same silence, and the session's end would come only with the
// keepalive: the remote watchdog stops the group when the server runs again
// and sees its stdin end.
func (t *sshTransport) Unanswered(err error) bool { return errors.Is(err, errNoSession) }
func (t *sshTransport) EndStdin()                 { t.stdin.Close() }
func (t *sshTransport) Close()                    { t.sess.Close() }
func (t *sshTransport) ExitOf(err error) (int, string) {
	return exitOf(err)
}

func (t *sshTransport) NoExit(waitErr error) error {
	if lost := t.c.Lost(); lost != nil {
		return fmt.Errorf("no exit status: %w", lost)
	}
	return fmt.Errorf("no exit status (connection lost?): %w", waitErr)
}

// signalGroup sends signal to a remote process group over a fresh session.
// It waits at most the kill grace (or the connect timeout, when shorter):
// sending a signal is one short command on a connection that is already up,
// so a server that needs longer is not answering, and errors.Is(err,
// errNoSession) says so.
func (c *Client) signalGroup(pgid int, signal string) error {
	ctx, cancel := context.WithTimeout(context.Background(), min(c.grace, c.timeout))
	defer cancel()
	start := time.Now()
	line := killCommand(pgid, signal, c.sudo)
	sess, err := c.newSession(ctx)
	if err != nil {
		err = fmt.Errorf("%s: sending %s to process group %d: opening session: %w", c.name, signal, pgid, err)
		c.log.Record(Result{Target: c.name, Cmd: line, ExitCode: -1}, start, false, false, err)
		return err
	}
	defer sess.Close()
	var out Output
	sess.Stdout, sess.Stderr = &out, &out
	done := make(chan error, 1)
	go func() { done <- sess.Run(line) }()
	select {
	case err = <-done:
	case <-ctx.Done():
		err = ctx.Err()
	}
	res := Result{Target: c.name, Cmd: line, Stdout: out.Bytes(), Duration: time.Since(start)}
	res.ExitCode, res.Signal = exitOf(err)
	if err != nil {
		err = fmt.Errorf("%s: sending %s to process group %d: %w", c.name, signal, pgid, err)
	}
	c.log.Record(res, start, false, false, err)
	return err
}

// exitOf maps a session error to exit code and signal; -1 = no exit status.
func exitOf(err error) (int, string) {
	if err == nil {
		return 0, ""
	}
	var ee *ssh.ExitError
	if errors.As(err, &ee) {
		if ee.Signal() != "" {
			return -1, ee.Signal()
		}
		return ee.ExitStatus(), ""
	}
	return -1, ""
}

// errNoExit is the result of a command whose session was closed before it
// reported an exit status.
var errNoExit = errors.New("no exit status: the session was closed")
