package faultlab

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"

	"go.yaml.in/yaml/v3"
)

// EnvFaults must be "lab" for the rows to run.
const EnvFaults = "ASAP2E2E_FAULTS"

// EnvFaultsOut names the directory of the matrix's runs and table
// (default: a new directory under $TMPDIR).
const EnvFaultsOut = "ASAP2E2E_FAULTS_OUT"

// Env is what every row shares: the lab, binaries, credentials.
type Env struct {
	*Lab
	Root      string // module root
	Out       string
	LabState  string
	CredDir   string // holds the generated clouds and secure files; removed when the matrix ends
	genClouds string // generated: no secret in it
	genSecure string // generated: the passwords and the token
	Secrets   map[string]string
	bins      map[string]string // smoke, perf, sweeper
	// FilesSearched counts the files SecretsFound read, over all rows.
	FilesSearched atomic.Int64
}

// SetUp prepares the matrix: root is the module's root. It returns a reason
// to skip (not asked for, lab not up) or an error (the lab's files are
// wrong, a binary does not build).
func SetUp(root string) (*Env, string, error) {
	if os.Getenv(EnvFaults) != "lab" {
		return nil, fmt.Sprintf("the fault matrix runs against the local lab: set %s=lab (lab up with bash lab/up.sh; see suites/faults/run.sh)", EnvFaults), nil
	}
	root, err := filepath.Abs(root)
	if err != nil {
		return nil, "", err
	}
	e := &Env{Root: root, LabState: os.Getenv("LAB_STATE"), bins: map[string]string{}, Secrets: map[string]string{}}
	if e.LabState == "" {
		e.LabState = DefaultLabState
	}
	harnessFile, cloudsFile, layoutFile := LabFiles(root, e.LabState)
	if _, err := os.Stat(cloudsFile); err != nil {
		return nil, fmt.Sprintf("lab not up: %v (bring it up with bash lab/up.sh)", err), nil
	}
	lab, err := Load(harnessFile, cloudsFile, layoutFile)
	if err != nil {
		return nil, "", err
	}
	e.Lab = lab
	conn, err := net.DialTimeout("tcp", lab.Keystone, KeystoneDial)
	if err != nil {
		return nil, fmt.Sprintf("lab not up: Keystone at %s (%s: clouds.%s.auth.auth_url) does not answer: %v (bash lab/status.sh)", lab.Keystone, cloudsFile, lab.Tenant, err), nil
	}
	conn.Close()

	if e.Out = os.Getenv(EnvFaultsOut); e.Out == "" {
		if e.Out, err = os.MkdirTemp("", "asap2e2e-faults-"); err != nil {
			return nil, "", err
		}
	}
	if err := os.MkdirAll(filepath.Join(e.Out, "bin"), 0o755); err != nil {
		return nil, "", err
	}
	for name, args := range map[string][]string{
		"smoke":   {"test", "-c", "-o", filepath.Join(e.Out, "bin", "smoke.test"), "./suites/smoke"},
		"perf":    {"test", "-c", "-o", filepath.Join(e.Out, "bin", "perf.test"), "./suites/perf"},
		"sweeper": {"build", "-o", filepath.Join(e.Out, "bin", "sweeper"), "./tools/sweeper"},
	} {
		cmd := exec.Command("go", args...)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			return nil, "", fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, out)
		}
		e.bins[name] = args[len(args)-2]
	}
	if err := e.writeCredentials(); err != nil {
		return nil, "", err
	}
	return e, "", nil
}

// SecretKinds names the secrets searched for, sorted.
func (e *Env) SecretKinds() []string {
	var kinds []string
	for what := range e.Secrets {
		kinds = append(kinds, what)
	}
	sort.Strings(kinds)
	return kinds
}

