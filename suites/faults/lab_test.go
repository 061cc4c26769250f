package faults

import (
	"bufio"
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
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/mosk-qa/asap2-e2e/e2e/faultproxy"
)

// EnvFaults must be "lab" for the rows to run.
const EnvFaults = "ASAP2E2E_FAULTS"

// EnvFaultsOut names the directory of the matrix's runs and table
// (default: a new directory under $TMPDIR).
const EnvFaultsOut = "ASAP2E2E_FAULTS_OUT"

// labEnv is what every row shares: binaries, credentials, base config.
type labEnv struct {
	root       string // module root
	out        string
	labState   string
	labClouds  string // the lab's own clouds.yaml (for the openstack CLI)
	cloudsFile string // generated: no secret in it
	secureFile string // generated: the passwords and the token
	credDir    string // holds both; removed when the matrix ends
	secrets    map[string]string
	bins       map[string]string // smoke, perf, sweeper
	base       []byte            // lab/harness.yaml
	prefix     string
}

var (
	envOnce sync.Once
	theEnv  *labEnv
	envSkip string
	envErr  error
)

// lab returns the shared environment, skipping the test (with the reason)
// when the matrix was not asked for or the lab does not answer.
func lab(t *testing.T) *labEnv {
	t.Helper()
	envOnce.Do(func() { theEnv, envSkip, envErr = setUp() })
	if envSkip != "" {
		t.Skip(envSkip)
	}
	if envErr != nil {
		t.Fatalf("fault matrix set-up: %v", envErr)
	}
	return theEnv
}

func setUp() (*labEnv, string, error) {
	if os.Getenv(EnvFaults) != "lab" {
		return nil, fmt.Sprintf("the fault matrix runs against the local lab: set %s=lab (lab up with bash lab/up.sh; see suites/faults/run.sh)", EnvFaults), nil
	}
	e := &labEnv{labState: os.Getenv("LAB_STATE"), bins: map[string]string{}, secrets: map[string]string{}}
	if e.labState == "" {
		e.labState = "/var/lib/asap2lab"
	}
	e.labClouds = filepath.Join(e.labState, "clouds.yaml")
	if _, err := os.Stat(e.labClouds); err != nil {
		return nil, fmt.Sprintf("lab not up: %v (bring it up with bash lab/up.sh)", err), nil
	}
	conn, err := net.DialTimeout("tcp", "198.18.0.1:5000", 3*time.Second)
	if err != nil {
		return nil, fmt.Sprintf("lab not up: Keystone at 198.18.0.1:5000 does not answer: %v (bash lab/status.sh)", err), nil
	}
	conn.Close()

	root, err := filepath.Abs("../..")
	if err != nil {
		return nil, "", err
	}
	e.root = root
	if e.out = os.Getenv(EnvFaultsOut); e.out == "" {
		if e.out, err = os.MkdirTemp("", "asap2e2e-faults-"); err != nil {
			return nil, "", err
		}
	}
	if err := os.MkdirAll(filepath.Join(e.out, "bin"), 0o755); err != nil {
		return nil, "", err
	}
	for name, args := range map[string][]string{
		"smoke":   {"test", "-c", "-o", filepath.Join(e.out, "bin", "smoke.test"), "./suites/smoke"},
		"perf":    {"test", "-c", "-o", filepath.Join(e.out, "bin", "perf.test"), "./suites/perf"},
		"sweeper": {"build", "-o", filepath.Join(e.out, "bin", "sweeper"), "./tools/sweeper"},
	} {
		cmd := exec.Command("go", args...)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			return nil, "", fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, out)
		}
		e.bins[name] = args[len(args)-2]
	}
	if e.base, err = os.ReadFile(filepath.Join(root, "lab", "harness.yaml")); err != nil {
		return nil, "", err
	}
	var cfg struct {
		Run struct {
			NamePrefix string `yaml:"name_prefix"`
		} `yaml:"run"`
	}
	if err := yaml.Unmarshal(e.base, &cfg); err != nil {
		return nil, "", fmt.Errorf("lab/harness.yaml: %w", err)
	}
	e.prefix = cfg.Run.NamePrefix
	if err := e.writeCredentials(); err != nil {
		return nil, "", err
	}
	return e, "", nil
}

