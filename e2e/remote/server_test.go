package remote

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"encoding/binary"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"

	"golang.org/x/crypto/ssh"
)

// testServer is an in-process SSH server on 127.0.0.1 for the tests. It runs
// "exec" requests with /bin/sh -c (as sshd runs them with the login shell),
// reports exit-status / exit-signal, and, when forwarding is allowed, opens
// direct-tcpip channels (so it can act as a jump host).
type testServer struct {
	t       testing.TB
	ln      net.Listener
	Addr    string // 127.0.0.1:port
	Port    int
	forward bool // accept direct-tcpip
	setsid  bool // start commands as session leaders, as OpenSSH does

	// rejectFirst connections are closed right after accept (a booting host).
	rejectFirst int
	// maxSessions > 0 refuses more open sessions per connection, as OpenSSH's MaxSessions.
	maxSessions int

	mu       sync.Mutex
	signers  []ssh.Signer
	allowed  []ssh.PublicKey
	accepted int
	execs    []string // command lines as received
	forwards []string // direct-tcpip destinations

	wg sync.WaitGroup
}

type serverOption func(*testServer)

func withForwarding() serverOption       { return func(s *testServer) { s.forward = true } }
func withSetsid() serverOption           { return func(s *testServer) { s.setsid = true } }
func withMaxSessions(n int) serverOption { return func(s *testServer) { s.maxSessions = n } }
func withRejectFirst(n int) serverOption { return func(s *testServer) { s.rejectFirst = n } }
func withHostKeys(k ...ssh.Signer) serverOption {
	return func(s *testServer) { s.signers = k }
}

// newTestServer starts a server that accepts the given client keys.
func newTestServer(t testing.TB, clientKeys []ssh.PublicKey, opts ...serverOption) *testServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	s := &testServer{t: t, ln: ln, Addr: ln.Addr().String(), Port: ln.Addr().(*net.TCPAddr).Port,
		allowed: clientKeys}
	for _, o := range opts {
		o(s)
	}
	if len(s.signers) == 0 {
		s.signers = []ssh.Signer{newEd25519Signer(t)}
	}
	s.wg.Add(1)
	go s.serve()
	t.Cleanup(func() {
		ln.Close()
		s.wg.Wait()
	})
	return s
}

// setHostKeys replaces the host keys for new connections (a reinstalled host).
func (s *testServer) setHostKeys(k ...ssh.Signer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.signers = k
}

func (s *testServer) hostKey() ssh.PublicKey {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.signers[0].PublicKey()
}

func (s *testServer) commands() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.execs...)
}

func (s *testServer) forwarded() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.forwards...)
}

func (s *testServer) acceptedConns() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.accepted
}

func (s *testServer) config() *ssh.ServerConfig {
	s.mu.Lock()
	defer s.mu.Unlock()
	cfg := &ssh.ServerConfig{
		PublicKeyCallback: func(_ ssh.ConnMetadata, key ssh.PublicKey) (*ssh.Permissions, error) {
			s.mu.Lock()
			defer s.mu.Unlock()
			for _, k := range s.allowed {
				if string(k.Marshal()) == string(key.Marshal()) {
					return nil, nil
				}
			}
			return nil, errors.New("key not authorised")
		},
	}
	for _, k := range s.signers {
		cfg.AddHostKey(k)
	}
	return cfg
}

func (s *testServer) serve() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		s.accepted++
		reject := s.accepted <= s.rejectFirst
		s.mu.Unlock()
		if reject {
			c.Close()
			continue
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.handleConn(c)
		}()
	}
}

