package remote

import (
	"bufio"
	"crypto/ed25519"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// HostKeyMode is how server host keys are verified.
type HostKeyMode string

const (
	// ModeKnownHosts checks every host key against a known_hosts file; an
	// unknown host or a different key fails the connection.
	ModeKnownHosts HostKeyMode = "known_hosts"
	// ModeTOFU trusts a host's key the first time it is seen, records it in a
	// file (known_hosts format) in the run's artifacts, and refuses any other
	// key for that host afterwards.
	ModeTOFU HostKeyMode = "trust_on_first_use"
	// ModeInsecure accepts any host key. Explicit opt-in only; a warning is
	// logged and Insecure() reports it so the report can record it.
	ModeInsecure HostKeyMode = "insecure_ignore_host_key"
)

// HostKeyConfig selects the host key policy. Exactly one of KnownHosts,
// TOFUFile or Insecure must be set.
type HostKeyConfig struct {
	// KnownHosts is a known_hosts file (OpenSSH format, hashed names allowed).
	KnownHosts string
	// TOFUFile is where trust-on-first-use records keys, normally
	// <run artifacts>/ssh_known_hosts. Keys already in it are trusted.
	TOFUFile string
	// Insecure accepts any host key.
	Insecure bool
	// Warn receives warnings (the insecure opt-in). Nil means the standard logger.
	Warn func(msg string)
}

// HostKeyError is a host key that was refused. It is never retried.
type HostKeyError struct {
	Host      string // host:port as dialled
	Mode      HostKeyMode
	Presented ssh.PublicKey
	Expected  []ssh.PublicKey // keys on record for the host; empty for an unknown host
	Source    string          // file the expected keys come from
	Changed   bool            // a key is on record and the presented one differs
}

func (e *HostKeyError) Error() string {
	presented := describeKey(e.Presented)
	if !e.Changed {
		return fmt.Sprintf("host key verification failed for %s: host is not in known_hosts file %s (server presented %s)",
			e.Host, e.Source, presented)
	}
	want := make([]string, 0, len(e.Expected))
	for _, k := range e.Expected {
		want = append(want, describeKey(k))
	}
	what := "does not match known_hosts file"
	if e.Mode == ModeTOFU {
		what = "CHANGED since it was first recorded in"
	}
	return fmt.Sprintf("host key verification failed for %s: the host key %s %s: expected %s, server presented %s",
		e.Host, what, e.Source, strings.Join(want, " or "), presented)
}

func describeKey(k ssh.PublicKey) string {
	if k == nil {
		return "no key"
	}
	return k.Type() + " " + ssh.FingerprintSHA256(k)
}

// SeenKey is one host key accepted during the run.
type SeenKey struct {
	Host        string    `json:"host"` // normalised, e.g. "198.18.0.11" or "[127.0.0.1]:2222"
	Type        string    `json:"type"`
	Fingerprint string    `json:"fingerprint"` // SHA256:...
	Recorded    bool      `json:"recorded"`    // TOFU wrote it during this run
	Time        time.Time `json:"time"`
}

// HostKeys verifies server host keys for every connection of a run. It is
// safe for concurrent use; share one per run.
type HostKeys struct {
	mode HostKeyMode
	file string

	known ssh.HostKeyCallback // ModeKnownHosts

	mu     sync.Mutex
	tofu   map[string][]ssh.PublicKey // normalised host -> keys on record (ModeTOFU)
	seen   []SeenKey
	seenAt map[string]bool
}

// NewHostKeys builds the policy. For TOFU the file's directory is created and
// keys already in the file are loaded.
func NewHostKeys(c HostKeyConfig) (*HostKeys, error) {
	set := 0
	for _, b := range []bool{c.KnownHosts != "", c.TOFUFile != "", c.Insecure} {
		if b {
			set++
		}
	}
	if set != 1 {
		return nil, fmt.Errorf("host key policy: exactly one of known_hosts file (%q), trust-on-first-use file (%q) or insecure (%v) must be set",
			c.KnownHosts, c.TOFUFile, c.Insecure)
	}
	h := &HostKeys{seenAt: map[string]bool{}}
	switch {
	case c.Insecure:
		h.mode = ModeInsecure
		warn := c.Warn
		if warn == nil {
			warn = func(m string) { logWarn(m) }
		}
		warn("WARNING: SSH host key verification is DISABLED (insecure_ignore_host_key): any server key is accepted; the report records this")
	case c.KnownHosts != "":
		h.mode = ModeKnownHosts
		h.file = c.KnownHosts
		cb, err := knownhosts.New(c.KnownHosts)
		if err != nil {
			return nil, fmt.Errorf("host key policy: reading known_hosts file %s: %w", c.KnownHosts, err)
		}
		h.known = cb
	default:
		h.mode = ModeTOFU
		h.file = c.TOFUFile
		h.tofu = map[string][]ssh.PublicKey{}
		if err := os.MkdirAll(filepath.Dir(c.TOFUFile), 0o755); err != nil {
			return nil, fmt.Errorf("host key policy: creating directory for %s: %w", c.TOFUFile, err)
		}
		if err := h.loadTOFU(); err != nil {
			return nil, err
		}
	}
	return h, nil
}

func (h *HostKeys) loadTOFU() error {
	recs, err := readKnownHostsLines(h.file)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("host key policy: %w", err)
	}
	for _, r := range recs {
		for _, host := range r.hosts {
			h.tofu[host] = append(h.tofu[host], r.key)
		}
	}
	return nil
}

