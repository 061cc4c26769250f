package harness

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/config"
	"github.com/mosk-qa/asap2-e2e/e2e/internal/fakeremote"
	"github.com/mosk-qa/asap2-e2e/e2e/offload"
	"github.com/mosk-qa/asap2-e2e/e2e/remote"
	"github.com/mosk-qa/asap2-e2e/e2e/results"
	"github.com/mosk-qa/asap2-e2e/e2e/wait"
)

// agRec reads a recording of ../offload/testdata/aging with its guests,
// addresses and aging port rewritten to the fake pair's (client
// 198.18.210.1, server 198.18.210.2) and to port, so the harness sees the
// private OVS's real outputs as its own pair's.
func agRec(t *testing.T, name string, port string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "offload", "testdata", "aging", name))
	if err != nil {
		t.Fatal(err)
	}
	return []byte(strings.NewReplacer(
		"02:00:c6:12:27:01", fakeremote.MACClient, "02:00:c6:12:27:02", fakeremote.MACServer,
		"198.18.39.1", "198.18.210.1", "198.18.39.2", "198.18.210.2",
		"40003", port, "40001", port, "5201", "5201",
	).Replace(string(b)))
}

// agingPair is the fake pair of the aging profile: each hypervisor answers
// max-idle (100 ms), the userspace datapath's dump header, and the
// recorded dumps in order — two during the first flow (the evidence
// window's dpctl samples), the one 2 s after it (before the idle),
// afterIdle after the idle, then the recorded
// restart's timeline; the client plays the recorded iperf3 JSON with the
// pinned port.
func agingPair(t *testing.T, afterIdle string) *Pair {
	return agingPairBefore(t, "dpctl-aging-idle-short.txt", afterIdle)
}

// agingPairBefore is agingPair with the dump just after the first flow.
func agingPairBefore(t *testing.T, beforeIdle, afterIdle string) *Pair {
	wd := newPair(t)
	wd.cfg.Run.ExpectedPath = results.PathBaseline
	wd.cfg.Offload.Checks = []string{results.CheckDpctl}
	wd.cfg.Offload.FlowDuration = 2 * time.Second
	wd.cfg.Aging = config.Aging{Enabled: true, RestartDuration: time.Second, Bitrate: 10_000_000, ClientPort: 41000,
		FlowtableTimeout: 100 * time.Millisecond, IdleMargin: 100 * time.Millisecond}
	wd.cfg.Intervals[config.IntervalAgingSample] = wait.Interval{Timeout: 900 * time.Millisecond, Poll: 150 * time.Millisecond}
	out := agRec(t, "iperf3-aging-1.json", "41000")
	wd.guests[1].Play.Client = fakeremote.SleepThen(func(bool) remote.Result { return remote.Result{Stdout: out} })
	dumps := []fakeremote.Reply{{Stdout: agRec(t, "dpctl-aging-during.txt", "41000")}, {Stdout: agRec(t, "dpctl-aging-during.txt", "41000")},
		{Stdout: agRec(t, beforeIdle, "41000")}, {Stdout: agRec(t, afterIdle, "41000")}}
	for _, n := range []string{"00", "01", "02", "03", "04", "05", "06", "07", "08", "09"} {
		dumps = append(dumps, fakeremote.Reply{Stdout: agRec(t, "timeline/dpctl-"+n+".txt", "41000")})
	}
	for i, hv := range wd.hvs {
		hv.On(offload.MaxIdleCommand, fakeremote.Reply{Stdout: []byte("\"100\"\n")})
		hv.On(offload.DpctlFlowsCommand, fakeremote.Reply{Stdout: []byte("flow-dump from the main thread:\n")})
		hv.On(offload.FindInterfaceCommand(wd.topo.Servers[i].DataPortID), fakeremote.Reply{Stdout: []byte("o38f-pa\n")})
		hv.On("ovs-appctl dpctl/dump-flows -m type=offloaded", fakeremote.Reply{})
		hv.On(offload.AgingDumpCommand, dumps...)
	}
	return wd.session()
}