func (s *testServer) handleConn(c net.Conn) {
	defer c.Close()
	conn, chans, reqs, err := ssh.NewServerConn(c, s.config())
	if err != nil {
		return
	}
	defer conn.Close()
	go ssh.DiscardRequests(reqs)
	var wg sync.WaitGroup
	defer wg.Wait()
	var openMu sync.Mutex
	sessions := 0
	for nc := range chans {
		switch nc.ChannelType() {
		case "session":
			openMu.Lock()
			full := s.maxSessions > 0 && sessions >= s.maxSessions
			if !full {
				sessions++
			}
			openMu.Unlock()
			if full {
				nc.Reject(ssh.ConnectionFailed, "open failed") // what OpenSSH 9.2 sends over MaxSessions
				continue
			}
			ch, creqs, err := nc.Accept()
			if err != nil {
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { openMu.Lock(); sessions--; openMu.Unlock() }()
				s.session(ch, creqs)
			}()
		case "direct-tcpip":
			if !s.forward {
				nc.Reject(ssh.Prohibited, "forwarding disabled")
				continue
			}
			var p struct {
				Host       string
				Port       uint32
				OriginHost string
				OriginPort uint32
			}
			if err := ssh.Unmarshal(nc.ExtraData(), &p); err != nil {
				nc.Reject(ssh.ConnectionFailed, "bad payload")
				continue
			}
			dest := net.JoinHostPort(p.Host, strconv.Itoa(int(p.Port)))
			out, err := net.Dial("tcp", dest)
			if err != nil {
				nc.Reject(ssh.ConnectionFailed, err.Error())
				continue
			}
			ch, creqs, err := nc.Accept()
			if err != nil {
				out.Close()
				continue
			}
			s.mu.Lock()
			s.forwards = append(s.forwards, dest)
			s.mu.Unlock()
			go ssh.DiscardRequests(creqs)
			wg.Add(2)
			go func() { defer wg.Done(); io.Copy(ch, out); ch.CloseWrite() }()
			go func() { defer wg.Done(); io.Copy(out, ch); out.Close() }()
		default:
			nc.Reject(ssh.UnknownChannelType, "unsupported")
		}
	}
}

func (s *testServer) session(ch ssh.Channel, reqs <-chan *ssh.Request) {
	defer ch.Close()
	for req := range reqs {
		if req.Type != "exec" {
			if req.WantReply {
				req.Reply(false, nil)
			}
			continue
		}
		var p struct{ Command string }
		if err := ssh.Unmarshal(req.Payload, &p); err != nil {
			req.Reply(false, nil)
			return
		}
		s.mu.Lock()
		s.execs = append(s.execs, p.Command)
		s.mu.Unlock()
		cmd := exec.Command("/bin/sh", "-c", p.Command)
		if s.setsid {
			cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		}
		cmd.Stdout = ch
		cmd.Stderr = ch.Stderr()
		// Stdin is fed by our own goroutine: os/exec would otherwise make
		// Wait wait for the client's EOF, which the client sends only after
		// it saw the exit status.
		stdin, err := cmd.StdinPipe()
		if err != nil {
			req.Reply(false, nil)
			return
		}
		if err := cmd.Start(); err != nil {
			req.Reply(false, nil)
			return
		}
		req.Reply(true, nil)
		go func() { io.Copy(stdin, ch); stdin.Close() }()
		go ssh.DiscardRequests(reqs)
		err = cmd.Wait()
		ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
		if err != nil && ws.Signaled() {
			name := signalName(ws.Signal())
			ch.SendRequest("exit-signal", false, ssh.Marshal(struct {
				Signal     string
				CoreDumped bool
				Msg, Lang  string
			}{name, false, "", ""}))
		} else {
			st := make([]byte, 4)
			binary.BigEndian.PutUint32(st, uint32(cmd.ProcessState.ExitCode()))
			ch.SendRequest("exit-status", false, st)
		}
		return
	}
}

func signalName(sig syscall.Signal) string {
	switch sig {
	case syscall.SIGTERM:
		return "TERM"
	case syscall.SIGKILL:
		return "KILL"
	case syscall.SIGINT:
		return "INT"
	case syscall.SIGHUP:
		return "HUP"
	case syscall.SIGPIPE:
		return "PIPE"
	}
	return fmt.Sprintf("SIG%d", int(sig))
}

func newEd25519Signer(t testing.TB) ssh.Signer {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return signerOf(t, priv)
}

func newRSASigner(t testing.TB) ssh.Signer {
	t.Helper()
	priv, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return signerOf(t, priv)
}

func signerOf(t testing.TB, priv any) ssh.Signer {
	t.Helper()
	s, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// clientKey writes a fresh ed25519 client key (OpenSSH format) to dir/id_ed25519.
func clientKey(t testing.TB, dir string) (path string, pub ssh.PublicKey) {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	path = filepath.Join(dir, "id_ed25519")
	if err := os.WriteFile(path, pem.EncodeToMemory(block), 0o600); err != nil {
		t.Fatal(err)
	}
	return path, signerOf(t, priv).PublicKey()
}