// writeCredentials splits the lab's clouds.yaml: clouds.yaml without any
// secret, secure.yaml with the tenant password and, for the admin entry, a
// token issued now (auth_type token), so both kinds of secret go through
// the harness and can be searched for in everything it writes.
func (e *labEnv) writeCredentials() error {
	data, err := os.ReadFile(e.labClouds)
	if err != nil {
		return err
	}
	var doc map[string]map[string]map[string]any
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return fmt.Errorf("%s: %w", e.labClouds, err)
	}
	secure := map[string]map[string]any{}
	for name, c := range doc["clouds"] {
		auth, _ := c["auth"].(map[string]any)
		if auth == nil {
			return fmt.Errorf("%s: clouds.%s.auth missing", e.labClouds, name)
		}
		pw, _ := auth["password"].(string)
		if pw == "" {
			return fmt.Errorf("%s: clouds.%s.auth.password missing", e.labClouds, name)
		}
		e.secrets[name+" password"] = pw
		delete(auth, "password")
		secure[name] = map[string]any{"auth": map[string]any{"password": pw}}
	}
	admin := doc["clouds"]["asap2lab-admin"]
	if admin != nil {
		tok, err := e.openstack(context.Background(), "asap2lab-admin", "token issue -f value -c id")
		if err != nil {
			return fmt.Errorf("issuing a token for the secrets check: %w", err)
		}
		token := strings.TrimSpace(string(tok))
		e.secrets["asap2lab-admin token"] = token
		auth := admin["auth"].(map[string]any)
		delete(auth, "username")
		delete(auth, "user_domain_name")
		admin["auth_type"] = "token"
		secure["asap2lab-admin"] = map[string]any{"auth": map[string]any{"token": token}}
	}
	// Outside the output directory (CI archives it), removed by TestMain.
	credDir, err := os.MkdirTemp("", "asap2e2e-faults-creds-")
	if err != nil {
		return err
	}
	e.credDir = credDir
	e.cloudsFile = filepath.Join(credDir, "clouds.yaml")
	e.secureFile = filepath.Join(credDir, "secure.yaml")
	for path, v := range map[string]any{e.cloudsFile: doc, e.secureFile: map[string]any{"clouds": secure}} {
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

// openstack runs the openstack CLI (the lab's own clouds.yaml, no proxy)
// with commands one per line on stdin, in one process.
func (e *labEnv) openstack(ctx context.Context, cloud string, commands ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	// One command: as arguments; several: one per line on stdin (the
	// CLI's batch mode, which takes the cloud from $OS_CLOUD only).
	cmd := exec.CommandContext(ctx, "openstack")
	if len(commands) == 1 {
		cmd.Args = append(cmd.Args, strings.Fields(commands[0])...)
	} else {
		cmd.Stdin = strings.NewReader(strings.Join(commands, "\n") + "\n")
	}
	cmd.Env = append(cleanEnv(), "OS_CLIENT_CONFIG_FILE="+e.labClouds, "OS_CLOUD="+cloud)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, fmt.Errorf("openstack --os-cloud %s %q: %w: %s", cloud, commands, err, strings.TrimSpace(stderr.String()))
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

// listing is what the cloud holds of one run, read with the openstack CLI:
// "kind name (id)" per resource.
func (e *labEnv) listing(ctx context.Context, runID string) ([]string, error) {
	tenant := []string{"server list", "port list", "network list", "subnet list", "security group list", "keypair list", "server group list"}
	admin := []string{"flavor list --all"}
	var out []string
	for _, part := range []struct {
		cloud string
		cmds  []string
	}{{"asap2lab", tenant}, {"asap2lab-admin", admin}} {
		var lines []string
		for _, c := range part.cmds {
			lines = append(lines, c+" -f json")
		}
		// The CLI fails when another run deletes a flavor between its list
		// and its per-flavor extra-spec GET (404): ask again.
		var raw []byte
		var err error
		for attempt := 1; attempt <= 3; attempt++ {
			if raw, err = e.openstack(ctx, part.cloud, lines...); err == nil {
				break
			}
		}
		if err != nil {
			return nil, err
		}
		got, err := parseListings(raw, part.cmds, runID)
		if err != nil {
			return nil, fmt.Errorf("openstack --os-cloud %s: %w", part.cloud, err)
		}
		out = append(out, got...)
	}
	sort.Strings(out)
	return out, nil
}

// parseListings reads the output of the openstack CLI's batch mode (one
// JSON array per command, in order) and returns "kind name (id)" for every
// row whose name contains runID.
func parseListings(raw []byte, cmds []string, runID string) ([]string, error) {
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

// spec is one harness run of a row.
type spec struct {
	suite  string // smoke | perf
	labels string // Ginkgo label filter ("" = all)
	// edit changes the run's config (a copy of lab/harness.yaml).
	edit  func(cfg map[string]any)
	proxy *faultproxy.Injector // nil = no proxy
}

// harnessRun is a started harness subprocess.
type harnessRun struct {
	t       *testing.T
	env     *labEnv
	dir     string // the row's directory
	outDir  string // run.output_dir
	cfgPath string
	console string
	cmd     *exec.Cmd
	started time.Time
	before  map[int]bool // tool PIDs alive before the run
	done    chan struct{}
	waitErr error
	runDir  string
	RunID   string
}

func set(cfg map[string]any, path string, v any) {
	keys := strings.Split(path, ".")
	m := cfg
	for _, k := range keys[:len(keys)-1] {
		next, _ := m[k].(map[string]any)
		if next == nil {
			next = map[string]any{}
			m[k] = next
		}
		m = next
	}
	m[keys[len(keys)-1]] = v
}

// start writes the row's config and starts the suite binary.
func (e *labEnv) start(t *testing.T, name string, sp spec) *harnessRun {
	t.Helper()
	dir := filepath.Join(e.out, "rows", name)
	if err := os.RemoveAll(dir); err != nil { // a previous matrix in the same place
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := yaml.Unmarshal(e.base, &cfg); err != nil {
		t.Fatal(err)
	}
	r := &harnessRun{t: t, env: e, dir: dir, outDir: filepath.Join(dir, "out"), cfgPath: filepath.Join(dir, "harness.yaml"),
		console: filepath.Join(dir, "console.log"), done: make(chan struct{})}
	// Small guests: the matrix runs rows side by side on two hypervisors.
	set(cfg, "run.output_dir", r.outDir)
	set(cfg, "run.build_label", "fault matrix: "+name)
	set(cfg, "flavor.name", "faults")
	set(cfg, "flavor.vcpus", 2)
	set(cfg, "flavor.ram_mb", 1024)
	set(cfg, "traffic.profiles", []string{"tcp-p1", "udp-b0-p1"})
	set(cfg, "traffic.duration", "4s")
	set(cfg, "traffic.repeats", 1)
	if sp.edit != nil {
		sp.edit(cfg)
	}
	b, err := yaml.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(r.cfgPath, b, 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"-ginkgo.v", "-ginkgo.no-color", "-ginkgo.junit-report=" + filepath.Join(dir, "junit.xml"), "-test.timeout=20m"}
	if sp.labels != "" {
		args = append(args, "-ginkgo.label-filter="+sp.labels)
	}
	r.cmd = exec.Command(e.bins[sp.suite], args...)
	r.cmd.Dir = dir
	r.cmd.Env = append(cleanEnv(), "ASAP2E2E_CONFIG="+r.cfgPath, "OS_CLIENT_CONFIG_FILE="+e.cloudsFile, "OS_CLIENT_SECURE_FILE="+e.secureFile)
	if sp.proxy != nil {
		u, stop, err := (&faultproxy.Proxy{Injector: sp.proxy}).Listen("127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = stop() })
		r.cmd.Env = append(r.cmd.Env, "HTTP_PROXY="+u, "http_proxy="+u)
	}
	f, err := os.Create(r.console)
	if err != nil {
		t.Fatal(err)
	}
	r.cmd.Stdout, r.cmd.Stderr = f, f
	r.before = toolPIDs()
	r.started = time.Now()
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		r.waitErr = r.cmd.Wait()
		f.Close()
		close(r.done)
	}()
	t.Cleanup(func() {
		select {
		case <-r.done:
		default: // a failed row: do not leave the harness running
			_ = r.cmd.Process.Signal(syscall.SIGINT)
			select {
			case <-r.done:
			case <-time.After(5 * time.Minute):
				_ = r.cmd.Process.Kill()
			}
		}
	})
	return r
}

// poll calls cond every 250ms until it is true, the harness exited (then
// once more) or timeout passed.
func (r *harnessRun) poll(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		if cond() {
			return true
		}
		select {
		case <-r.done:
			return cond()
		case <-tick.C:
		}
		if time.Now().After(deadline) {
			return false
		}
	}
}

// findRunDir fills RunID and runDir once harness.log exists.
func (r *harnessRun) findRunDir() bool {
	if r.runDir != "" {
		return true
	}
	ents, _ := os.ReadDir(r.outDir)
	for _, e := range ents {
		if e.IsDir() {
			if _, err := os.Stat(filepath.Join(r.outDir, e.Name(), "harness.log")); err == nil {
				r.runDir, r.RunID = filepath.Join(r.outDir, e.Name()), e.Name()
				return true
			}
		}
	}
	return false
}

// Log is harness.log so far.
func (r *harnessRun) Log() string {
	if !r.findRunDir() {
		return ""
	}
	b, _ := os.ReadFile(filepath.Join(r.runDir, "harness.log"))
	return string(b)
}

// Console is the subprocess's stdout+stderr so far.
func (r *harnessRun) Console() string {
	b, _ := os.ReadFile(r.console)
	return string(b)
}

// waitLog waits until harness.log matches re; it fails the row when the
// phase never began.
func (r *harnessRun) waitLog(re string, timeout time.Duration) {
	r.t.Helper()
	rx := regexp.MustCompile(re)
	if !r.poll(timeout, func() bool { return rx.MatchString(r.Log()) }) {
		r.t.Fatalf("the phase never began: harness.log did not match %q within %s (exited: %v)\nlog tail:\n%s", re, timeout, r.exited(), tail(r.Log(), 15))
	}
}

func (r *harnessRun) exited() bool {
	select {
	case <-r.done:
		return true
	default:
		return false
	}
}

func (r *harnessRun) signal(sig os.Signal) {
	r.t.Helper()
	r.t.Logf("%s: sending %s to the harness (pid %d)", time.Now().Format("15:04:05"), sig, r.cmd.Process.Pid)
	if err := r.cmd.Process.Signal(sig); err != nil {
		r.t.Fatalf("signal %s: %v", sig, err)
	}
}

// wait waits for the harness to exit and returns its exit code (-1 when
// killed by a signal).
func (r *harnessRun) wait(timeout time.Duration) int {
	r.t.Helper()
	select {
	case <-r.done:
	case <-time.After(timeout):
		r.t.Fatalf("the harness did not exit within %s after the fault", timeout)
	}
	var ee *exec.ExitError
	if errors.As(r.waitErr, &ee) {
		return ee.ExitCode()
	}
	if r.waitErr != nil {
		r.t.Fatalf("waiting for the harness: %v", r.waitErr)
	}
	return 0
}

// topology reads topology.json of the run (nil before provisioning saved it).
func (r *harnessRun) topology() *topo {
	if !r.findRunDir() {
		return nil
	}
	b, err := os.ReadFile(filepath.Join(r.runDir, "topology.json"))
	if err != nil {
		return nil
	}
	var tp topo
	if json.Unmarshal(b, &tp) != nil {
		return nil
	}
	return &tp
}

type topo struct {
	Servers []struct {
		ID         string `json:"id"`
		Name       string `json:"name"`
		Hypervisor string `json:"hypervisor"`
		DataIP     string `json:"data_ip"`
		DataMAC    string `json:"data_mac"`
		DataPortID string `json:"data_port_id"`
	} `json:"servers"`
}

func (tp *topo) guestNetns(i int) string {
	if tp == nil || i >= len(tp.Servers) {
		return ""
	}
	return "asap2lab-vm-" + tp.Servers[i].ID
}

// proc is one process of a traffic or capture tool.
type proc struct {
	PID     int
	Comm    string
	Cmdline string
	Netns   string // name under /run/netns, "" when none (deleted or root)
}

func (p proc) String() string {
	return fmt.Sprintf("pid %d (%s) in netns %q: %s", p.PID, p.Comm, p.Netns, p.Cmdline)
}

var toolComms = map[string]bool{"iperf3": true, "tcpdump": true, "sockperf": true, "ping": true}

// procs lists the tool processes on this machine (hypervisors and guests
// are network namespaces of it).
func procs() []proc { return procsNamed(toolComms) }

// procsNamed lists the processes on this machine whose name is in comms.
func procsNamed(comms map[string]bool) []proc {
	nsByIno := map[uint64]string{}
	if ents, err := os.ReadDir("/run/netns"); err == nil {
		for _, e := range ents {
			var st syscall.Stat_t
			if syscall.Stat(filepath.Join("/run/netns", e.Name()), &st) == nil {
				nsByIno[st.Ino] = e.Name()
			}
		}
	}
	var out []proc
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
		if err != nil || !comms[strings.TrimSpace(string(comm))] {
			continue
		}
		cl, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		p := proc{PID: pid, Comm: strings.TrimSpace(string(comm)), Cmdline: strings.TrimSpace(strings.ReplaceAll(string(cl), "\x00", " "))}
		var st syscall.Stat_t
		if syscall.Stat(fmt.Sprintf("/proc/%d/ns/net", pid), &st) == nil {
			p.Netns = nsByIno[st.Ino]
		}
		out = append(out, p)
	}
	return out
}

func toolPIDs() map[int]bool {
	m := map[int]bool{}
	for _, p := range procs() {
		m[p.PID] = true
	}
	return m
}

// orphans lists tool processes started since the run began that belong to
// it: in one of its guests' namespaces, or naming its guests' MACs or data
// addresses (the hypervisors' captures filter on the MACs).
func (r *harnessRun) orphans(tp *topo) []proc {
	if tp == nil {
		return nil
	}
	var marks []string
	ns := map[string]bool{}
	for i, s := range tp.Servers {
		ns[tp.guestNetns(i)] = true
		marks = append(marks, s.DataMAC, s.DataIP+" ")
	}
	var out []proc
	for _, p := range procs() {
		if r.before[p.PID] {
			continue
		}
		mine := ns[p.Netns]
		for _, m := range marks {
			if m != "" && m != " " && strings.Contains(p.Cmdline+" ", m) {
				mine = true
			}
		}
		if mine {
			out = append(out, p)
		}
	}
	return out
}

// filesSearched counts the files secretsFound read, over all rows.
var filesSearched atomic.Int64

// secretsFound searches every file of the row (config, console, JUnit,
// harness.log, api.log, commands, results, reports, evidence) for the
// credentials the run was given.
func (r *harnessRun) secretsFound() []string {
	var found []string
	_ = filepath.WalkDir(r.dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return nil
		}
		filesSearched.Add(1)
		for what, s := range r.env.secrets {
			if len(s) >= 8 && bytes.Contains(data, []byte(s)) {
				rel, _ := filepath.Rel(r.env.out, path)
				found = append(found, fmt.Sprintf("%s in %s", what, rel))
			}
		}
		return nil
	})
	return found
}