type knownHostsLine struct {
	hosts []string
	key   ssh.PublicKey
}

func readKnownHostsLines(path string) ([]knownHostsLine, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading host key file %s: %w", path, err)
	}
	defer f.Close()
	var out []knownHostsLine
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		_, hosts, key, _, _, err := ssh.ParseKnownHosts([]byte(line))
		if err != nil {
			return nil, fmt.Errorf("host key file %s line %d: %w", path, n, err)
		}
		out = append(out, knownHostsLine{hosts: hosts, key: key})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading host key file %s: %w", path, err)
	}
	return out, nil
}

// Mode is the active policy.
func (h *HostKeys) Mode() HostKeyMode { return h.mode }

// Insecure reports whether any host key is accepted (to be recorded in the report).
func (h *HostKeys) Insecure() bool { return h.mode == ModeInsecure }

// File is the known_hosts or TOFU file; empty when insecure.
func (h *HostKeys) File() string { return h.file }

// Seen lists every distinct host key accepted so far, in order.
func (h *HostKeys) Seen() []SeenKey {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]SeenKey(nil), h.seen...)
}

func (h *HostKeys) noteSeen(host string, key ssh.PublicKey, recorded bool) {
	id := host + " " + ssh.FingerprintSHA256(key)
	if h.seenAt[id] {
		return
	}
	h.seenAt[id] = true
	h.seen = append(h.seen, SeenKey{Host: host, Type: key.Type(), Fingerprint: ssh.FingerprintSHA256(key), Recorded: recorded, Time: time.Now().UTC()})
}

// callback returns the HostKeyCallback for one hop dialled as addr (host:port).
func (h *HostKeys) callback(addr string) ssh.HostKeyCallback {
	return func(_ string, remote net.Addr, key ssh.PublicKey) error {
		return h.check(addr, remote, key)
	}
}

