package faults

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/faultproxy"
	"github.com/mosk-qa/asap2-e2e/lab/faultlab"
)

// Rows of the cloud's own parts failing under a run: an API service that
// stops answering for a while (SIGSTOP of its process group, SIGCONT
// ServiceFrozen later), a hypervisor's ovs-vswitchd that dies (SIGKILL,
// restarted by the row once the harness named it), and an output directory with no
// room. The first three are not parallel: a stopped neutron-server or
// nova-api stalls every run on the cloud, a dead ovs-vswitchd every guest on
// its hypervisor, so they run while the parallel rows still wait (Go starts
// the parallel subtests of TestFaults only once its own function, and so
// every sequential row, is done).
func serviceRows(t *testing.T, env *faultlab.Env) {
	frozenRows := []struct {
		name, service, program, phase string
		trigger                       string        // the harness.log line the freeze waits for
		reach                         time.Duration // its bound
		endpoint                      string        // the service's requests in api.log
		wall                          string        // the phase whose wall time the outcome gives
	}{
		// Right after the first create: every later create of the topology
		// (subnet, ports, then the servers, whose ports Nova binds through
		// Neutron) meets the stopped service.
		{"neutron/server-frozen-provisioning", faultlab.ServiceNeutronServer, "neutron-server", "provisioning (after its first network)",
			reProvisioning, faultlab.ReachEarlyPhase, faultlab.EndpointNeutron, "provisioning"},
		// After the first delete: the next server's delete and wait, the
		// keypair, server group and flavor all go through nova-api.
		{"nova/api-frozen-teardown", faultlab.ServiceNovaAPI, "nova-api", "teardown (after its first delete)",
			reTeardown, faultlab.ReachTraffic, faultlab.EndpointNova, "teardown"},
	}
	for _, fr := range frozenRows {
		t.Run(fr.name, func(t *testing.T) {
			row := matrix.Record(t, fmt.Sprintf("%s stops answering (SIGSTOP of its process group) for %s", fr.service, faultlab.ServiceFrozen), fr.phase)
			r := env.Start(t, strings.ReplaceAll(fr.name, "/", "-"), faultlab.Spec{Suite: "smoke"})
			r.WaitLog(fr.trigger, fr.reach)
			frozen := env.FreezeService(t, fr.service, fr.program)
			time.Sleep(faultlab.ServiceFrozen)
			frozen.Resume(t)
			code := r.Wait(faultlab.RunToEnd)
			log := r.Log()
			// The fault landed: some request of the run to the service was
			// in flight while it was stopped (api.log: sent before the
			// resume, answered after the stop).
			held := faultlab.InFlight(r.APILog(), fr.endpoint, frozen.At, frozen.Until)
			if len(held) == 0 {
				t.Errorf("no request of the run to %s (%s) was in flight while it was stopped (%s–%s): the freeze missed the %s",
					fr.service, fr.endpoint, frozen.At.UTC().Format("15:04:05.000"), frozen.Until.UTC().Format("15:04:05.000"), fr.phase)
			}
			if code != 0 {
				t.Errorf("the run failed (exit %d) although %s answered again after %s: %s", code, fr.service, faultlab.ServiceFrozen,
					faultlab.OrNone(faultlab.Excerpt(r.Console(), `\[FAILED\]`, 0, 300)))
			}
			bad := faultlab.TeardownFailures(log)
			for _, l := range bad {
				t.Errorf("teardown did not complete: %s", l)
			}
			wall := faultlab.FirstMatch(faultlab.GrepLine(log, `wall time by phase`), fr.wall+` [\d.]+s`)
			if wall == "" {
				t.Errorf("harness.log gives no wall time of %s (wall time by phase)", fr.wall)
			}
			row.Outcome = fmt.Sprintf("exit %d; %d %s requests in flight while stopped, the longest %s; %s took %s; teardown: %d deletes, %d failed",
				code, len(held), fr.service, faultlab.OrNone(faultlab.Shorten(faultlab.Longest(held), 140)), fr.wall,
				faultlab.OrNone(strings.TrimPrefix(wall, fr.wall+" ")), strings.Count(log, "teardown: "), len(bad))
			faultlab.Ending(t, r, row)
		})
	}

	t.Run("hypervisor/ovs-vswitchd-killed", func(t *testing.T) {
		row := matrix.Record(t, "a hypervisor's ovs-vswitchd killed (SIGKILL), restarted once the harness named it", "traffic window (40 s TCP, 5 s in)")
		r := env.Start(t, "hypervisor-ovs-vswitchd-killed", windowSpec())
		r.MidWindow(t)
		tp := r.Topology()
		// The receiving guest's hypervisor: the harness's look after the
		// failed window asks each hypervisor of the pair.
		hv, err := env.Hypervisor(tp.Servers[0].Hypervisor)
		if err != nil {
			t.Fatal(err)
		}
		killed := env.KillVswitchd(t, hv)
		// Restarted once the harness has said what it found, as a
		// hypervisor's supervisor (systemd, the pod's restart policy) would
		// bring a crashed ovs-vswitchd back: the teardown then unplugs the
		// guests' ports in seconds, where with the switch still dead each
		// del-port waits out its 30 s (ExitAfterDeadVswitchd). Restart
		// waits until the hypervisor works again (WaitVswitchdRecovered).
		r.WaitLog(`ovs-vswitchd does not answer|vswitchd pid \d+ .*has died`, faultlab.ExitAfterDeadVswitchd)
		recovered := killed.Restart(t)
		code := r.Wait(faultlab.ExitAfterDeadVswitchd)
		log := r.Log()
		if code == 0 {
			t.Errorf("the run passed although ovs-vswitchd of %s was killed in its window", hv.Name)
		}
		row.FaultToFailure(t, log, killed.At, `FAILED`)
		// The look's sentence (e2e/offload vswitchd.go Finding): the pid
		// is gone once reaped, a zombie until the lab's reaper (its parent
		// is init or the nearest subreaper) waits for it.
		pid := strconv.Itoa(killed.PID)
		said := faultlab.MustContain(t, "harness output", log+r.Console(), `hypervisor `+regexp.QuoteMeta(hv.Name)+`: ovs-vswitchd does not answer \(.*`+
			`(no ovs-vswitchd process \(pid `+pid+` in \S+ is gone\)|ovs-vswitchd pid `+pid+` \(from \S+\) has died \(a zombie\))`)
		bad := faultlab.TeardownFailures(log)
		for _, l := range bad {
			t.Errorf("teardown did not complete: %s", l)
		}
		back := "recovered"
		if !recovered {
			back = "NOT recovered"
		}
		row.Outcome = fmt.Sprintf("exit %d; killed ovs-vswitchd %d of %s; %s; teardown: %d deletes, %d failed; restarted once named, %s %s", code, killed.PID, hv.Name,
			faultlab.OrNone(faultlab.Shorten(faultlab.FirstMatch(said, `hypervisor \S+: ovs-vswitchd does not answer .*`), 260)),
			strings.Count(log, "teardown: "), len(bad), hv.Name, back)
		faultlab.Ending(t, r, row)
	})

	t.Run("outdir/no-space", func(t *testing.T) {
		env.Parallel(t, faultlab.Light)
		const size = "600k"
		row := matrix.Record(t, "run.output_dir on a 600 KiB file system (tmpfs)", "start, before any cloud call")
		fs := filepath.Join(env.Out, "rows", "outdir-no-space-fs")
		faultlab.SmallFS(t, fs, size)
		// Every request of the run goes through the proxy, which counts
		// them all: the harness must refuse before its first.
		in := faultlab.NewInjector(t, []faultproxy.Rule{{Name: "count-every-request", Action: faultproxy.ActionDelay, Delay: time.Millisecond}})
		r := env.Start(t, "outdir-no-space", faultlab.Spec{Suite: "smoke", OutputDir: fs, Proxy: in})
		code := r.Wait(faultlab.RunToEnd)
		if code == 0 {
			t.Errorf("the run passed with its output directory on a %s file system", size)
		}
		// e2e/harness outdir.go CheckOutputDir: what it has, what it needs.
		said := faultlab.MustContain(t, "console", r.Console(), `run\.output_dir `+regexp.QuoteMeta(fs)+`: [\d.]+ MiB free, a run's artifacts need about [\d.]+ MiB`)
		row.Outcome = fmt.Sprintf("exit %d; %s", code, faultlab.OrNone(faultlab.Shorten(faultlab.FirstMatch(said, `[\d.]+ MiB free, a run's artifacts need about .*`), 220)))
		faultlab.EndingRefused(t, r, row, in)
	})
}
