package remote

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/config"
	"github.com/mosk-qa/asap2-e2e/e2e/wait"
)

// Files a Dialer writes in the run's artifacts directory.
const (
	CommandLogFile = "commands.jsonl"  // every remote command, JSON lines
	TOFUFile       = "ssh_known_hosts" // host keys trusted on first use, known_hosts format
)

// Dialer opens connections with the run's shared SSH settings: one host key
// policy, one authentication, one command log.
type Dialer struct {
	Auth     Auth
	HostKeys *HostKeys
	Log      *CommandLog
	// ConnectTimeout, KillGrace and KeepAlive as in DialOptions.
	ConnectTimeout time.Duration
	KillGrace      time.Duration
	KeepAlive      wait.Interval
}

// NewDialer builds the run's SSH settings from the config's ssh section.
// artifactsDir is the run's output directory (<output_dir>/<run id>): the
// command log and, without a known_hosts file, the trust-on-first-use record
// go there. warn receives the insecure-host-key warning (nil = standard logger).
func NewDialer(s config.SSH, artifactsDir string, warn func(string)) (*Dialer, error) {
	hc := HostKeyConfig{Warn: warn}
	switch {
	case s.InsecureIgnoreHostKey && s.KnownHosts != "":
		return nil, fmt.Errorf("ssh: known_hosts (%q) and insecure_ignore_host_key (true) contradict each other: set one", s.KnownHosts)
	case s.InsecureIgnoreHostKey:
		hc.Insecure = true
	case s.KnownHosts != "":
		hc.KnownHosts = s.KnownHosts
	default:
		hc.TOFUFile = filepath.Join(artifactsDir, TOFUFile)
	}
	hk, err := NewHostKeys(hc)
	if err != nil {
		return nil, fmt.Errorf("ssh: %w", err)
	}
	lg, err := OpenCommandLog(filepath.Join(artifactsDir, CommandLogFile), 0)
	if err != nil {
		return nil, fmt.Errorf("ssh: %w", err)
	}
	return &Dialer{
		Auth:      Auth{KeyFile: s.PrivateKey, Agent: s.UseAgent || s.PrivateKey == ""},
		HostKeys:  hk,
		Log:       lg,
		KeepAlive: DefaultKeepAlive,
	}, nil
}

// Close closes the command log.
func (d *Dialer) Close() error { return d.Log.Close() }

// DialEndpoint connects to ep through its jump chain (ep.Jump is the last
// hop before ep, ep.Jump.Jump the one before, ...), retrying within ready.
// name identifies the target in logs; sudo prefixes commands with sudo -n.
func (d *Dialer) DialEndpoint(ctx context.Context, name string, ep config.SSHEndpoint, sudo bool, ready wait.Interval) (*Client, error) {
	target, jumps, err := HopsOf(ep)
	if err != nil {
		return nil, fmt.Errorf("ssh %s: %w", name, err)
	}
	return Dial(ctx, DialOptions{
		Name:           name,
		Target:         target,
		Jumps:          jumps,
		Auth:           d.Auth,
		HostKeys:       d.HostKeys,
		Log:            d.Log,
		Sudo:           sudo,
		Ready:          ready,
		ConnectTimeout: d.ConnectTimeout,
		KillGrace:      d.KillGrace,
		KeepAlive:      d.KeepAlive,
	})
}

// maxJumps bounds a jump chain (a cycle in a hand-built config would not end).
const maxJumps = 16

// HopsOf flattens an endpoint and its jump chain: jumps come outermost first.
func HopsOf(ep config.SSHEndpoint) (Hop, []Hop, error) {
	target := Hop{Address: ep.Address, Port: ep.Port, User: ep.User}
	if err := checkHop(target, "address"); err != nil {
		return Hop{}, nil, err
	}
	var jumps []Hop
	key := "jump"
	for j := ep.Jump; j != nil; j = j.Jump {
		if len(jumps) == maxJumps {
			return Hop{}, nil, fmt.Errorf("more than %d jump hosts (a cycle?)", maxJumps)
		}
		h := Hop{Address: j.Address, Port: j.Port, User: j.User}
		if err := checkHop(h, key+".address"); err != nil {
			return Hop{}, nil, err
		}
		jumps = append([]Hop{h}, jumps...)
		key += ".jump"
	}
	return target, jumps, nil
}

func checkHop(h Hop, key string) error {
	userKey := strings.TrimSuffix(key, "address") + "user"
	switch {
	case h.Address == "":
		return fmt.Errorf("%s: must be set, got %q", key, h.Address)
	case h.User == "":
		return fmt.Errorf("%s: must be set for %s, got %q", userKey, h.Address, h.User)
	case h.Port < 0 || h.Port > 65535:
		return fmt.Errorf("%s: port must be 0..65535, got %d", strings.TrimSuffix(key, "address")+"port", h.Port)
	}
	return nil
}

// HypervisorEndpoint resolves a hypervisor name (as Nova reports it) to its
// endpoint, filling user, port and jump from the hypervisors section when the
// host entry leaves them empty.
func HypervisorEndpoint(h config.Hypervisors, name string) (config.SSHEndpoint, error) {
	ep, ok := h.Hosts[name]
	if !ok {
		known := make([]string, 0, len(h.Hosts))
		for k := range h.Hosts {
			known = append(known, k)
		}
		sort.Strings(known)
		return config.SSHEndpoint{}, fmt.Errorf("hypervisors.hosts: no entry for hypervisor %q (configured: %s)", name, strings.Join(known, ", "))
	}
	if ep.User == "" {
		ep.User = h.User
	}
	if ep.User == "" {
		ep.User = "root"
	}
	if ep.Port == 0 {
		ep.Port = h.Port
	}
	if ep.Jump == nil {
		ep.Jump = h.Jump
	}
	return ep, nil
}
