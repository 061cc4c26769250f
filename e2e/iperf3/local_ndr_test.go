package iperf3

import (
	"context"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/ndr"
)

// The zero-loss search over real iperf3 on loopback: -l 64 datagrams, rates
// from a configured 20 Mbit/s upper bound (no unlimited trial: it would
// take both cores of a shared machine). Every trial is a real run whose
// packet rates come from Packets; whatever loopback loses, the search keeps
// its invariants.
func TestZeroLossSearchOnLocalIperf3(t *testing.T) {
	if _, err := exec.LookPath("iperf3"); err != nil {
		t.Skip("iperf3 is not installed on this machine (apt-get install iperf3): the real local run cannot happen")
	}
	if _, err := exec.LookPath("ss"); err != nil {
		t.Skip("ss is not installed: the runner cannot see the server listen")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var runs []Measurement
	trial := func(ctx context.Context, rate float64) (ndr.Outcome, error) {
		p := udpUnlimited(1, 64)
		p.BitratePerStream = int64(rate)
		m, err := Run(ctx, RunInput{
			Server: localRunner{}, Client: localRunner{}, ServerAddr: "127.0.0.1", Profile: p,
			Duration: time.Second, BasePort: freePorts(t, 1), ListenTimeout: 30 * time.Second, ListenPoll: 50 * time.Millisecond,
		})
		runs = append(runs, m)
		if err != nil {
			return ndr.Outcome{}, err
		}
		pk, err := Packets(m.Result)
		if err != nil {
			return ndr.Outcome{}, err
		}
		return ndr.Outcome{OfferedBps: m.Result.OfferedBps, DeliveredBps: m.Result.DeliveredBps, LossPercent: pk.LossPercent}, nil
	}
	c := ndr.Config{UpperBps: 20e6, ResolutionPercent: 50, MaxTrials: 3}
	res, err := ndr.Search(ctx, c, trial)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Trials) > 3 || len(runs) != len(res.Trials) {
		t.Fatalf("%d trials, %d runs", len(res.Trials), len(runs))
	}
	for i, m := range runs {
		want := "-b " + strconv.FormatInt(int64(res.Trials[i].RateBps), 10)
		if len(m.Processes) == 0 || !strings.Contains(m.Processes[0].ClientCmd, want) || !strings.Contains(m.Processes[0].ClientCmd, "-l 64") {
			t.Errorf("trial %d ran %+v, want %q and -l 64", i+1, m.Processes, want)
		}
		if m.Result.BlockSize != 64 {
			t.Errorf("trial %d: blksize %d", i+1, m.Result.BlockSize)
		}
	}
	if res.Found {
		v := res.Verified
		if v == nil || v.Phase != ndr.PhaseVerify || v.LossPercent != 0 || v.RateBps != res.RateBps || v.OfferedBps < 0.95*res.RateBps {
			t.Errorf("found %v with verification %+v", res.RateBps, v)
		}
	}
	for _, tr := range res.Trials {
		t.Logf("trial %d %s at %.0f bit/s: offered %.0f, delivered %.0f, loss %.4f%%, pass %v", tr.N, tr.Phase, tr.RateBps, tr.OfferedBps, tr.DeliveredBps, tr.LossPercent, tr.Pass)
	}
	t.Logf("loopback -l 64: found %v at %.0f bit/s after %d trials: %s", res.Found, res.RateBps, len(res.Trials), res.StopReason)
}
