package fakeremote

import (
	"context"
	"sync"

	"github.com/mosk-qa/asap2-e2e/e2e/remote"
	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// Client is what a fake guest's iperf3 client does (IperfPlay.Client):
// given its -t seconds and whether it is UDP, it answers as iperf3 -c.
type Client = func(ctx context.Context, secs int, udp bool) (remote.Result, error)

// FlowEnds ties the end of fake flows to the checks that sample them: the
// k-th client of a flow (results.ProtoTCP, results.ProtoUDP; a window run
// again is another client) returns no sooner than the k-th ChecksDone of
// that flow (evidence.Window.ChecksDone). A fake flow that lasted a fixed
// time of the wall's clock made a healthy window's verdicts depend on the
// machine: under go test -race beside a loaded machine the checks took
// 6.6 to 12.9 s of a 6 s flow (a pair's window), and 2.1 to 4.9 s of a
// fleet's 2 s flows, and the window rightly called them outlasted. Cases
// about checks that outlast the flow give their flows an end of their own.
//
// Release unties it: clients after it (a measured profile's, which no
// check samples) end on their own.
type FlowEnds struct {
	mu       sync.Mutex
	changed  chan struct{} // closed and replaced at each ChecksDone and at Release
	clients  map[string]int
	checked  map[string]int
	released bool
}

// NewFlowEnds is a FlowEnds with no client and no check yet.
func NewFlowEnds() *FlowEnds {
	return &FlowEnds{changed: make(chan struct{}), clients: map[string]int{}, checked: map[string]int{}}
}

// ChecksDone counts the checks of one window of flow as done.
func (e *FlowEnds) ChecksDone(flow string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.checked[flow]++
	e.wake()
}

// Release lets every client, waiting or to come, end without checks.
func (e *FlowEnds) Release() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.released = true
	e.wake()
}

// wake tells the waiting clients that something changed (e.mu held).
func (e *FlowEnds) wake() {
	close(e.changed)
	e.changed = make(chan struct{})
}

// Client plays each client with play (its answer; a SleepThen lasts its
// -t as well) and returns its answer once the checks of its window are
// done, whichever comes later.
func (e *FlowEnds) Client(play Client) Client {
	return func(ctx context.Context, secs int, udp bool) (remote.Result, error) {
		flow := results.ProtoTCP
		if udp {
			flow = results.ProtoUDP
		}
		e.mu.Lock()
		e.clients[flow]++
		k := e.clients[flow]
		e.mu.Unlock()
		res, err := play(ctx, secs, udp)
		if err != nil {
			return res, err
		}
		for {
			e.mu.Lock()
			done, changed := e.released || e.checked[flow] >= k, e.changed
			e.mu.Unlock()
			if done {
				return res, nil
			}
			select {
			case <-ctx.Done():
				return remote.Result{ExitCode: -1}, ctx.Err()
			case <-changed:
			}
		}
	}
}

// Answer is a client that answers with out at once (its flow lasts as
// long as FlowEnds holds it).
func Answer(out func(udp bool) remote.Result) Client {
	return func(_ context.Context, _ int, udp bool) (remote.Result, error) { return out(udp), nil }
}
