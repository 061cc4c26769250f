package remote

import (
	"bufio"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/mosk-qa/asap2-e2e/e2e/wait"
)

const sshdPath = "/usr/sbin/sshd" // Debian package openssh-server

// startOpenSSH runs the real OpenSSH sshd on 127.0.0.1 with a random high
// port, a fresh host key and an authorized_keys file holding clientPub. The
// test owns the process and kills it (by pid) at cleanup.
func startOpenSSH(t *testing.T, dir string, clientPub ssh.PublicKey) (port int, hostKey ssh.PublicKey, listener int) {
	t.Helper()
	if _, err := os.Stat(sshdPath); err != nil {
		t.Skipf("real-OpenSSH test skipped: %s is absent (install the Debian package openssh-server to run it)", sshdPath)
	}
	if os.Geteuid() != 0 {
		t.Skip("real-OpenSSH test skipped: sshd must run as root to log users in (run the tests as root)")
	}
	// sshd refuses to start without its privilege separation user, which the package's
	// postinst creates: an sshd binary without it is a package still being installed.
	if err := exec.Command("id", "sshd").Run(); err != nil {
		t.Skipf("real-OpenSSH test skipped: %s is present but its privilege separation user sshd is not (openssh-server not fully installed)", sshdPath)
	}
	// sshd refuses to start without its privilege separation directory.
	if err := os.MkdirAll("/run/sshd", 0o755); err != nil {
		t.Fatalf("creating /run/sshd: %v", err)
	}
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	hostKeyFile := filepath.Join(dir, "ssh_host_ed25519_key")
	if err := os.WriteFile(hostKeyFile, pem.EncodeToMemory(block), 0o600); err != nil {
		t.Fatal(err)
	}
	authKeys := filepath.Join(dir, "authorized_keys")
	if err := os.WriteFile(authKeys, ssh.MarshalAuthorizedKey(clientPub), 0o600); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port = ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	conf := filepath.Join(dir, "sshd_config")
	cfg := fmt.Sprintf(`Port %d
ListenAddress 127.0.0.1
HostKey %s
PidFile none
AuthorizedKeysFile %s
StrictModes no
UsePAM no
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
AllowTcpForwarding yes
MaxSessions 2
LogLevel VERBOSE
`, port, hostKeyFile, authKeys)
	if err := os.WriteFile(conf, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(sshdPath, "-D", "-e", "-f", conf)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting sshd: %v", err)
	}
	var logMu strings.Builder
	listening := make(chan struct{})
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		sc := bufio.NewScanner(stderr)
		once := false
		for sc.Scan() {
			logMu.WriteString(sc.Text() + "\n")
			if !once && strings.Contains(sc.Text(), "Server listening on") {
				once = true
				close(listening)
			}
		}
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		<-readerDone
		if t.Failed() {
			t.Logf("sshd log:\n%s", logMu.String())
		}
	})
	select {
	case <-listening:
	case <-readerDone:
		t.Fatalf("sshd exited before listening")
	case <-time.After(testBound):
		t.Fatalf("sshd did not report listening")
	}
	return port, signerOf(t, priv).PublicKey(), cmd.Process.Pid
}