// sweep runs the sweeper on the run (dry run unless del) and returns its
// exit code and stderr.
func (r *harnessRun) sweep(del bool) (int, string) {
	args := []string{"--config", r.cfgPath, "--run-id", r.RunID}
	if del {
		args = append(args, "--delete")
	}
	cmd := exec.Command(r.env.bins["sweeper"], args...)
	cmd.Env = append(cleanEnv(), "OS_CLIENT_CONFIG_FILE="+r.env.cloudsFile, "OS_CLIENT_SECURE_FILE="+r.env.secureFile)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	_ = os.WriteFile(filepath.Join(r.dir, fmt.Sprintf("sweeper-delete-%v.json", del)), stdout.Bytes(), 0o644)
	_ = os.WriteFile(filepath.Join(r.dir, fmt.Sprintf("sweeper-delete-%v.log", del)), stderr.Bytes(), 0o644)
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), stderr.String()
	}
	if err != nil {
		return -1, err.Error()
	}
	return 0, stderr.String()
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// grepLine returns the first line of s matching re ("" when none).
func grepLine(s, re string) string {
	rx := regexp.MustCompile(re)
	sc := bufio.NewScanner(strings.NewReader(s))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if rx.MatchString(sc.Text()) {
			return strings.TrimSpace(sc.Text())
		}
	}
	return ""
}
