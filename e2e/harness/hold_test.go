package harness

import (
	"context"
	"fmt"
	"path/filepath"
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

// churnRecording is a recorded sequence of e2e/offload/testdata/churn
// (record-churn.sh, a private OVS 3.1.0) as the fake hypervisor's answers:
// its dumps with the recording's sender MAC made the pair's client's, and
// its coverage readings.
func churnRecording(t *testing.T, seq, mac string) (dumps, coverage []fakeremote.Reply) {
	t.Helper()
	for i := 0; i < 12; i++ {
		d := readFile(t, filepath.Join("..", "offload", "testdata", "churn", seq, fmt.Sprintf("%02d.txt", i)))
		c := readFile(t, filepath.Join("..", "offload", "testdata", "churn", seq, fmt.Sprintf("coverage-%02d.txt", i)))
		dumps = append(dumps, fakeremote.Reply{Stdout: []byte(strings.ReplaceAll(string(d), "16:00:da:94:76:b3", mac))})
		coverage = append(coverage, fakeremote.Reply{Stdout: c})
	}
	// The fake repeats its answers from the start once they run out: the
	// last read is kept after the twelfth.
	for i := 0; i < 40; i++ {
		dumps, coverage = append(dumps, dumps[11]), append(coverage, coverage[11])
	}
	return dumps, coverage
}

// The churn window over the fakes: the client hypervisor answers the
// recorded purge (fast/: re-added within a read period), the server's the
// steady flow; a userspace datapath, so the slow path is not judged.
// Every read falls inside the client's run, and the result is in the
// results file with its reads saved.
func TestChurnWindowOverRecordings(t *testing.T) {
	wd := newPair(t)
	wd.cfg.Churn = config.Churn{Duration: 2 * time.Second, Bitrate: 10_000_000, Length: 1000, SlowPathShare: 0.01, SlowPathPeriod: time.Second}
	iv := wait.Interval{Timeout: time.Second, Poll: 100 * time.Millisecond}
	wd.cfg.Intervals[config.IntervalChurnSample] = iv
	wd.cfg.Intervals[config.IntervalCommand] = wait.Interval{Timeout: 10 * time.Second, Poll: time.Second}
	out := iperfJSON(t, "v3.12-udp-b0-p1.json")
	sleep := fakeremote.SleepThen(func(bool) remote.Result { return remote.Result{Stdout: out} })
	wd.guests[1].Play.Client = sleep
	for i, hv := range wd.hvs {
		seq := []string{"steady", "fast"}[i]
		dumps, cov := churnRecording(t, seq, wd.topo.Servers[1].DataMAC)
		hv.On(offload.DpctlFlowsCommand, fakeremote.Reply{Stdout: []byte("flow-dump from the main thread:\n")})
		hv.On(offload.DpctlFlowsCommand+" -m", dumps...)
		hv.On(offload.CoverageCommand(appctlSecs(iv.Timeout)), cov...)
		hv.On(offload.FindInterfaceCommand(wd.topo.Servers[i].DataPortID), fakeremote.Reply{Stdout: []byte("rep0\n")})
		// Test input, not a recording: the representor's counters.
		hv.On(offload.LinkStatsCommand("rep0"), fakeremote.Reply{Stdout: []byte(`[{"ifname":"rep0","stats64":{"rx":{"bytes":1,"packets":100},"tx":{"bytes":1,"packets":100}}}]`)})
	}
	s := wd.session()
	cr, err := s.RunChurn(context.Background())
	if err != nil {
		wd.world.Dump(t)
		t.Fatalf("RunChurn: %v", err)
	}
	if len(cr.Hosts) != 2 || cr.DurationSeconds != 2 || cr.Stable {
		t.Fatalf("result %+v", cr)
	}
	steady, fast := cr.Hosts[0], cr.Hosts[1]
	if !steady.Stable || steady.Count != 0 || !steady.Software || steady.Reads < 5 || steady.Deleted != 0 || steady.SamplesFile == "" {
		t.Errorf("steady: %+v", steady)
	}
	// The purge comes at the recording's fifth read (after read 3).
	if fast.Stable || fast.Count != 1 || len(fast.Events) != 1 || fast.Events[0].Kind != string(offload.ChurnReadded) || !strings.Contains(fast.Events[0].Detail, "dpif_flow_del") {
		t.Errorf("fast: %+v", fast)
	}
	for _, h := range cr.Hosts {
		if !strings.Contains(h.Reason, "software datapath") || !strings.Contains(h.Reason, "the reads cost") || h.BlindSpot == "" {
			t.Errorf("%s: %s / %s", h.Hypervisor, h.Reason, h.BlindSpot)
		}
	}
	snap := s.Results.Snapshot()
	if len(snap.Churn) != 1 || snap.Churn[0].Hosts[1].Count != 1 {
		t.Errorf("results file: %+v", snap.Churn)
	}
	// The reads run during the client only.
	var client, clientEnd time.Time
	for _, e := range wd.world.Log() {
		if strings.HasPrefix(e.Cmd, "iperf3 -c ") {
			client = e.At
		}
	}
	clientEnd = client.Add(wd.cfg.Churn.Duration + time.Second)
	for _, e := range wd.world.Log() {
		if e.Cmd == offload.DpctlFlowsCommand+" -m" && (e.At.Before(client) || e.At.After(clientEnd)) {
			t.Errorf("a read at %v, the client ran from %v", e.At.Sub(client), client)
		}
	}
	// churn_count gates the window.
	got := results.EvaluateThresholds([]results.ThresholdRule{{Profile: "churn", Path: "asap2", Metric: results.MetricChurnCount, Op: "<=", Value: 0}}, &snap)
	if got[0].Pass || got[0].Actual == nil || *got[0].Actual != 1 {
		t.Errorf("threshold %+v", got[0])
	}
}