func TestOpenSSHRealServer(t *testing.T) {
	e := newEnv(t)
	port, hostKey, listener := startOpenSSH(t, e.dir, e.pub)
	hop := Hop{Address: "127.0.0.1", Port: port, User: "root"}
	o := DialOptions{Name: "openssh", Target: hop, Auth: Auth{KeyFile: e.keyFile}, HostKeys: e.hk, Log: e.log,
		ConnectTimeout: testBound, KillGrace: 2 * time.Second,
		// sshd answers keepalive@openssh.com with a failure reply, which counts as alive.
		KeepAlive: wait.Interval{Timeout: testBound, Poll: 50 * time.Millisecond}}
	t0 := time.Now()
	c := e.dial(t, o)
	t.Logf("dial took %s", time.Since(t0))
	ctx := context.Background()
	t.Cleanup(func() {
		if t.Failed() {
			b, _ := os.ReadFile(e.logPath)
			t.Logf("command log:\n%s", b)
		}
	})

	if s := e.hk.Seen(); len(s) != 1 || s[0].Fingerprint != ssh.FingerprintSHA256(hostKey) || !s[0].Recorded {
		t.Errorf("TOFU did not record sshd's key %s: %+v", ssh.FingerprintSHA256(hostKey), s)
	}

	res, err := c.Run(ctx, `printf 'out\n'; printf 'err\n' >&2; exit 5`)
	if err != nil || string(res.Stdout) != "out\n" || string(res.Stderr) != "err\n" || res.ExitCode != 5 {
		t.Fatalf("Run = stdout %q stderr %q exit %d err %v", res.Stdout, res.Stderr, res.ExitCode, err)
	}

	t.Run("cancel kills the process group", func(t *testing.T) {
		dir := t.TempDir()
		cctx, cancel := context.WithCancel(ctx)
		p, pid, gone := startWithPID(t, c, cctx, dir)
		cancel()
		res, err := p.Wait()
		if !errors.Is(err, context.Canceled) || res.ExitCode != -1 {
			t.Errorf("Wait after cancel = exit %d, %v", res.ExitCode, err)
		}
		expectGone(t, pid, gone, "under OpenSSH after cancel")
	})

	t.Run("stop delivers TERM", func(t *testing.T) {
		so := o
		so.KillGrace = testBound // the TERM path is under test; KILL must not win a race on a loaded machine
		c := e.dial(t, so)
		dir := t.TempDir()
		fifo := filepath.Join(dir, "ready.fifo")
		if err := mkfifo(fifo); err != nil {
			t.Fatal(err)
		}
		// sleep 0.1, not 3600: see TestStopTermsGroupAndReturnsOutput.
		p, err := c.Start(ctx, `trap 'echo summary; exit 0' TERM; echo ready > `+fifo+`; while :; do sleep 0.1; done`)
		if err != nil {
			t.Fatal(err)
		}
		if data, err := os.ReadFile(fifo); err != nil || string(data) != "ready\n" {
			t.Fatalf("fifo: %q %v", data, err)
		}
		res, err := p.Stop()
		if err != nil || res.ExitCode != 0 || string(res.Stdout) != "summary\n" {
			t.Errorf("Stop = exit %d stdout %q err %v", res.ExitCode, res.Stdout, err)
		}
	})

	t.Run("jump through sshd to itself", func(t *testing.T) {
		jo := o
		jo.Jumps = []Hop{hop}
		jc := e.dial(t, jo)
		res, err := jc.Run(ctx, "echo hopped")
		if err != nil || string(res.Stdout) != "hopped\n" {
			t.Errorf("Run via OpenSSH jump = %q %v", res.Stdout, err)
		}
	})

	t.Run("session limit opens another connection", func(t *testing.T) {
		dir := t.TempDir()
		lo := o
		// Each Stop's TERM needs a session of its own while the connection is full; on a
		// loaded machine opening it takes longer than a short grace, and KILL must not win.
		lo.KillGrace = testBound
		lc := e.dial(t, lo)
		var procs []Process
		for i := 0; i < 3; i++ { // MaxSessions 2 in the sshd config above
			fifo := filepath.Join(dir, fmt.Sprintf("ready%d", i))
			if err := mkfifo(fifo); err != nil {
				t.Fatal(err)
			}
			p, err := lc.Start(ctx, "echo up > "+fifo+"; exec sleep 3600")
			if err != nil {
				t.Fatalf("Start %d beyond MaxSessions: %v", i, err)
			}
			procs = append(procs, p)
			if data, err := os.ReadFile(fifo); err != nil || string(data) != "up\n" {
				t.Fatalf("command %d: %q %v", i, data, err)
			}
		}
		for i, p := range procs {
			if res, err := p.Stop(); err != nil || res.Signal != "TERM" {
				t.Errorf("Stop %d = exit %d signal %q err %v", i, res.ExitCode, res.Signal, err)
			}
		}
	})

	if c.Lost() != nil {
		t.Errorf("keepalive gave up on a healthy sshd connection: %v", c.Lost())
	}

	// Issue 14: a hypervisor whose sshd stops answering (SIGSTOP, as the
	// fault matrix does on the lab) must fail a bounded command at its
	// bound, not when the keepalive gives the connection up; the command is
	// stopped by its watchdog once sshd runs again.
	t.Run("frozen sshd: the bound returns without the keepalive", func(t *testing.T) {
		fo := o
		fo.KillGrace = time.Second
		fo.KeepAlive = wait.Interval{Timeout: 10 * time.Minute, Poll: time.Minute} // never the way out here
		before := sshdDescendants(listener)
		fc := e.dial(t, fo)
		dir := t.TempDir()
		type ran struct {
			err     error
			elapsed time.Duration
		}
		// The bound counts from the session's opening. Each attempt proves something
		// only if sshd is frozen before the bound runs out: else the TERM's session may
		// open first and the freeze lands in the middle of the stop. On a loaded machine
		// the command may not reach its first line, or the test may not freeze sshd,
		// within a short bound: such an attempt is let finish and a longer bound tried.
		var (
			bound   time.Duration
			done    chan ran
			pid     int
			mine    map[int]bool
			resumed bool
		)
		resume := func() {
			if !resumed {
				resumed = true
				for p := range mine {
					syscall.Kill(p, syscall.SIGCONT)
				}
			}
		}
		t.Cleanup(func() { resume() }) // before the first SIGSTOP: a failing test must not leave a stopped sshd
		for attempt, b := range []time.Duration{2 * time.Second, 8 * time.Second, 30 * time.Second} {
			bound, pid = b, 0
			pidFIFO := filepath.Join(dir, fmt.Sprintf("pid%d.fifo", attempt))
			if err := mkfifo(pidFIFO); err != nil {
				t.Fatal(err)
			}
			d, st := make(chan ran, 1), time.Now()
			done = d
			go func() {
				_, err := Bounded(fc, b, "the test's bound").Run(ctx, "sleep 3600 & echo $! > "+pidFIFO+"; wait")
				d <- ran{err, time.Since(st)}
			}()
			line, early, err := readFIFOUnless(pidFIFO, done)
			if err != nil {
				t.Fatal(err)
			}
			if early != nil {
				t.Logf("bound %s ran out before sshd could be frozen (pid %q): trying a longer one; this attempt: %v", bound, strings.TrimSpace(line), early.err)
				continue
			}
			if pid, err = strconv.Atoi(strings.TrimSpace(line)); err != nil {
				t.Fatalf("pid %q: %v", line, err)
			}
			// The sshd processes of this connection, read while its command
			// runs: the authentication child has ended by now.
			mine, resumed = sshdDescendants(listener), false
			for p := range before {
				delete(mine, p)
			}
			for p := range mine {
				if err := syscall.Kill(p, syscall.SIGSTOP); err != nil {
					delete(mine, p) // the authentication child, ended since the listing
				}
			}
			if len(mine) == 0 {
				t.Fatal("found no sshd process serving the new connection")
			}
			if frozen := time.Since(st); frozen >= bound {
				resume()
				r := <-done
				t.Logf("sshd frozen %s after the command's start, not within its bound %s (the stop may have begun): trying a longer one; this attempt: %v",
					frozen.Round(time.Millisecond), bound, r.err)
				expectGone(t, pid, gone(pid), "after an attempt that froze sshd too late")
				pid = 0
				continue
			}
			break
		}
		if pid == 0 {
			t.Fatalf("no attempt froze sshd within the command's bound (last bound %s)", bound)
		}
		var r ran
		select {
		case r = <-done:
		case <-time.After(time.Minute):
			resume()
			t.Fatalf("a bounded command on a frozen sshd had not returned after a minute (bound %s, kill grace %s)", bound, fo.KillGrace)
		}
		var be *BoundError
		if !errors.As(r.err, &be) || !strings.Contains(be.Stop, "did not open a session") {
			t.Errorf("err = %v, want a BoundError saying the server did not open the kill's session", r.err)
		}
		if !strings.Contains(r.err.Error(), "could not be killed") || strings.Contains(r.err.Error(), "and was killed") {
			t.Errorf("the message claims a kill it could not make: %v", r.err)
		}
		// bound + one kill grace for the TERM's session, with room for a
		// loaded machine; the keepalive (10 min) is far beyond it.
		if r.elapsed > bound+fo.KillGrace+20*time.Second {
			t.Errorf("returned after %s: the bound is %s and the kill grace %s", r.elapsed.Round(time.Millisecond), bound, fo.KillGrace)
		}
		t.Logf("frozen sshd: returned after %s: %v", r.elapsed.Round(time.Millisecond), r.err)
		if !alive(pid) {
			t.Fatalf("remote sleep %d ended while sshd was frozen: the test froze the wrong processes", pid)
		}
		resume()
		expectGone(t, pid, gone(pid), "after the frozen sshd ran again")
	})

	t.Run("dropped connection", func(t *testing.T) {
		dc := e.dial(t, o)
		p, pid, gone := startWithPID(t, dc, ctx, t.TempDir())
		dc.Close()
		expectGone(t, pid, gone, "under OpenSSH after the connection dropped")
		if _, err := p.Wait(); err == nil {
			t.Error("Wait after a dropped connection returned no error")
		}
	})
}

