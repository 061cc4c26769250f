package remote

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mosk-qa/asap2-e2e/e2e/config"
)

func TestPGIDWriterStripsMarkerAcrossWrites(t *testing.T) {
	const m = "ASAP2E2E-PGID-0123456789abcdef"
	cases := []struct {
		name   string
		writes []string
		want   string
		pgid   int
	}{
		{"whole", []string{m + " 4242\nerr\n"}, "err\n", 4242},
		{"split", []string{"ASAP2E2E-PG", "ID-0123456789abcdef 42", "42\nrest", " more"}, "rest more", 4242},
		{"noise before", []string{"bashrc says hi\n", m + " 77\n", "x"}, "bashrc says hi\nx", 77},
		{"other marker", []string{"ASAP2E2E-PGID-ffff 12\n"}, "ASAP2E2E-PGID-ffff 12\n", 0},
		{"bad pid", []string{m + " 1\n"}, m + " 1\n", 0},
		{"no newline yet", []string{"partial"}, "partial", 0},
	}
	for _, tc := range cases {
		w := newPGIDWriter(m)
		for _, s := range tc.writes {
			if n, err := w.Write([]byte(s)); n != len(s) || err != nil {
				t.Fatalf("%s: Write = %d %v", tc.name, n, err)
			}
		}
		got := string(w.bytes())
		pgid, ok := w.id()
		if got != tc.want || pgid != tc.pgid || ok != (tc.pgid != 0) {
			t.Errorf("%s: stderr %q pgid %d %v; want %q %d", tc.name, got, pgid, ok, tc.want, tc.pgid)
		}
	}
	long := strings.Repeat("y", maxPreMarker+10)
	w := newPGIDWriter(m)
	w.Write([]byte(long))
	if string(w.bytes()) != long {
		t.Error("a long line without newline was not passed through")
	}
}

func TestShellQuote(t *testing.T) {
	for in, want := range map[string]string{
		"":       "''",
		"a b":    "'a b'",
		"it's":   `'it'\''s'`,
		`$x "y"`: `'$x "y"'`,
		"eth0":   "eth0",
		"x;rm":   "'x;rm'",
		"a*":     "'a*'",
		"~root":  "'~root'",
	} {
		if got := ShellQuote(in); got != want {
			t.Errorf("ShellQuote(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestHopsOfFlattensJumpChain(t *testing.T) {
	ep := config.SSHEndpoint{Address: "198.19.128.5", User: "ubuntu",
		Jump: &config.SSHEndpoint{Address: "198.18.0.20", Port: 2222, User: "jumper",
			Jump: &config.SSHEndpoint{Address: "bastion.example", User: "ops"}}}
	target, jumps, err := HopsOf(ep)
	if err != nil {
		t.Fatal(err)
	}
	if target.String() != "ubuntu@198.19.128.5:22" || len(jumps) != 2 ||
		jumps[0].String() != "ops@bastion.example:22" || jumps[1].String() != "jumper@198.18.0.20:2222" {
		t.Errorf("HopsOf = %v %v", target, jumps)
	}
	ep.Jump.Jump.User = ""
	if _, _, err := HopsOf(ep); err == nil || !strings.Contains(err.Error(), "jump.jump.user") {
		t.Errorf("missing user in second jump: %v", err)
	}
	cyc := &config.SSHEndpoint{Address: "a", User: "u"}
	cyc.Jump = cyc
	if _, _, err := HopsOf(*cyc); err == nil || !strings.Contains(err.Error(), "cycle") {
		t.Errorf("jump cycle: %v", err)
	}
}

func TestHypervisorEndpointDefaults(t *testing.T) {
	jump := &config.SSHEndpoint{Address: "198.18.0.1", User: "root"}
	h := config.Hypervisors{User: "mcc-user", Port: 2200, Jump: jump, Hosts: map[string]config.SSHEndpoint{
		"compute1": {Address: "198.18.0.11"},
		"compute2": {Address: "198.18.0.12", User: "root", Port: 22},
	}}
	ep, err := HypervisorEndpoint(h, "compute1")
	if err != nil || ep.User != "mcc-user" || ep.Port != 2200 || ep.Jump != jump {
		t.Errorf("compute1 = %+v %v", ep, err)
	}
	ep, err = HypervisorEndpoint(h, "compute2")
	if err != nil || ep.User != "root" || ep.Port != 22 {
		t.Errorf("compute2 = %+v %v", ep, err)
	}
	if _, err := HypervisorEndpoint(h, "compute9"); err == nil || !strings.Contains(err.Error(), "compute1, compute2") {
		t.Errorf("unknown hypervisor: %v", err)
	}
}

func TestNewDialerFromConfig(t *testing.T) {
	dir := t.TempDir()
	d, err := NewDialer(config.SSH{PrivateKey: "/keys/id"}, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if d.HostKeys.Mode() != ModeTOFU || d.HostKeys.File() != filepath.Join(dir, TOFUFile) {
		t.Errorf("default policy %s %s, want TOFU in the artifacts", d.HostKeys.Mode(), d.HostKeys.File())
	}
	if d.Log.Path() != filepath.Join(dir, CommandLogFile) || d.Auth.KeyFile != "/keys/id" || d.Auth.Agent {
		t.Errorf("dialer %+v", d)
	}
	if _, err := os.Stat(d.Log.Path()); err != nil {
		t.Errorf("command log not created: %v", err)
	}
	d2, err := NewDialer(config.SSH{}, t.TempDir(), nil)
	if err != nil || !d2.Auth.Agent {
		t.Errorf("no key file must mean the agent: %+v %v", d2, err)
	}
	if _, err := NewDialer(config.SSH{KnownHosts: "/k", InsecureIgnoreHostKey: true}, dir, nil); err == nil ||
		!strings.Contains(err.Error(), "contradict") {
		t.Errorf("known_hosts + insecure: %v", err)
	}
	if _, err := NewDialer(config.SSH{KnownHosts: filepath.Join(dir, "absent")}, dir, nil); err == nil ||
		!strings.Contains(err.Error(), "absent") {
		t.Errorf("missing known_hosts file: %v", err)
	}
}

func TestTOFUFileMalformedIsAnError(t *testing.T) {
	p := filepath.Join(t.TempDir(), TOFUFile)
	if err := os.WriteFile(p, []byte("# comment\n\nhost ssh-ed25519 !!!notbase64\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := NewHostKeys(HostKeyConfig{TOFUFile: p}); err == nil || !strings.Contains(err.Error(), "line 3") {
		t.Errorf("malformed TOFU file: %v", err)
	}
}
