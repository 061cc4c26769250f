package faults

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/mosk-qa/asap2-e2e/e2e/faultproxy"
	"github.com/mosk-qa/asap2-e2e/e2e/results"
	"github.com/mosk-qa/asap2-e2e/lab/faultlab"
)

// fixturesServerGroup is the kind's word in harness.log's "created KIND NAME (ID)".
const fixturesServerGroup = "server_group"

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
	t.Logf("matrix output: %s", env.Out)

	// The secret search must be able to fail: a file quoting each secret
	// is found (then removed, so no row counts it).
	canary := filepath.Join(env.Out, "canary")
	if err := os.MkdirAll(canary, 0o755); err != nil {
		t.Fatal(err)
	}
	for what, sec := range env.Secrets {
		if err := os.WriteFile(filepath.Join(canary, "leak.txt"), []byte("x "+sec+" y"), 0o644); err != nil {
			t.Fatal(err)
		}
		if got := env.SecretsFound(canary); len(got) != 1 {
			t.Fatalf("the secret search does not find the %s in a file quoting it: %v", what, got)
		}
	}
	if err := os.RemoveAll(canary); err != nil {
		t.Fatal(err)
	}
	env.FilesSearched.Store(0)

	// Issue 32: one hypervisor's nova-compute hangs (SIGSTOP of its process
	// group) just before the run creates its servers. The scheduler still
	// sends a build there (Nova lists the service up for service_down_time,
	// 60 s); the wait gives up at its bound and must name the service and
	// the host, from Placement's allocation and Nova's service list, and
	// the run must leave nothing. Not parallel: every build sent to that
	// host would stall, the other rows' too (parallel rows wait until the
	// sequential ones are done).
	t.Run("nova/compute-frozen", func(t *testing.T) {
		hv := env.Hypervisors[len(env.Hypervisors)-1]
		host := faultlab.NovaComputeHost(hv)
		row := matrix.Record(t, "nova-compute of "+host+" stops answering (SIGSTOP), before the servers are created", "provisioning: waiting for a host / ACTIVE")
		r := env.Start(t, "nova-compute-frozen", faultlab.Spec{Suite: "smoke", Edit: func(c map[string]any) {
			// Short of service_down_time: the cause must be named from the
			// heartbeats before Nova lists the service down.
			faultlab.Set(c, "intervals.server_active", map[string]any{"timeout": "45s", "poll": "2s"})
		}})
		r.WaitLog(`created `+fixturesServerGroup+` `, faultlab.ReachEarlyPhase)
		frozen := env.FreezeNovaCompute(t, hv)
		code := r.Wait(faultlab.RunToEnd)
		frozen.Resume(t)
		if err := env.WaitServiceUp(context.Background(), "nova-compute", host, faultlab.ServiceBackUp); err != nil {
			t.Errorf("after the row: %v (the rows after this one would stall)", err)
		}
		log := r.Log() + r.Console()
		if code == 0 {
			t.Errorf("the run passed with nova-compute of %s stopped", host)
		}
		said := faultlab.MustContain(t, "harness output", log, `stays BUILD/[a-z_]+: the scheduler claimed host `+regexp.QuoteMeta(host)+
			` \([^)]*\), whose nova-compute is (down in Nova's service list|up in Nova's service list \([^)]*\) but has not reported for \d+ s)`)
		if i := strings.LastIndex(said, "; server "); i >= 0 { // the cause, not the wait's start
			said = said[i+2:]
		}
		row.Outcome = fmt.Sprintf("exit %d; %s; teardown: %d deletes, %d failed", code, faultlab.Shorten(said, 320),
			strings.Count(log, "teardown: "), len(faultlab.TeardownFailures(r.Log())))
		faultlab.Ending(t, r, row)
	})

	serviceRows(t, env) // services_test.go: neutron-server, nova-api, ovs-vswitchd, a full output directory

	signalRows := []struct {
		name, phase, suite, labels, trigger string
		sig                                 syscall.Signal
		load                                faultlab.RowLoad
	}{ // row names end in the signal's name
		{"signal/provisioning-SIGINT", "provisioning", "smoke", "", reProvisioning, syscall.SIGINT, faultlab.Light},
		{"signal/boot-SIGTERM", "waiting for ACTIVE", "smoke", "", reBoot, syscall.SIGTERM, faultlab.Light},
		{"signal/ssh-wait-SIGINT", "SSH wait", "smoke", "", reSSHWait, syscall.SIGINT, faultlab.Light},
		{"signal/traffic-SIGTERM", "traffic window (iperf3 running)", "perf", "throughput", "", syscall.SIGTERM, faultlab.Traffic},
		// the checks' sustained flow is a traffic window
		{"signal/checks-SIGINT", "offload checks", "perf", "offload", reChecks, syscall.SIGINT, faultlab.Traffic},
	}
	for _, sr := range signalRows {
		t.Run(sr.name, func(t *testing.T) {
			env.Parallel(t, sr.load)
			row := matrix.Record(t, sr.name[strings.LastIndexByte(sr.name, '-')+1:], sr.phase)
			r := env.Start(t, strings.ReplaceAll(sr.name, "/", "-"), faultlab.Spec{Suite: sr.suite, Labels: sr.labels})
			if sr.trigger != "" {
				r.WaitLog(sr.trigger, faultlab.ReachEarlyPhase)
			} else {
				r.WaitIperfClient(t, faultlab.ReachTraffic)
			}
			r.Signal(sr.sig)
			code := r.Wait(faultlab.ExitAfterSignal)
			log := r.Log()
			faultlab.MustContain(t, "harness.log", log, reInterrupted)
			if code == 0 {
				t.Errorf("the interrupted run exited 0")
			}
			td := strings.Count(log, "teardown: ")
			row.Outcome = fmt.Sprintf("exit %d; %d deletes ran; %s", code, td, faultlab.Shorten(faultlab.GrepLine(log, `wall time by phase`), 120))
			faultlab.Ending(t, r, row)
		})
	}

	t.Run("signal/teardown-SIGTERM", func(t *testing.T) {
		env.Parallel(t, faultlab.Light)
		row := matrix.Record(t, "SIGTERM (once)", "teardown (after an SSH failure)")
		r := env.Start(t, "signal-teardown-SIGTERM", faultlab.Spec{Suite: "smoke", Edit: func(c map[string]any) {
			faultlab.Set(c, "guest_access.user", "asap2e2e-nosuchuser")
			faultlab.Set(c, "intervals.ssh_ready", map[string]any{"timeout": "10s", "poll": "1s"})
		}})
		r.WaitLog(reTeardown, faultlab.ReachTraffic)
		r.Signal(syscall.SIGTERM)
		code := r.Wait(faultlab.ExitAfterSignal)
		log := r.Log()
		faultlab.MustContain(t, "harness.log", log, reInterrupted)
		row.Outcome = fmt.Sprintf("exit %d; %d deletes ran after the signal; %s", code, strings.Count(log, "teardown: "),
			faultlab.Shorten(faultlab.GrepLine(log, `teardown: .*(context canceled|interrupt)`), 140))
		faultlab.Ending(t, r, row)
	})

	t.Run("signal/teardown-double-SIGINT", func(t *testing.T) {
		env.Parallel(t, faultlab.Light)
		row := matrix.Record(t, "SIGINT, then SIGINT again", "teardown")
		r := env.Start(t, "signal-teardown-double-SIGINT", faultlab.Spec{Suite: "smoke"})
		r.WaitLog(reSSHWait, faultlab.ReachEarlyPhase)
		r.Signal(syscall.SIGINT)
		r.WaitLog(reTeardown, faultlab.ReachTeardown)
		r.Signal(syscall.SIGINT)
		code := r.Wait(faultlab.ExitAfterSignal)
		console := r.Console()
		said := faultlab.MustContain(t, "console", console, `interrupted again .*(NOT DELETED|nothing of run)`)
		sweepSaid := strings.Contains(said, "tools/sweeper --config "+r.CfgPath+" --run-id "+r.RunID+" --delete")
		left, err := env.Listing(context.Background(), r.RunID)
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
			rc, msg := r.Sweep(true)
			if rc != 0 {
				t.Errorf("sweeper --delete exit %d: %s", rc, faultlab.Tail(msg, 10))
			}
			swept = fmt.Sprintf("; sweeper removed %d", len(left))
		}
		row.Outcome = fmt.Sprintf("exit %d; harness named %d not deleted + sweeper command%s", code, len(left), swept)
		faultlab.Ending(t, r, row)
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
			env.Parallel(t, faultlab.Light)
			row := matrix.Record(t, ar.fault, ar.phase)
			in := faultlab.NewInjector(t, ar.rules)
			r := env.Start(t, strings.ReplaceAll(ar.name, "/", "-"), faultlab.Spec{Suite: "smoke", Proxy: in})
			code := r.Wait(faultlab.RunToEnd)
			if code == 0 {
				t.Errorf("the run passed despite the fault")
			}
			if u := in.Unfired(); len(u) > 0 {
				t.Errorf("faults never fired: %v", u)
			}
			faultlab.MustContain(t, "harness output", r.Log()+r.Console(), ar.wantLog)
			row.Outcome = fmt.Sprintf("exit %d, faults fired %d; %s", code, len(in.Hits()), faultlab.Excerpt(r.Log()+r.Console(), ar.wantLog, 90, 200))
			faultlab.Ending(t, r, row)
		})
	}

	t.Run("api/delete-5xx-409-slow-drop", func(t *testing.T) {
		env.Parallel(t, faultlab.Light)
		row := matrix.Record(t, "503 + 500 + 409 on delete, 3s answers (poll 1s), dropped connection", "wait for ACTIVE, teardown, leak check")
		data, err := os.ReadFile(filepath.Join(env.Root, "e2e", "faultproxy", "testdata", "plan-lab-delete-faults.json"))
		if err != nil {
			t.Fatal(err)
		}
		plan, err := faultproxy.Parse(data)
		if err != nil {
			t.Fatal(err)
		}
		in := faultlab.NewInjector(t, plan.Rules)
		r := env.Start(t, "api-delete-faults", faultlab.Spec{Suite: "smoke", Proxy: in})
		r.WaitLog(reSSHWait, faultlab.ReachTraffic)
		r.Signal(syscall.SIGINT)
		code := r.Wait(faultlab.ExitAfterSignalSlowAPI)
		if u := in.Unfired(); len(u) > 0 {
			t.Errorf("faults never fired: %v", u)
		}
		log := r.Log()
		// net/http itself resends an idempotent request once when a reused
		// connection drops before the answer; the second drop (fresh
		// connection) must reach the harness's retrying transport.
		faultlab.MustContain(t, "harness.log", log, `DELETE .*/v2.0/ports/.*503 Service Unavailable; retry 1`)
		faultlab.MustContain(t, "harness.log", log, `GET .*/v2.0/ports[^ ]*: (connection reset|connection dropped|broken pipe).*; retry 1`)
		retries := strings.Count(log, "; retry ")
		failed := faultlab.GrepLine(log, `teardown: .*: `)
		row.Outcome = fmt.Sprintf("exit %d; %d faults fired (%s); %d retries logged; first failed delete: %s",
			code, len(in.Hits()), faultlab.HitNames(in), retries, faultlab.OrNone(faultlab.Shorten(failed, 140)))
		faultlab.Ending(t, r, row)
	})

	t.Run("server/error", func(t *testing.T) {
		env.Parallel(t, faultlab.Light)
		row := matrix.Record(t, "server goes to ERROR (lab driver refuses flavor extra spec lab:plug=bogus)", "waiting for ACTIVE")
		r := env.Start(t, "server-error", faultlab.Spec{Suite: "smoke", Edit: func(c map[string]any) {
			faultlab.Set(c, "flavor.extra_specs", map[string]any{"lab:plug": "bogus"})
		}})
		code := r.Wait(faultlab.RunToEnd)
		if code == 0 {
			t.Errorf("the run passed with a server in ERROR")
		}
		faultlab.MustContain(t, "harness output", r.Log()+r.Console(), `ERROR`)
		row.Outcome = fmt.Sprintf("exit %d; %s", code, faultlab.Excerpt(r.Log()+r.Console(), `ERROR`, 60, 220))
		faultlab.Ending(t, r, row)
	})

	t.Run("ssh/guest-unreachable", func(t *testing.T) {
		env.Parallel(t, faultlab.Light)
		row := matrix.Record(t, "guest never reachable over SSH (wrong user)", "SSH wait")
		r := env.Start(t, "ssh-unreachable", faultlab.Spec{Suite: "smoke", Edit: func(c map[string]any) {
			faultlab.Set(c, "guest_access.user", "asap2e2e-nosuchuser")
			faultlab.Set(c, "intervals.ssh_ready", map[string]any{"timeout": "15s", "poll": "2s"})
		}})
		code := r.Wait(faultlab.RunToEnd)
		if code == 0 {
			t.Errorf("the run passed without reaching its guests")
		}
		faultlab.MustContain(t, "console", r.Console(), `ssh to guest`)
		row.Outcome = fmt.Sprintf("exit %d; %s", code, faultlab.Excerpt(r.Console(), `not reachable within`, 0, 220))
		faultlab.Ending(t, r, row)
	})

	t.Run("ssh/drop-during-iperf3", func(t *testing.T) {
		env.Parallel(t, faultlab.Traffic)
		row := matrix.Record(t, "SSH connection to the client guest dropped (ss -K)", "traffic window")
		r := env.Start(t, "ssh-drop", faultlab.Spec{Suite: "perf", Labels: "throughput", Edit: func(c map[string]any) {
			faultlab.Set(c, "run.keep_topology", true)
			faultlab.Set(c, "traffic.profiles", []string{"tcp-p1"})
			faultlab.Set(c, "traffic.duration", "20s")
		}})
		t.Cleanup(func() {
			if r.RunID != "" {
				r.Sweep(true)
			}
		})
		p := r.WaitIperfClient(t, faultlab.ReachTraffic)
		tp := r.Topology()
		// Kill every established SSH socket of the client guest: the
		// harness's connection drops mid-iperf3.
		out, err := exec.Command("ip", "netns", "exec", p.Netns, "ss", "-K", "-tn", "state", "established", "( sport = :22 )").CombinedOutput()
		if err != nil {
			t.Fatalf("ss -K in %s: %v: %s", p.Netns, err, out)
		}
		t.Logf("dropped SSH sockets in %s: %s", p.Netns, strings.TrimSpace(string(out)))
		code := r.Wait(faultlab.ExitAfterFault)
		// keep_topology: the guests are still there; nothing of the
		// harness may still run in them.
		var still []faultlab.Proc
		r.Poll(faultlab.ToolsGone, func() bool {
			still = nil
			for _, q := range faultlab.Procs() {
				if (q.Netns == tp.GuestNetns(0) || q.Netns == tp.GuestNetns(1)) && q.Comm == "iperf3" {
					still = append(still, q)
				}
			}
			return len(still) == 0
		})
		for _, q := range still {
			t.Errorf("iperf3 left running in a guest after the dropped connection: %s", q)
		}
		said := faultlab.Excerpt(r.Log(), `FAILED`, 0, 40) + " " + faultlab.Excerpt(r.Log(), `no exit status|connection lost|EOF`, 0, 120)
		rc, msg := r.Sweep(true)
		if rc != 0 {
			t.Errorf("sweeper --delete of the kept topology: exit %d: %s", rc, faultlab.Tail(msg, 10))
		}
		row.Outcome = fmt.Sprintf("exit %d; iperf3 left in guests: %d; %s; kept topology swept (exit %d)", code, len(still), said, rc)
		faultlab.Ending(t, r, row)
	})

	t.Run("iperf3/server-busy", func(t *testing.T) {
		env.Parallel(t, faultlab.Traffic)
		row := matrix.Record(t, "iperf3 peer answers \"the server is busy\"", "traffic window")
		// Deterministic by construction, not by timing: the row gives its run
		// a traffic port of its own and, before the harness starts, both
		// hypervisors' br-int drop TCP to that port. The harness's client
		// (guest 1) therefore cannot reach its server (guest 0) until this
		// row has occupied the server from guest 0 itself (a local
		// connection that never crosses OVS) and lifted the gate; the
		// client's next SYN retransmission then meets a busy server.
		const port = 5391
		gate := env.GatePort(t, port)
		r := env.Start(t, "iperf3-busy", faultlab.Spec{Suite: "perf", Labels: "throughput", Edit: func(c map[string]any) {
			faultlab.Set(c, "traffic.profiles", []string{"tcp-p1"})
			faultlab.Set(c, "traffic.port", port)
		}})
		var srv faultlab.Proc
		listen := fmt.Sprintf(" -p %d", port)
		if !r.Poll(faultlab.ReachTraffic, func() bool {
			for _, q := range faultlab.Procs() {
				if q.Comm == "iperf3" && strings.Contains(q.Cmdline, " -s") && strings.Contains(q.Cmdline, listen) {
					srv = q
					return true
				}
			}
			return false
		}) {
			t.Fatalf("the harness's iperf3 server never started; log tail:\n%s", faultlab.Tail(r.Log(), 10))
		}
		tp := r.Topology()
		if tp == nil || len(tp.Servers) < 1 {
			t.Fatalf("no topology.json with the servers although the iperf3 server runs")
		}
		r.Occupy(t, srv.Netns, tp.Servers[0].DataIP, port)
		gate.Lift(t)
		code := r.Wait(faultlab.ExitAfterFault)
		faultlab.MustContain(t, "harness output", r.Log()+r.Console(), `server is busy`)
		said := faultlab.Excerpt(r.Log(), `iperf3 reported: .*server is busy`, 0, 200)
		if code == 0 {
			t.Errorf("the run passed although its peer was busy")
		}
		row.Outcome = fmt.Sprintf("exit %d; %s", code, faultlab.Shorten(said, 170))
		faultlab.Ending(t, r, row)
	})

	t.Run("kill9/mid-run", func(t *testing.T) {
		env.Parallel(t, faultlab.Traffic)
		row := matrix.Record(t, "SIGKILL (kill -9)", "traffic, after the first profile")
		r := env.Start(t, "kill9", faultlab.Spec{Suite: "perf", Labels: "throughput", Edit: func(c map[string]any) {
			faultlab.Set(c, "traffic.profiles", []string{"tcp-p1", "udp-b0-p1", "tcp-p15"})
		}})
		var n int
		if !r.Poll(faultlab.ReachFirstProfile, func() bool {
			if !r.FindRunDir() {
				return false
			}
			res, err := results.Load(filepath.Join(r.RunDir(), "results.json"))
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
			t.Fatalf("no profile finished; log tail:\n%s", faultlab.Tail(r.Log(), 10))
		}
		r.Signal(syscall.SIGKILL)
		code := r.Wait(faultlab.ExitAfterKill)
		res, err := results.Load(filepath.Join(r.RunDir(), "results.json"))
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
		before, err := env.Listing(context.Background(), r.RunID)
		if err != nil {
			t.Fatal(err)
		}
		_ = os.WriteFile(filepath.Join(r.Dir, "listing-before-sweep.txt"), []byte(strings.Join(before, "\n")+"\n"), 0o644)
		rc, msg := r.Sweep(true)
		if rc != 0 {
			t.Errorf("sweeper --delete exit %d: %s", rc, faultlab.Tail(msg, 10))
		}
		row.Outcome = fmt.Sprintf("exit %d; results.json loads with %d finished profile(s) %v; sweeper --delete exit %d", code, len(kept), kept, rc)
		faultlab.Ending(t, r, row)
		row.Leftovers = fmt.Sprintf("before sweep: %d resources; after: %s", len(before), row.Leftovers)
	})

	dataPathRows(t, env) // issue 14: vanish_test.go
}