// readFIFOUnless reads one line from the FIFO at path, unless done delivers
// first (the command that was to write it ended, having written it or not):
// then it opens the FIFO's other end itself so that the blocked reader
// returns, and hands back what done delivered, with the line if there was
// one. What done delivered is never dropped: a caller that was told of a
// line only would wait on done for a value already taken (the frozen-sshd
// test hung until go test's timeout on a loaded machine).
func readFIFOUnless[T any](path string, done <-chan T) (string, *T, error) {
	type read struct {
		line string
		err  error
	}
	got := make(chan read, 1)
	go func() {
		data, err := os.ReadFile(path)
		got <- read{string(data), err}
	}()
	select {
	case r := <-got:
		return r.line, nil, r.err
	case v := <-done:
		// The reader must be let go without a writer of ours blocking: when
		// both were ready (a loaded machine let the bound run out after the
		// command wrote its pid), select picks either, and a blocking open
		// for writing then waits forever for a reader that has finished —
		// the test hung until go test's timeout. A non-blocking open
		// succeeds only while the reader has the FIFO open (also while it
		// waits in its own open), and fails (ENXIO) before or after; so try
		// until it succeeds or the reader is done.
		for {
			select {
			case r := <-got:
				// The line, if the command wrote it just before it ended.
				return r.line, &v, r.err
			default:
			}
			if w, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
				w.Close()
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// gone is closed when the local process pid has ended.
func gone(pid int) <-chan struct{} {
	c := make(chan struct{})
	go func() {
		for alive(pid) {
			time.Sleep(20 * time.Millisecond)
		}
		close(c)
	}()
	return c
}

// sshdDescendants is every sshd process below pid (an sshd listener forks
// a monitor per connection, and that a child for the session).
func sshdDescendants(pid int) map[int]bool {
	parent := map[int]int{}
	comm := map[int]string{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(data)
		open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || end < open {
			continue
		}
		f := strings.Fields(s[end+1:])
		if len(f) < 2 {
			continue
		}
		pp, _ := strconv.Atoi(f[1])
		parent[p], comm[p] = pp, s[open+1:end]
	}
	out := map[int]bool{}
	for p := range parent {
		for q := parent[p]; q > 1; q = parent[q] {
			if q == pid {
				if comm[p] == "sshd" {
					out[p] = true
				}
				break
			}
		}
	}
	return out
}