// The recorded session through the harness: the first flow's checks, an
// idle after which the recorded dump is empty (aged out), the restart's
// timeline: measured, in the datapath at the second dump, in hardware
// never — software datapath; the result in the results file.
func TestRunAgingMeasuresTheRecordedSession(t *testing.T) {
	s := agingPair(t, "dpctl-aging-idle.txt")
	ar, err := s.RunAging(context.Background())
	if err != nil {
		t.Fatalf("RunAging: %v", err)
	}
	if ar.Verdict != results.AgingMeasured || !ar.SameTuple || ar.Tuple != "udp 198.18.210.1:41000 -> 198.18.210.2:5201" {
		t.Fatalf("%s (%s): %s", ar.Verdict, ar.Tuple, ar.Reason)
	}
	if ar.IdleSeconds < 0.2 || len(ar.Checks) != 2 || len(ar.Hosts) != 2 {
		t.Errorf("idle %v, checks %d, hosts %d", ar.IdleSeconds, len(ar.Checks), len(ar.Hosts))
	}
	for _, h := range ar.Hosts {
		if !h.AgedOut || !h.Software || h.ReinstallMs == nil || h.ReoffloadMs != nil || h.MaxIdleSource != "other_config:max-idle" {
			t.Errorf("%s: %+v", h.Hypervisor, h)
			continue
		}
		if !strings.Contains(h.Reason, "in hardware: never — software datapath") {
			t.Errorf("%s: %s", h.Hypervisor, h.Reason)
		}
	}
	r, err := results.Load(filepath.Join(s.run.Dir, ResultsFile))
	if err != nil {
		t.Fatal(err)
	}
	if r.Aging == nil || r.Aging.Verdict != results.AgingMeasured {
		t.Errorf("results file: %+v", r.Aging)
	}
}

// The recorded dump 2 s after the flow (its flows still installed) as the
// look after the idle: not an aging measurement, and no time at all.
func TestRunAgingFlowThatDidNotAgeOut(t *testing.T) {
	s := agingPair(t, "dpctl-aging-idle-short.txt")
	ar, err := s.RunAging(context.Background())
	if err != nil {
		t.Fatalf("RunAging: %v", err)
	}
	if ar.Verdict != results.AgingNotMeasured || !strings.Contains(ar.Reason, "not an aging measurement") {
		t.Fatalf("%s: %s", ar.Verdict, ar.Reason)
	}
	for _, h := range ar.Hosts {
		if h.AgedOut || h.ReinstallMs != nil || h.ReoffloadMs != nil {
			t.Errorf("%s: %+v", h.Hypervisor, h)
		}
	}
	th := results.EvaluateThresholds([]results.ThresholdRule{{Name: "r", Profile: results.AgingProfileID, Path: "baseline", Metric: results.MetricReinstallMs, Op: "<=", Value: 2000}},
		&results.Results{Aging: &ar})
	if th[0].Pass || !strings.Contains(th[0].Reason, results.AgingNotMeasured) {
		t.Errorf("threshold on a flow that did not age out: %+v", th[0])
	}
}

// fragPair is the fake pair of the fragment profile on a network of mtu,
// each hypervisor answering dump with the recorded dumps.
func fragPair(t *testing.T, mtu int, dump string) *Pair {
	wd := newPair(t)
	wd.cfg.Run.ExpectedPath = results.PathBaseline
	wd.cfg.Offload.FlowDuration = 2 * time.Second
	wd.cfg.Fragments = config.Fragments{Enabled: true, Bitrate: 20_000_000}
	wd.topo.Network.MTU = mtu
	out := agRec(t, "iperf3-frag.json", "40001")
	wd.guests[1].Play.Client = fakeremote.SleepThen(func(bool) remote.Result { return remote.Result{Stdout: out} })
	for i, hv := range wd.hvs {
		hv.On(offload.FindInterfaceCommand(wd.topo.Servers[i].DataPortID), fakeremote.Reply{Stdout: []byte("o38f-pa\n")})
		hv.On("ovs-appctl dpctl/dump-flows -m type=offloaded", fakeremote.Reply{})
		// The evidence window samples twice: the recorded dump, then the
		// same with every count 1000 higher (test input: the flows grew).
		rec := agRec(t, dump, "40001")
		hv.On(offload.AgingDumpCommand, fakeremote.Reply{Stdout: rec}, fakeremote.Reply{Stdout: grown(rec)})
	}
	return wd.session()
}

