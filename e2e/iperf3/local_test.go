package iperf3

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/remote"
)

// localRunner is a tiny remote.Runner that runs `sh -c CMD` on this machine,
// each command in its own process group so that Stop/cancel end iperf3 and
// anything it started.
type localRunner struct{}

func (localRunner) Name() string { return "local" }

func (localRunner) command(ctx context.Context, cmd string) (*exec.Cmd, *bytes.Buffer, *bytes.Buffer) {
	c := exec.CommandContext(ctx, "sh", "-c", cmd)
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	c.Cancel = func() error { return syscall.Kill(-c.Process.Pid, syscall.SIGTERM) }
	c.WaitDelay = 5 * time.Second // then os/exec kills the shell (last resort, not a sync sleep)
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	return c, &out, &errb
}

func result(cmd string, c *exec.Cmd, out, errb *bytes.Buffer, start time.Time, err error) (remote.Result, error) {
	r := remote.Result{Target: "local", Cmd: cmd, Stdout: out.Bytes(), Stderr: errb.Bytes(), Duration: time.Since(start)}
	var xe *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &xe) && xe.Exited():
		r.ExitCode = xe.ExitCode()
		err = nil
	default:
		r.ExitCode = -1
	}
	return r, err
}

func (l localRunner) Run(ctx context.Context, cmd string) (remote.Result, error) {
	c, out, errb := l.command(ctx, cmd)
	start := time.Now()
	err := c.Run()
	if ctx.Err() != nil {
		err = ctx.Err()
	}
	return result(cmd, c, out, errb, start, err)
}

type localProc struct {
	cmd  string
	c    *exec.Cmd
	done chan struct{}
	res  remote.Result
	err  error
}

func (l localRunner) Start(ctx context.Context, cmd string) (remote.Process, error) {
	c, out, errb := l.command(ctx, cmd)
	start := time.Now()
	if err := c.Start(); err != nil {
		return nil, err
	}
	p := &localProc{cmd: cmd, c: c, done: make(chan struct{})}
	go func() {
		err := c.Wait()
		p.res, p.err = result(cmd, c, out, errb, start, err)
		if p.err != nil && p.res.ExitCode == -1 {
			p.err = nil // killed by Stop/cancel: reported as exit -1, like remote
		}
		close(p.done)
	}()
	return p, nil
}

func (p *localProc) Wait() (remote.Result, error) { <-p.done; return p.res, p.err }

func (p *localProc) Stop() (remote.Result, error) {
	_ = syscall.Kill(-p.c.Process.Pid, syscall.SIGTERM)
	return p.Wait()
}

// freePorts finds n consecutive free TCP ports on 127.0.0.1.
func freePorts(t *testing.T, n int) int {
	for base := 40000 + int(time.Now().UnixNano()%10000); base < 60000; base += n {
		ok := true
		var ls []net.Listener
		for i := 0; i < n && ok; i++ {
			l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", base+i))
			if err != nil {
				ok = false
				break
			}
			ls = append(ls, l)
		}
		for _, l := range ls {
			l.Close()
		}
		if ok {
			return base
		}
	}
	t.Fatal("no free ports")
	return 0
}

// TestRunLocalIperf3 runs the real iperf3 on loopback for 2 seconds: the TCP
// 1-stream profile, and a UDP 500M profile split over two processes.
func TestRunLocalIperf3(t *testing.T) {
	if _, err := exec.LookPath("iperf3"); err != nil {
		t.Skip("iperf3 is not installed on this machine (apt-get install iperf3): the real local run cannot happen")
	}
	if _, err := exec.LookPath("ss"); err != nil {
		if _, err := exec.LookPath("netstat"); err != nil {
			t.Skip("neither ss nor netstat is installed: the runner cannot see the servers listen")
		}
	}
	for _, tc := range []struct {
		id       string
		perProc  int
		wantProc int
	}{{"tcp-p1", 0, 1}, {"udp-500m-p15", 8, 2}} {
		t.Run(tc.id, func(t *testing.T) {
			p, _ := Lookup(tc.id)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			m, err := Run(ctx, RunInput{
				Server: localRunner{}, Client: localRunner{}, ServerAddr: "127.0.0.1", Profile: p,
				Duration: 2 * time.Second, BasePort: freePorts(t, 2), MaxStreamsPerProcess: tc.perProc,
				ListenTimeout: 30 * time.Second, ListenPoll: 50 * time.Millisecond,
				StallTimeout: 5 * time.Second, UDPSetupRetries: 2, UDPSetupBackoff: time.Second, // guards on a healthy run change nothing
			})
			if err != nil {
				t.Fatalf("Run: %v\nprocesses: %+v", err, m.Processes)
			}
			r := m.Result
			if len(m.Processes) != tc.wantProc || r.Processes != tc.wantProc || r.Streams != p.Streams || r.Protocol != p.Protocol {
				t.Errorf("processes %d/%d streams %d protocol %s", len(m.Processes), r.Processes, r.Streams, r.Protocol)
			}
			if r.OfferedBps <= 0 || r.DeliveredBps <= 0 || r.DeliveredBps > r.OfferedBps*1.01 || r.RequestedSeconds != 2 {
				t.Errorf("offered %v delivered %v requested %v", r.OfferedBps, r.DeliveredBps, r.RequestedSeconds)
			}
			if p.Protocol == UDP && (r.ReceiverPackets <= 0 || len(r.ReceiverIntervals) == 0 || r.OfferedBps > float64(p.OfferedCapBps())*1.05) {
				t.Errorf("UDP: receiver packets %d, receiver intervals %d, offered %v over cap %d", r.ReceiverPackets, len(r.ReceiverIntervals), r.OfferedBps, p.OfferedCapBps())
			}
			for _, pr := range m.Processes {
				if len(pr.ServerJSON) == 0 || pr.ServerExit != 0 {
					t.Errorf("server on %d: exit %d, %d bytes of JSON, stderr %s", pr.Port, pr.ServerExit, len(pr.ServerJSON), pr.ServerStderr)
				}
			}
			t.Logf("%s: iperf3 %s, %d process(es), offered %.3g bit/s, delivered %.3g bit/s, loss %.4g %%, retransmits %d",
				tc.id, m.ClientVersion, len(m.Processes), r.OfferedBps, r.DeliveredBps, r.LossPercent, r.Retransmits)
		})
	}
}