func (h *HostKeys) check(addr string, remote net.Addr, key ssh.PublicKey) error {
	host := knownhosts.Normalize(addr)
	switch h.mode {
	case ModeInsecure:
		h.mu.Lock()
		h.noteSeen(host, key, false)
		h.mu.Unlock()
		return nil
	case ModeKnownHosts:
		err := h.known(addr, remoteOrAddr(remote, addr), key)
		if err == nil {
			h.mu.Lock()
			h.noteSeen(host, key, false)
			h.mu.Unlock()
			return nil
		}
		var ke *knownhosts.KeyError
		if errors.As(err, &ke) {
			he := &HostKeyError{Host: addr, Mode: h.mode, Presented: key, Source: h.file, Changed: len(ke.Want) > 0}
			for _, w := range ke.Want {
				he.Expected = append(he.Expected, w.Key)
			}
			return he
		}
		var re *knownhosts.RevokedError
		if errors.As(err, &re) {
			return fmt.Errorf("host key verification failed for %s: server presented %s, which is marked @revoked in %s line %d",
				addr, describeKey(key), re.Revoked.Filename, re.Revoked.Line)
		}
		return fmt.Errorf("host key verification failed for %s (known_hosts %s): %w", addr, h.file, err)
	}
	// TOFU
	h.mu.Lock()
	defer h.mu.Unlock()
	if prev, ok := h.tofu[host]; ok {
		for _, k := range prev {
			if keysEqual(k, key) {
				h.noteSeen(host, key, false)
				return nil
			}
		}
		return &HostKeyError{Host: addr, Mode: h.mode, Presented: key, Expected: append([]ssh.PublicKey(nil), prev...), Source: h.file, Changed: true}
	}
	line := knownhosts.Line([]string{host}, key) + " first-seen=" + time.Now().UTC().Format(time.RFC3339) + "\n"
	f, err := os.OpenFile(h.file, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("trust on first use: recording the key of %s in %s: %w", addr, h.file, err)
	}
	if _, err := f.WriteString(line); err != nil {
		f.Close()
		return fmt.Errorf("trust on first use: recording the key of %s in %s: %w", addr, h.file, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("trust on first use: recording the key of %s in %s: %w", addr, h.file, err)
	}
	h.tofu[host] = []ssh.PublicKey{key}
	h.noteSeen(host, key, true)
	return nil
}

// algorithms returns the host key algorithms to offer for addr so the server
// presents a key type that is on record (as OpenSSH does); nil = defaults.
func (h *HostKeys) algorithms(addr string) []string {
	var keys []ssh.PublicKey
	switch h.mode {
	case ModeTOFU:
		h.mu.Lock()
		keys = append(keys, h.tofu[knownhosts.Normalize(addr)]...)
		h.mu.Unlock()
	case ModeKnownHosts:
		// The callback lists the keys on record for a host in its KeyError
		// when it is shown a key that is not among them.
		var ke *knownhosts.KeyError
		if err := h.known(addr, remoteOrAddr(nil, addr), probeKey); errors.As(err, &ke) {
			for _, w := range ke.Want {
				keys = append(keys, w.Key)
			}
		}
	default:
		return nil
	}
	var algos []string
	seen := map[string]bool{}
	for _, k := range keys {
		for _, a := range algorithmsForKeyType(k.Type()) {
			if !seen[a] {
				seen[a] = true
				algos = append(algos, a)
			}
		}
	}
	return algos
}

func algorithmsForKeyType(t string) []string {
	switch t {
	case ssh.KeyAlgoRSA:
		return []string{ssh.KeyAlgoRSASHA512, ssh.KeyAlgoRSASHA256, ssh.KeyAlgoRSA}
	case ssh.CertAlgoRSAv01:
		return []string{ssh.CertAlgoRSASHA512v01, ssh.CertAlgoRSASHA256v01, ssh.CertAlgoRSAv01}
	default:
		return []string{t}
	}
}

// probeKey is a throwaway key used to ask the known_hosts callback which keys
// it holds for a host.
var probeKey = func() ssh.PublicKey {
	pub, _, err := ed25519.GenerateKey(nil)
	if err != nil {
		panic(fmt.Sprintf("generating probe key: %v", err))
	}
	k, err := ssh.NewPublicKey(pub)
	if err != nil {
		panic(fmt.Sprintf("wrapping probe key: %v", err))
	}
	return k
}()

func keysEqual(a, b ssh.PublicKey) bool {
	return a.Type() == b.Type() && string(a.Marshal()) == string(b.Marshal())
}

// remoteOrAddr gives knownhosts a remote address it can split; connections
// through a jump host report the channel's address, which may not be host:port.
func remoteOrAddr(remote net.Addr, addr string) net.Addr {
	if remote != nil {
		if _, _, err := net.SplitHostPort(remote.String()); err == nil {
			return remote
		}
	}
	return stringAddr(addr)
}

type stringAddr string

func (a stringAddr) Network() string { return "tcp" }
func (a stringAddr) String() string  { return string(a) }

// ReadTOFUFile lists the hosts and key fingerprints recorded in a TOFU file
// (known_hosts format), for tools and tests.
func ReadTOFUFile(path string) ([]SeenKey, error) {
	recs, err := readKnownHostsLines(path)
	if err != nil {
		return nil, err
	}
	var out []SeenKey
	for _, r := range recs {
		for _, host := range r.hosts {
			out = append(out, SeenKey{Host: host, Type: r.key.Type(), Fingerprint: ssh.FingerprintSHA256(r.key), Recorded: true})
		}
	}
	return out, nil
}
