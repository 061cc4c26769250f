package evidence

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/iperf3"
	"github.com/mosk-qa/asap2-e2e/e2e/remote"
	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// stepBarrier stands for a fleet round's Gate: Start waits as if another
// pair's servers listened later, Done as if another pair's clients ran
// longer; every call is logged with when it returned.
type stepBarrier struct {
	startWait, doneWait time.Duration

	mu    sync.Mutex
	steps []string
	at    map[string]time.Time
}

func (b *stepBarrier) log(step string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.steps = append(b.steps, step)
	if b.at == nil {
		b.at = map[string]time.Time{}
	}
	b.at[step] = time.Now()
}

func (b *stepBarrier) Start(ctx context.Context, flow string) error {
	time.Sleep(b.startWait)
	b.log("start " + flow)
	return nil
}

func (b *stepBarrier) Done(ctx context.Context, flow string) error {
	time.Sleep(b.doneWait)
	b.log("done " + flow)
	return nil
}

func (b *stepBarrier) Leave(ctx context.Context, flow string) error {
	b.log("leave " + flow)
	return nil
}

// Under a barrier each flow's clients start only once it opens, the settle
// counts from then (every check at least offload.settle after the client
// came), and the window ends at the barrier's Done.
func TestEvidenceWindowWaitsAtTheBarrier(t *testing.T) {
	t.Parallel()
	wd := newWindow(t)
	wd.cfg.Offload.FlowDuration = 3 * time.Second
	wd.hardwarePath()
	s := wd.session()
	b := &stepBarrier{startWait: 400 * time.Millisecond, doneWait: 200 * time.Millisecond}
	s.w.Barrier = b
	fcs, err := Run(context.Background(), s.w)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	for _, fc := range fcs {
		if fc.Check.Verdict != results.VerdictOffloaded {
			t.Errorf("%s/%s/%s: %s: %s", fc.Flow, fc.Hypervisor, fc.Check.Name, fc.Check.Verdict, fc.Check.Reason)
		}
	}
	if got := strings.Join(b.steps, ", "); got != "start tcp, done tcp, start udp, done udp" {
		t.Errorf("barrier steps %q", got)
	}
	starts, _ := wd.w.Clients()
	if len(starts) != 2 {
		t.Fatalf("%d clients, want one per flow", len(starts))
	}
	for i, flow := range []string{"tcp", "udp"} {
		if opened := b.at["start "+flow]; starts[i].Before(opened) {
			t.Errorf("%s flow: the client came %s before the barrier opened", flow, opened.Sub(starts[i]))
		}
	}
	assertTiming(t, wd)
}

// A flow that fails is looked at only once the round's window of it is
// over: Leave comes before Explain.
func TestEvidenceWindowLooksAfterLeaving(t *testing.T) {
	t.Parallel()
	wd := newWindow(t)
	wd.cfg.Offload.FlowDuration = 2 * time.Second
	wd.hardwarePath()
	out := readFile(t, filepath.Join("..", "iperf3", "testdata", "stall", "v3.12-tcp-p1-path-cut.json"))
	wd.guests[1].Play.Client = wd.ends.client(func(bool) remote.Result { return remote.Result{Stdout: out} })
	s := wd.session()
	b := &stepBarrier{}
	s.w.Barrier = b
	s.w.Explain = func(ctx context.Context, what string, m iperf3.Measurement, err error) error {
		b.log("explain " + what)
		return fmt.Errorf("%w; after the window: looked", err)
	}
	_, err := Run(context.Background(), s.w)
	if err == nil || !strings.Contains(err.Error(), "; after the window: looked") {
		t.Fatalf("Run: %v, want the failed tcp flow explained", err)
	}
	if got := strings.Join(b.steps, ", "); got != "start tcp, done tcp, leave tcp, explain the sustained tcp flow" {
		t.Errorf("barrier steps %q", got)
	}
}