// stoppableServers is localRunner that keeps the servers it starts, so a
// test can freeze them (SIGSTOP to the process group it created, nothing
// else) the way a dead peer stops answering.
type stoppableServers struct {
	localRunner
	mu    sync.Mutex
	procs []*localProc
}

func (s *stoppableServers) Start(ctx context.Context, cmd string) (remote.Process, error) {
	p, err := s.localRunner.Start(ctx, cmd)
	if err == nil {
		s.mu.Lock()
		s.procs = append(s.procs, p.(*localProc))
		s.mu.Unlock()
	}
	return p, err
}

func (s *stoppableServers) signal(sig syscall.Signal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.procs {
		_ = syscall.Kill(-p.c.Process.Pid, sig)
	}
}

// TestRunLocalIperf3GuardEndsStalledRun: the real iperf3 on loopback, a TCP
// run whose server is frozen (SIGSTOP) a second into a 30-second test. The
// client's --snd-timeout (TCP_USER_TIMEOUT) ends it with iperf3's own error
// within seconds — not at the harness's bound of -t + -O + the listen
// timeout (50 s here), and not minutes later when the kernel's
// retransmissions would give up (zero-window probes of a frozen peer are
// answered, so without the guard the client waits for the bound).
func TestRunLocalIperf3GuardEndsStalledRun(t *testing.T) {
	if _, err := exec.LookPath("iperf3"); err != nil {
		t.Skip("iperf3 is not installed on this machine (apt-get install iperf3): the real local run cannot happen")
	}
	if _, err := exec.LookPath("ss"); err != nil {
		t.Skip("ss is not installed: the runner cannot see the server listen")
	}
	v, err := remoteVersion(context.Background(), localRunner{})
	if err != nil || !v.AtLeast(SndTimeoutSince) {
		t.Skipf("iperf3 %s has no --snd-timeout (%v)", v, err)
	}
	p, _ := Lookup("tcp-p1")
	srv := &stoppableServers{}
	const stall = 2 * time.Second
	var clientsAt time.Time
	var freeze *time.Timer
	in := RunInput{
		Server: srv, Client: localRunner{}, ServerAddr: "127.0.0.1", Profile: p,
		Duration: 30 * time.Second, BasePort: freePorts(t, 1),
		ListenTimeout: 20 * time.Second, ListenPoll: 50 * time.Millisecond, StallTimeout: stall,
		ClientsStarting: func(at time.Time) {
			clientsAt = at
			freeze = time.AfterFunc(time.Second, func() { srv.signal(syscall.SIGSTOP) })
		},
		// thaw before Run stops the servers: a frozen process keeps SIGTERM pending
		ClientsDone: func(time.Time) {
			freeze.Stop()
			srv.signal(syscall.SIGCONT)
		},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	m, err := Run(ctx, in)
	took := time.Since(clientsAt)
	var ie *IperfError
	var be *remote.BoundError
	if !errors.As(err, &ie) || errors.As(err, &be) || !strings.Contains(ie.Message, "Connection timed out") {
		t.Fatalf("want iperf3's own error (unacknowledged data timed out), got: %v\nclient: %s", err, m.Processes[0].ClientCmd)
	}
	// frozen at 1 s; the socket buffers fill, then 2 s of unacknowledged data
	if took > 15*time.Second {
		t.Errorf("the guard took %s from the clients' start (frozen after 1 s, stall %s, bound %s)", took, stall, in.Duration+in.ListenTimeout)
	}
	if !strings.Contains(m.Processes[0].ClientCmd, "--snd-timeout 2000") || !strings.Contains(m.Processes[0].ServerCmd, "--rcv-timeout 2000") {
		t.Errorf("commands lack the guards:\n%s\n%s", m.Processes[0].ClientCmd, m.Processes[0].ServerCmd)
	}
	t.Logf("iperf3 %s ended the stalled run %s after the clients started: %v", v, took.Round(time.Millisecond), ie)
}
