package faults

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/faultproxy"
	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// Row is one line of the matrix table.
type Row struct {
	Name      string  `json:"name"`
	Fault     string  `json:"fault"`
	Phase     string  `json:"phase"`
	Outcome   string  `json:"outcome"`
	Leftovers string  `json:"leftovers"`
	Seconds   float64 `json:"seconds"`
	Passed    bool    `json:"passed"`
	RunID     string  `json:"run_id,omitempty"`
	// FaultToFailureSeconds is how long the harness took from the fault to
	// its failure (rows of faults that do not stop the run at once).
	FaultToFailureSeconds *float64 `json:"fault_to_failure_seconds,omitempty"`
}

var (
	rowsMu sync.Mutex
	rows   []Row
)

// record registers the row; its Passed and Seconds are filled when the
// subtest ends.
func record(t *testing.T, fault, phase string) *Row {
	r := &Row{Name: t.Name(), Fault: fault, Phase: phase}
	start := time.Now()
	t.Cleanup(func() {
		r.Seconds = time.Since(start).Round(time.Second).Seconds()
		r.Passed = !t.Failed()
		rowsMu.Lock()
		rows = append(rows, *r)
		rowsMu.Unlock()
	})
	return r
}

func TestMain(m *testing.M) {
	start := time.Now()
	code := m.Run()
	if theEnv != nil && theEnv.credDir != "" {
		_ = os.RemoveAll(theEnv.credDir)
	}
	if theEnv != nil && len(rows) > 0 {
		if err := writeMatrix(theEnv.out, time.Since(start)); err != nil {
			fmt.Fprintln(os.Stderr, "writing the matrix:", err)
			code = 1
		}
	}
	os.Exit(code)
}