// grown is a dump with every flow's packets 1000 higher.
func grown(dump []byte) []byte {
	return regexp.MustCompile(`packets:(\d+)`).ReplaceAllFunc(dump, func(m []byte) []byte {
		n, _ := strconv.Atoi(string(m[len("packets:"):]))
		return []byte("packets:" + strconv.Itoa(n+1000))
	})
}

// The recorded fragmented run through the harness: the fragment flows
// labelled, the checks' tc (no cls_flower on a fake hypervisor: no reply)
// inconclusive, nothing failed for the fragments.
func TestRunFragmentsLabelsTheRecordedFragments(t *testing.T) {
	s := fragPair(t, 1500, "dpctl-frag-m.txt")
	fr, err := s.RunFragments(context.Background())
	if err != nil {
		t.Fatalf("RunFragments: %v", err)
	}
	if fr.Length != 2500 || fr.MTU != 1500 {
		t.Errorf("length %d on MTU %d", fr.Length, fr.MTU)
	}
	var dpctl int
	for _, c := range fr.Checks {
		if c.Name == results.CheckDpctl {
			dpctl++
			if !c.Labelled || c.FragFlows != 2 {
				t.Errorf("%s on %s: %+v", c.Name, c.Hypervisor, c)
			}
		}
	}
	if dpctl != 2 || !fr.Fragmented {
		t.Fatalf("%d dpctl checks, fragmented %v: %s", dpctl, fr.Fragmented, fr.Reason)
	}
	if !strings.Contains(fr.Reason, "unfragmented flows of the pair") {
		t.Errorf("reason %q", fr.Reason)
	}
}

// The unfragmented recording: the profile says the datagrams did not
// fragment and labels nothing; no MTU from Neutron, or a length that fits
// it, is refused before any traffic.
func TestRunFragmentsThatDidNotFragment(t *testing.T) {
	fr, err := fragPair(t, 1500, "dpctl-nofrag-m.txt").RunFragments(context.Background())
	if err != nil {
		t.Fatalf("RunFragments: %v", err)
	}
	if fr.Fragmented || fr.Label != "" || !strings.Contains(fr.Reason, "did not fragment") {
		t.Errorf("%+v", fr)
	}
	if _, err := fragPair(t, 0, "dpctl-frag-m.txt").RunFragments(context.Background()); err == nil || !strings.Contains(err.Error(), "no MTU") {
		t.Errorf("no MTU: %v", err)
	}
	s := fragPair(t, 1500, "dpctl-frag-m.txt")
	s.run.Config.Fragments.Length = 1000
	if _, err := s.RunFragments(context.Background()); err == nil || !strings.Contains(err.Error(), "would not fragment") {
		t.Errorf("length 1000 on MTU 1500: %v", err)
	}
}

// A first flow whose flows were never in the datapath (the dump before the
// idle is empty): nothing to age, and an empty dump after the idle is no
// proof that anything aged out.
func TestRunAgingNothingToAge(t *testing.T) {
	s := agingPairBefore(t, "dpctl-aging-idle.txt", "dpctl-aging-idle.txt")
	ar, err := s.RunAging(context.Background())
	if err != nil {
		t.Fatalf("RunAging: %v", err)
	}
	if ar.Verdict != results.AgingNotMeasured || !strings.Contains(ar.Reason, "nothing to age") {
		t.Fatalf("%s: %s", ar.Verdict, ar.Reason)
	}
	for _, h := range ar.Hosts {
		if h.AgedOut || h.ReinstallMs != nil {
			t.Errorf("%s: %+v", h.Hypervisor, h)
		}
	}
}