// writeCredentials splits the lab's clouds.yaml: clouds.yaml without any
// secret, secure.yaml with the tenant password and, for the admin entry, a
// token issued now (auth_type token), so both kinds of secret go through
// the harness and can be searched for in everything it writes.
func (e *Env) writeCredentials() error {
	data, err := os.ReadFile(e.CloudsFile)
	if err != nil {
		return err
	}
	var doc map[string]map[string]map[string]any
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return fmt.Errorf("%s: %w", e.CloudsFile, err)
	}
	secure := map[string]map[string]any{}
	for name, c := range doc["clouds"] {
		auth, _ := c["auth"].(map[string]any)
		if auth == nil {
			return fmt.Errorf("%s: clouds.%s.auth missing", e.CloudsFile, name)
		}
		pw, _ := auth["password"].(string)
		if pw == "" {
			return fmt.Errorf("%s: clouds.%s.auth.password missing", e.CloudsFile, name)
		}
		e.Secrets[name+" password"] = pw
		delete(auth, "password")
		secure[name] = map[string]any{"auth": map[string]any{"password": pw}}
	}
	admin := doc["clouds"][e.Admin]
	if admin != nil {
		tok, err := e.OpenStack(context.Background(), e.Admin, "token issue -f value -c id")
		if err != nil {
			return fmt.Errorf("issuing a token for the secrets check: %w", err)
		}
		token := strings.TrimSpace(string(tok))
		e.Secrets[e.Admin+" token"] = token
		auth := admin["auth"].(map[string]any)
		delete(auth, "username")
		delete(auth, "user_domain_name")
		admin["auth_type"] = "token"
		secure[e.Admin] = map[string]any{"auth": map[string]any{"token": token}}
	}
	// Outside the output directory (CI archives it), removed by TestMain.
	credDir, err := os.MkdirTemp("", "asap2e2e-faults-creds-")
	if err != nil {
		return err
	}
	e.CredDir = credDir
	Started.AtStop(func() { _ = os.RemoveAll(credDir) }) // an interrupted matrix leaves no secret behind
	e.genClouds = filepath.Join(credDir, "clouds.yaml")
	e.genSecure = filepath.Join(credDir, "secure.yaml")
	for path, v := range map[string]any{e.genClouds: doc, e.genSecure: map[string]any{"clouds": secure}} {
		b, err := yaml.Marshal(v)
		if err != nil {
			return err
		}
		if err := os.WriteFile(path, b, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// OpenStack runs the openstack CLI (the lab's own clouds.yaml, no proxy)
// with commands one per line on stdin, in one process.
func (e *Env) OpenStack(ctx context.Context, cloud string, commands ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, CLITimeout)
	defer cancel()
	// One command: as arguments; several: one per line on stdin (the
	// CLI's batch mode, which takes the cloud from $OS_CLOUD only).
	cmd := e.command(ctx, "openstack")
	if len(commands) == 1 {
		cmd.Args = append(cmd.Args, strings.Fields(commands[0])...)
	} else {
		cmd.Stdin = strings.NewReader(strings.Join(commands, "\n") + "\n")
	}
	cmd.Env = append(cleanEnv(), "OS_CLIENT_CONFIG_FILE="+e.CloudsFile, "OS_CLOUD="+cloud)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, &CLIError{Cloud: cloud, Commands: commands, Err: err, Stderr: strings.TrimSpace(stderr.String())}
	}
	return out, nil
}

// cleanEnv is this process's environment without proxies or OpenStack
// settings (each command sets its own).
func cleanEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch strings.ToUpper(k) {
		case "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY", "OS_CLIENT_CONFIG_FILE", "OS_CLIENT_SECURE_FILE", "OS_CLOUD",
			"ASAP2E2E_CONFIG", "ASAP2E2E_OUTPUT_DIR", "ASAP2E2E_EXPECTED_PATH":
			continue
		}
		out = append(out, kv)
	}
	return out
}

// Listing is what the cloud holds of one run, read with the openstack CLI:
// "kind name (id)" per resource.
func (e *Env) Listing(ctx context.Context, runID string) ([]string, error) {
	tenant := []string{"server list", "port list", "network list", "subnet list", "security group list", "keypair list", "server group list"}
	admin := []string{"flavor list --all"}
	var out []string
	for _, part := range []struct {
		cloud string
		cmds  []string
	}{{e.Tenant, tenant}, {e.Admin, admin}} {
		var lines []string
		for _, c := range part.cmds {
			lines = append(lines, c+" -f json")
		}
		// The CLI fails when another run deletes a flavor between its list
		// and its per-flavor extra-spec GET (404): ask again.
		var raw []byte
		var err error
		for attempt := 1; attempt <= 3; attempt++ {
			if raw, err = e.OpenStack(ctx, part.cloud, lines...); err == nil || batchSucceeded(err, raw, part.cmds) {
				err = nil
				break
			}
		}
		if err != nil {
			return nil, err
		}
		got, err := ParseListings(raw, part.cmds, runID)
		if err != nil {
			return nil, fmt.Errorf("openstack --os-cloud %s: %w", part.cloud, err)
		}
		out = append(out, got...)
	}
	sort.Strings(out)
	return out, nil
}