func writeMatrix(dir string, total time.Duration) error {
	sort.Slice(rows, func(i, j int) bool { return rows[i].Name < rows[j].Name })
	var b strings.Builder
	fmt.Fprintf(&b, "# Fault matrix on the lab (%s, %d rows, %s wall time)\n\n", time.Now().UTC().Format(time.RFC3339), len(rows), total.Round(time.Second))
	b.WriteString("| fault | phase | outcome | fault → failure s | leftovers | s | pass |\n|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		pass := "yes"
		if !r.Passed {
			pass = "**NO**"
		}
		f2f := "–"
		if r.FaultToFailureSeconds != nil {
			f2f = fmt.Sprintf("%.1f", *r.FaultToFailureSeconds)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %.0f | %s |\n", r.Fault, r.Phase, mdCell(r.Outcome), f2f, mdCell(r.Leftovers), r.Seconds, pass)
	}
	var kinds []string
	for what := range theEnv.secrets {
		kinds = append(kinds, what)
	}
	sort.Strings(kinds)
	leaked := 0
	for _, r := range rows {
		if strings.Contains(r.Leftovers, "SECRETS") {
			leaked++
		}
	}
	fmt.Fprintf(&b, "\nSecrets: %s (given through secure.yaml; clouds.yaml holds none) searched in %d files "+
		"(configs, console, JUnit, harness.log, api.log, commands, results, reports, evidence, sweeper output) of all rows: found in %d rows.\n",
		strings.Join(kinds, ", "), filesSearched.Load(), leaked)
	if err := os.WriteFile(filepath.Join(dir, "matrix.md"), []byte(b.String()), 0o644); err != nil {
		return err
	}
	js, _ := json.MarshalIndent(rows, "", "  ")
	fmt.Fprint(os.Stderr, "\n"+b.String())
	return os.WriteFile(filepath.Join(dir, "matrix.json"), append(js, '\n'), 0o644)
}

func mdCell(s string) string { return strings.ReplaceAll(strings.ReplaceAll(s, "|", "\\|"), "\n", " ") }

// ending checks what every row must end with: nothing of the run in the
// cloud (openstack CLI), no orphan tool process, no secret in any file.
func ending(t *testing.T, r *harnessRun, row *Row) {
	t.Helper()
	row.RunID = r.RunID
	if r.RunID == "" {
		r.findRunDir()
		row.RunID = r.RunID
	}
	if r.RunID == "" {
		t.Fatalf("the run wrote no harness.log under %s", r.outDir)
	}
	left, err := r.env.listing(context.Background(), r.RunID)
	if err != nil {
		t.Fatalf("listing run %s: %v", r.RunID, err)
	}
	row.Leftovers = "none"
	if len(left) > 0 {
		row.Leftovers = strings.Join(left, "; ")
		t.Errorf("run %s left in the cloud (openstack CLI):\n  %s", r.RunID, strings.Join(left, "\n  "))
	}
	if o := r.orphans(r.topology()); len(o) > 0 {
		row.Leftovers += fmt.Sprintf("; %d orphan processes", len(o))
		for _, p := range o {
			t.Errorf("orphan process of run %s: %s", r.RunID, p)
		}
	}
	if s := r.secretsFound(); len(s) > 0 {
		row.Leftovers += "; SECRETS: " + strings.Join(s, ", ")
		t.Errorf("credentials found in the run's files: %v", s)
	}
}

func mustContain(t *testing.T, what, text, re string) string {
	t.Helper()
	line := grepLine(text, re)
	if line == "" {
		t.Errorf("%s has no line matching %q; tail:\n%s", what, re, tail(text, 25))
	}
	return line
}

// excerpt is the first match of re in text with up to before characters of
// context ahead of it, cut to n characters ("" when nothing matches).
func excerpt(text, re string, before, n int) string {
	loc := regexp.MustCompile(re).FindStringIndex(text)
	if loc == nil {
		return ""
	}
	start := max(0, loc[0]-before)
	if i := strings.LastIndexByte(text[:loc[0]], '\n'); i >= start {
		start = i + 1
	}
	out := text[start:]
	if i := strings.IndexByte(out, '\n'); i >= 0 {
		out = out[:i]
	}
	if start > 0 && text[start-1] != '\n' {
		out = "…" + out
	}
	return shorten(strings.TrimSpace(out), n)
}

func shorten(s string, n int) string {
	s = regexp.MustCompile(`^\S+Z |^\[\d\d:\d\d:\d\d\] `).ReplaceAllString(s, "")
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

const (
	reProvisioning = `created network `
	reBoot         = `waiting for servers ACTIVE`
	reSSHWait      = `waiting for SSH on guest`
	reChecks       = `offload checks during a sustained`
	reTeardown     = `teardown: .* deleted`
	reInterrupted  = `interrupted \((interrupt|terminated)\)`
)

func TestFaults(t *testing.T) {
	env := lab(t)
	t.Logf("matrix output: %s", env.out)

	// The secret search must be able to fail: a file quoting each secret
	// is found (then removed, so no row counts it).
	canary := &harnessRun{env: env, dir: filepath.Join(env.out, "canary")}
	if err := os.MkdirAll(canary.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for what, sec := range env.secrets {
		if err := os.WriteFile(filepath.Join(canary.dir, "leak.txt"), []byte("x "+sec+" y"), 0o644); err != nil {
			t.Fatal(err)
		}
		if got := canary.secretsFound(); len(got) != 1 {
			t.Fatalf("the secret search does not find the %s in a file quoting it: %v", what, got)
		}
	}
	if err := os.RemoveAll(canary.dir); err != nil {
		t.Fatal(err)
	}
	filesSearched.Store(0)

	signalRows := []struct {
		name, phase, suite, labels, trigger string
		sig                                 syscall.Signal
	}{ // row names end in the signal's name
		{"signal/provisioning-SIGINT", "provisioning", "smoke", "", reProvisioning, syscall.SIGINT},
		{"signal/boot-SIGTERM", "waiting for ACTIVE", "smoke", "", reBoot, syscall.SIGTERM},
		{"signal/ssh-wait-SIGINT", "SSH wait", "smoke", "", reSSHWait, syscall.SIGINT},
		{"signal/traffic-SIGTERM", "traffic window (iperf3 running)", "perf", "throughput", "", syscall.SIGTERM},
		{"signal/checks-SIGINT", "offload checks", "perf", "offload", reChecks, syscall.SIGINT},
	}
	for _, sr := range signalRows {
		t.Run(sr.name, func(t *testing.T) {
			t.Parallel()
			row := record(t, sr.name[strings.LastIndexByte(sr.name, '-')+1:], sr.phase)
			r := env.start(t, strings.ReplaceAll(sr.name, "/", "-"), spec{suite: sr.suite, labels: sr.labels})
			if sr.trigger != "" {
				r.waitLog(sr.trigger, 6*time.Minute)
			} else {
				r.waitIperfClient(t, 8*time.Minute)
			}
			r.signal(sr.sig)
			code := r.wait(5 * time.Minute)
			log := r.Log()
			mustContain(t, "harness.log", log, reInterrupted)
			if code == 0 {
				t.Errorf("the interrupted run exited 0")
			}
			td := strings.Count(log, "teardown: ")
			row.Outcome = fmt.Sprintf("exit %d; %d deletes ran; %s", code, td, shorten(grepLine(log, `wall time by phase`), 120))
			ending(t, r, row)
		})
	}

	t.Run("signal/teardown-SIGTERM", func(t *testing.T) {
		t.Parallel()
		row := record(t, "SIGTERM (once)", "teardown (after an SSH failure)")
		r := env.start(t, "signal-teardown-SIGTERM", spec{suite: "smoke", edit: func(c map[string]any) {
			set(c, "guest_access.user", "asap2e2e-nosuchuser")
			set(c, "intervals.ssh_ready", map[string]any{"timeout": "10s", "poll": "1s"})
		}})
		r.waitLog(reTeardown, 8*time.Minute)
		r.signal(syscall.SIGTERM)
		code := r.wait(5 * time.Minute)
		log := r.Log()
		mustContain(t, "harness.log", log, reInterrupted)
		row.Outcome = fmt.Sprintf("exit %d; %d deletes ran after the signal; %s", code, strings.Count(log, "teardown: "),
			shorten(grepLine(log, `teardown: .*(context canceled|interrupt)`), 140))
		ending(t, r, row)
	})

	t.Run("signal/teardown-double-SIGINT", func(t *testing.T) {
		t.Parallel()
		row := record(t, "SIGINT, then SIGINT again", "teardown")
		r := env.start(t, "signal-teardown-double-SIGINT", spec{suite: "smoke"})
		r.waitLog(reSSHWait, 6*time.Minute)
		r.signal(syscall.SIGINT)
		r.waitLog(reTeardown, 3*time.Minute)
		r.signal(syscall.SIGINT)
		code := r.wait(5 * time.Minute)
		console := r.Console()
		said := mustContain(t, "console", console, `interrupted again .*(NOT DELETED|nothing of run)`)
		sweepSaid := strings.Contains(said, "tools/sweeper --config "+r.cfgPath+" --run-id "+r.RunID+" --delete")
		left, err := env.listing(context.Background(), r.RunID)
		if err != nil {
			t.Fatal(err)
		}
		if len(left) > 0 && !sweepSaid {
			t.Errorf("resources were abandoned but the harness gave no sweeper command: %q", said)
		}
		for _, l := range left { // every leftover must have been named
			f := strings.Fields(l)
			if len(f) >= 2 && !strings.Contains(said, f[len(f)-2]) {
				t.Errorf("left %s, not named in the harness's message", l)
			}
		}
		swept := ""
		if len(left) > 0 {
			rc, msg := r.sweep(true)
			if rc != 0 {
				t.Errorf("sweeper --delete exit %d: %s", rc, tail(msg, 10))
			}
			swept = fmt.Sprintf("; sweeper removed %d", len(left))
		}
		row.Outcome = fmt.Sprintf("exit %d; harness named %d not deleted + sweeper command%s", code, len(left), swept)
		ending(t, r, row)
		row.Leftovers = fmt.Sprintf("before sweep: %d (%s); after: %s", len(left), strings.Join(left, ", "), row.Leftovers)
	})

	apiRows := []struct {
		name, fault, phase string
		rules              []faultproxy.Rule
		wantLog            string // a line the harness must print
	}{
		{"api/create-500-server", "HTTP 500 on create (POST /servers)", "provisioning",
			[]faultproxy.Rule{{Name: "nova-create-500", Method: "POST", Path: `/servers$`, Action: faultproxy.ActionStatus, Status: 500, Times: 1}},
			`500.*injected by faultproxy`},
		{"api/create-503-port", "HTTP 503 on create (POST /v2.0/ports)", "provisioning",
			[]faultproxy.Rule{{Name: "neutron-port-create-503", Method: "POST", Path: `/v2.0/ports$`, Action: faultproxy.ActionStatus, Status: 503, Times: 1}},
			`503.*injected by faultproxy`},
		{"api/create-409-subnet", "HTTP 409 on create (POST /v2.0/subnets)", "provisioning",
			[]faultproxy.Rule{{Name: "neutron-subnet-create-409", Method: "POST", Path: `/v2.0/subnets$`, Action: faultproxy.ActionStatus, Status: 409, Times: 1}},
			`409.*injected by faultproxy`},
	}
	for _, ar := range apiRows {
		t.Run(ar.name, func(t *testing.T) {
			t.Parallel()
			row := record(t, ar.fault, ar.phase)
			in := newInjector(t, ar.rules)
			r := env.start(t, strings.ReplaceAll(ar.name, "/", "-"), spec{suite: "smoke", proxy: in})
			code := r.wait(8 * time.Minute)
			if code == 0 {
				t.Errorf("the run passed despite the fault")
			}
			if u := in.Unfired(); len(u) > 0 {
				t.Errorf("faults never fired: %v", u)
			}
			mustContain(t, "harness output", r.Log()+r.Console(), ar.wantLog)
			row.Outcome = fmt.Sprintf("exit %d, faults fired %d; %s", code, len(in.Hits()), excerpt(r.Log()+r.Console(), ar.wantLog, 90, 200))
			ending(t, r, row)
		})
	}

	t.Run("api/delete-5xx-409-slow-drop", func(t *testing.T) {
		t.Parallel()
		row := record(t, "503 + 500 + 409 on delete, 3s answers (poll 1s), dropped connection", "wait for ACTIVE, teardown, leak check")
		data, err := os.ReadFile(filepath.Join(env.root, "e2e", "faultproxy", "testdata", "plan-lab-delete-faults.json"))
		if err != nil {
			t.Fatal(err)
		}
		plan, err := faultproxy.Parse(data)
		if err != nil {
			t.Fatal(err)
		}
		in := newInjector(t, plan.Rules)
		r := env.start(t, "api-delete-faults", spec{suite: "smoke", proxy: in})
		r.waitLog(reSSHWait, 8*time.Minute)
		r.signal(syscall.SIGINT)
		code := r.wait(6 * time.Minute)
		if u := in.Unfired(); len(u) > 0 {
			t.Errorf("faults never fired: %v", u)
		}
		log := r.Log()
		// net/http itself resends an idempotent request once when a reused
		// connection drops before the answer; the second drop (fresh
		// connection) must reach the harness's retrying transport.
		mustContain(t, "harness.log", log, `DELETE .*/v2.0/ports/.*503 Service Unavailable; retry 1`)
		mustContain(t, "harness.log", log, `GET .*/v2.0/ports[^ ]*: (connection reset|connection dropped|broken pipe).*; retry 1`)
		retries := strings.Count(log, "; retry ")
		failed := grepLine(log, `teardown: .*: `)
		row.Outcome = fmt.Sprintf("exit %d; %d faults fired (%s); %d retries logged; first failed delete: %s",
			code, len(in.Hits()), hitNames(in), retries, orNone(shorten(failed, 140)))
		ending(t, r, row)
	})

	t.Run("server/error", func(t *testing.T) {
		t.Parallel()
		row := record(t, "server goes to ERROR (lab driver refuses flavor extra spec lab:plug=bogus)", "waiting for ACTIVE")
		r := env.start(t, "server-error", spec{suite: "smoke", edit: func(c map[string]any) {
			set(c, "flavor.extra_specs", map[string]any{"lab:plug": "bogus"})
		}})
		code := r.wait(8 * time.Minute)
		if code == 0 {
			t.Errorf("the run passed with a server in ERROR")
		}
		mustContain(t, "harness output", r.Log()+r.Console(), `ERROR`)
		row.Outcome = fmt.Sprintf("exit %d; %s", code, excerpt(r.Log()+r.Console(), `ERROR`, 60, 220))
		ending(t, r, row)
	})

	t.Run("ssh/guest-unreachable", func(t *testing.T) {
		t.Parallel()
		row := record(t, "guest never reachable over SSH (wrong user)", "SSH wait")
		r := env.start(t, "ssh-unreachable", spec{suite: "smoke", edit: func(c map[string]any) {
			set(c, "guest_access.user", "asap2e2e-nosuchuser")
			set(c, "intervals.ssh_ready", map[string]any{"timeout": "15s", "poll": "2s"})
		}})
		code := r.wait(8 * time.Minute)
		if code == 0 {
			t.Errorf("the run passed without reaching its guests")
		}
		mustContain(t, "console", r.Console(), `ssh to guest`)
		row.Outcome = fmt.Sprintf("exit %d; %s", code, excerpt(r.Console(), `not reachable within`, 0, 220))
		ending(t, r, row)
	})

	t.Run("ssh/drop-during-iperf3", func(t *testing.T) {
		t.Parallel()
		row := record(t, "SSH connection to the client guest dropped (ss -K)", "traffic window")
		r := env.start(t, "ssh-drop", spec{suite: "perf", labels: "throughput", edit: func(c map[string]any) {
			set(c, "run.keep_topology", true)
			set(c, "traffic.profiles", []string{"tcp-p1"})
			set(c, "traffic.duration", "20s")
		}})
		t.Cleanup(func() {
			if r.RunID != "" {
				r.sweep(true)
			}
		})
		p := r.waitIperfClient(t, 8*time.Minute)
		tp := r.topology()
		// Kill every established SSH socket of the client guest: the
		// harness's connection drops mid-iperf3.
		out, err := exec.Command("ip", "netns", "exec", p.Netns, "ss", "-K", "-tn", "state", "established", "( sport = :22 )").CombinedOutput()
		if err != nil {
			t.Fatalf("ss -K in %s: %v: %s", p.Netns, err, out)
		}
		t.Logf("dropped SSH sockets in %s: %s", p.Netns, strings.TrimSpace(string(out)))
		code := r.wait(6 * time.Minute)
		// keep_topology: the guests are still there; nothing of the
		// harness may still run in them.
		var still []proc
		r.poll(30*time.Second, func() bool {
			still = nil
			for _, q := range procs() {
				if (q.Netns == tp.guestNetns(0) || q.Netns == tp.guestNetns(1)) && q.Comm == "iperf3" {
					still = append(still, q)
				}
			}
			return len(still) == 0
		})
		for _, q := range still {
			t.Errorf("iperf3 left running in a guest after the dropped connection: %s", q)
		}
		said := excerpt(r.Log(), `FAILED`, 0, 40) + " " + excerpt(r.Log(), `no exit status|connection lost|EOF`, 0, 120)
		rc, msg := r.sweep(true)
		if rc != 0 {
			t.Errorf("sweeper --delete of the kept topology: exit %d: %s", rc, tail(msg, 10))
		}
		row.Outcome = fmt.Sprintf("exit %d; iperf3 left in guests: %d; %s; kept topology swept (exit %d)", code, len(still), said, rc)
		ending(t, r, row)
	})

	t.Run("iperf3/server-busy", func(t *testing.T) {
		t.Parallel()
		row := record(t, "iperf3 peer answers \"the server is busy\"", "traffic window")
		// Deterministic by construction, not by timing: the row gives its run
		// a traffic port of its own and, before the harness starts, both
		// hypervisors' br-int drop TCP to that port. The harness's client
		// (guest 1) therefore cannot reach its server (guest 0) until this
		// row has occupied the server from guest 0 itself (a local
		// connection that never crosses OVS) and lifted the gate; the
		// client's next SYN retransmission then meets a busy server.
		const port = 5391
		gate := env.gatePort(t, port)
		r := env.start(t, "iperf3-busy", spec{suite: "perf", labels: "throughput", edit: func(c map[string]any) {
			set(c, "traffic.profiles", []string{"tcp-p1"})
			set(c, "traffic.port", port)
		}})
		var srv proc
		listen := fmt.Sprintf(" -p %d", port)
		if !r.poll(8*time.Minute, func() bool {
			for _, q := range procs() {
				if q.Comm == "iperf3" && strings.Contains(q.Cmdline, " -s") && strings.Contains(q.Cmdline, listen) {
					srv = q
					return true
				}
			}
			return false
		}) {
			t.Fatalf("the harness's iperf3 server never started; log tail:\n%s", tail(r.Log(), 10))
		}
		tp := r.topology()
		if tp == nil || len(tp.Servers) < 1 {
			t.Fatalf("no topology.json with the servers although the iperf3 server runs")
		}
		r.occupy(t, srv.Netns, tp.Servers[0].DataIP, port)
		gate.lift(t)
		code := r.wait(6 * time.Minute)
		mustContain(t, "harness output", r.Log()+r.Console(), `server is busy`)
		said := excerpt(r.Log(), `iperf3 reported: .*server is busy`, 0, 200)
		if code == 0 {
			t.Errorf("the run passed although its peer was busy")
		}
		row.Outcome = fmt.Sprintf("exit %d; %s", code, shorten(said, 170))
		ending(t, r, row)
	})

	t.Run("kill9/mid-run", func(t *testing.T) {
		t.Parallel()
		row := record(t, "SIGKILL (kill -9)", "traffic, after the first profile")
		r := env.start(t, "kill9", spec{suite: "perf", labels: "throughput", edit: func(c map[string]any) {
			set(c, "traffic.profiles", []string{"tcp-p1", "udp-b0-p1", "tcp-p15"})
		}})
		var n int
		if !r.poll(10*time.Minute, func() bool {
			if !r.findRunDir() {
				return false
			}
			res, err := results.Load(filepath.Join(r.runDir, "results.json"))
			if err != nil {
				return false
			}
			n = 0
			for _, p := range res.Profiles {
				if len(p.Runs) > 0 {
					n++
				}
			}
			return n >= 1
		}) {
			t.Fatalf("no profile finished; log tail:\n%s", tail(r.Log(), 10))
		}
		r.signal(syscall.SIGKILL)
		code := r.wait(time.Minute)
		res, err := results.Load(filepath.Join(r.runDir, "results.json"))
		if err != nil {
			t.Fatalf("results.json after kill -9 does not load: %v", err)
		}
		var kept []string
		for _, p := range res.Profiles {
			if len(p.Runs) > 0 {
				kept = append(kept, p.ID)
			}
		}
		if len(kept) < n {
			t.Errorf("results.json holds %d finished profiles, %d were finished before the kill", len(kept), n)
		}
		before, err := env.listing(context.Background(), r.RunID)
		if err != nil {
			t.Fatal(err)
		}
		_ = os.WriteFile(filepath.Join(r.dir, "listing-before-sweep.txt"), []byte(strings.Join(before, "\n")+"\n"), 0o644)
		rc, msg := r.sweep(true)
		if rc != 0 {
			t.Errorf("sweeper --delete exit %d: %s", rc, tail(msg, 10))
		}
		row.Outcome = fmt.Sprintf("exit %d; results.json loads with %d finished profile(s) %v; sweeper --delete exit %d", code, len(kept), kept, rc)
		ending(t, r, row)
		row.Leftovers = fmt.Sprintf("before sweep: %d resources; after: %s", len(before), row.Leftovers)
	})

	dataPathRows(t, env) // issue 14: vanish_test.go
}

func newInjector(t *testing.T, rules []faultproxy.Rule) *faultproxy.Injector {
	t.Helper()
	in, err := faultproxy.NewInjector(faultproxy.Plan{Rules: rules}, func(h faultproxy.Hit) {
		t.Logf("fault %s: %s %s", h.Rule, h.Method, h.URL)
	})
	if err != nil {
		t.Fatal(err)
	}
	return in
}

func hitNames(in *faultproxy.Injector) string {
	seen := map[string]int{}
	var order []string
	for _, h := range in.Hits() {
		if seen[h.Rule] == 0 {
			order = append(order, h.Rule)
		}
		seen[h.Rule]++
	}
	var parts []string
	for _, n := range order {
		parts = append(parts, fmt.Sprintf("%s×%d", n, seen[n]))
	}
	return strings.Join(parts, ", ")
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// waitIperfClient waits until the run's iperf3 client runs (a traffic
// window has begun) and returns it.
func (r *harnessRun) waitIperfClient(t *testing.T, timeout time.Duration) proc {
	t.Helper()
	var got proc
	if !r.poll(timeout, func() bool {
		tp := r.topology()
		if tp == nil || len(tp.Servers) < 2 {
			return false
		}
		for _, p := range procs() {
			if p.Comm == "iperf3" && strings.Contains(p.Cmdline, "-c "+tp.Servers[0].DataIP) {
				got = p
				return true
			}
		}
		return false
	}) {
		t.Fatalf("no iperf3 client of the run appeared within %s; log tail:\n%s", timeout, tail(r.Log(), 10))
	}
	return got
}

// occupy connects a long iperf3 test to the harness's server from inside
// netns, retrying while the server is not listening yet, and returns once
// the connection holds the server; the process is this test's child,
// ended by PID when the row ends. The caller makes sure the harness's own
// client cannot arrive first (see gatePort).
func (r *harnessRun) occupy(t *testing.T, netns, addr string, port int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for attempt := 1; time.Now().Before(deadline); attempt++ {
		cmd := exec.Command("ip", "netns", "exec", netns, "iperf3", "-c", addr, "-p", strconv.Itoa(port), "-t", "60", "--connect-timeout", "500")
		f, err := os.Create(filepath.Join(r.dir, fmt.Sprintf("stray-client-%d.log", attempt)))
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stdout, cmd.Stderr = f, f
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan struct{})
		go func() { _ = cmd.Wait(); f.Close(); close(exited) }()
		select {
		case <-exited: // refused: the server does not listen yet
			time.Sleep(250 * time.Millisecond)
			continue
		case <-time.After(1500 * time.Millisecond):
			t.Logf("stray iperf3 client (pid %d) occupies %s:%d", cmd.Process.Pid, addr, port)
			t.Cleanup(func() {
				select {
				case <-exited:
				default:
					_ = cmd.Process.Kill()
					<-exited
				}
			})
			return
		}
	}
	t.Fatalf("could not occupy the harness's iperf3 server at %s:%d from %s; the stray client's logs are in %s", addr, port, netns, r.dir)
}

// portGate drops TCP to one port in br-int of both lab hypervisors.
type portGate struct {
	env    *labEnv
	cookie string
	lifted bool
}

// gatePort makes both hypervisors' br-int drop every TCP segment to port
// (an OpenFlow rule above all of Neutron's, with a cookie of its own) until
// lift; the rule is removed when the test ends in any case.
func (e *labEnv) gatePort(t *testing.T, port int) *portGate {
	t.Helper()
	g := &portGate{env: e, cookie: fmt.Sprintf("0x%x", 0xfa0000+port)}
	flow := fmt.Sprintf("cookie=%s,table=0,priority=65535,tcp,tp_dst=%d,actions=drop", g.cookie, port)
	for _, hv := range []string{"1", "2"} {
		if out, err := e.hvExec(hv, "ovs-ofctl", "-O", "OpenFlow13", "add-flow", "br-int", flow); err != nil {
			t.Fatalf("hv%s: ovs-ofctl add-flow br-int %q: %v: %s", hv, flow, err, out)
		}
	}
	t.Logf("br-int of both hypervisors drops TCP to port %d (cookie %s)", port, g.cookie)
	t.Cleanup(func() {
		if !g.lifted {
			g.lift(t)
		}
	})
	return g
}

// lift removes the gate's rule from both hypervisors.
func (g *portGate) lift(t *testing.T) {
	t.Helper()
	g.lifted = true
	for _, hv := range []string{"1", "2"} {
		if out, err := g.env.hvExec(hv, "ovs-ofctl", "-O", "OpenFlow13", "del-flows", "br-int", "cookie="+g.cookie+"/-1"); err != nil {
			t.Errorf("hv%s: ovs-ofctl del-flows br-int cookie=%s/-1: %v: %s", hv, g.cookie, err, out)
		}
	}
	t.Logf("gate on port cookie %s lifted", g.cookie)
}

// hvExec runs a command inside lab hypervisor n (lab/lib/hv-exec).
func (e *labEnv) hvExec(n string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(e.root, "lab", "lib", "hv-exec"), append([]string{n}, args...)...)
	return cmd.CombinedOutput()
}