// ParseListings reads the output of the openstack CLI's batch mode (one
// JSON array per command, in order) and returns "kind name (id)" for every
// row whose name contains runID.
func ParseListings(raw []byte, cmds []string, runID string) ([]string, error) {
	var out []string
	dec := json.NewDecoder(bytes.NewReader(raw))
	for i := 0; ; i++ {
		var rows []map[string]any
		err := dec.Decode(&rows)
		if errors.Is(err, io.EOF) {
			if i != len(cmds) {
				return nil, fmt.Errorf("%d listings for %d commands %q", i, len(cmds), cmds)
			}
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("listing %d of %q: %w", i, cmds, err)
		}
		if i >= len(cmds) {
			return nil, fmt.Errorf("more listings than the %d commands %q", len(cmds), cmds)
		}
		kind := strings.TrimSuffix(strings.TrimSuffix(cmds[i], " --all"), " list")
		for _, r := range rows {
			name, _ := r["Name"].(string)
			if !strings.Contains(name, runID) {
				continue
			}
			id, _ := r["ID"].(string)
			out = append(out, fmt.Sprintf("%s %s (%s)", kind, name, id))
		}
	}
}

// PortIP is the first fixed IP of a port (openstack CLI, tenant).
func (e *Env) PortIP(name string) (string, error) {
	out, err := e.OpenStack(context.Background(), e.Tenant, "port show "+name+" -f json -c fixed_ips")
	if err != nil {
		return "", err
	}
	var p struct {
		FixedIPs []struct {
			IP string `json:"ip_address"`
		} `json:"fixed_ips"`
	}
	if err := json.Unmarshal(out, &p); err != nil || len(p.FixedIPs) == 0 || p.FixedIPs[0].IP == "" {
		return "", fmt.Errorf("port %s: no fixed IP in %q (%v)", name, out, err)
	}
	return p.FixedIPs[0].IP, nil
}

// SecretsFound searches every file under dir for the credentials the runs
// were given.
func (e *Env) SecretsFound(dir string) []string {
	var found []string
	_ = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return nil
		}
		e.FilesSearched.Add(1)
		for what, s := range e.Secrets {
			if len(s) >= 8 && bytes.Contains(data, []byte(s)) {
				rel, _ := filepath.Rel(e.Out, path)
				found = append(found, fmt.Sprintf("%s in %s", what, rel))
			}
		}
		return nil
	})
	return found
}

// command is name run the way the lab release runs its programs: through
// CommandPrefix (layout.yaml command_prefix) when the release has one.
func (e *Env) command(ctx context.Context, name string, args ...string) *exec.Cmd {
	argv := append(append(append([]string(nil), e.CommandPrefix...), name), args...)
	return exec.CommandContext(ctx, argv[0], argv[1:]...)
}

// CLIError is an openstack CLI run that exited non-zero.
type CLIError struct {
	Cloud    string
	Commands []string
	Err      error
	Stderr   string
}

func (e *CLIError) Error() string {
	return fmt.Sprintf("openstack --os-cloud %s %q: %v: %s", e.Cloud, e.Commands, e.Err, e.Stderr)
}

func (e *CLIError) Unwrap() error { return e.Err }

// batchSucceeded says whether a batch run of cmds that exited non-zero did
// all its work anyway: Epoxy's openstackclient 7.4 (Debian 13) ends its batch
// mode (commands on stdin) with exit status 1 even when every command
// succeeded, where Zed's 6.0 exits 0. A failed command says so on stderr and
// leaves its listing out, so the run counts only with nothing on stderr and
// exactly one listing per command.
func batchSucceeded(err error, raw []byte, cmds []string) bool {
	var ce *CLIError
	if !errors.As(err, &ce) || ce.Stderr != "" || len(ce.Commands) < 2 {
		return false
	}
	_, perr := ParseListings(raw, cmds, "")
	return perr == nil
}
