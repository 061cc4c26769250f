package harness

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/internal/fakeremote"
	"github.com/mosk-qa/asap2-e2e/e2e/remote"
	"github.com/mosk-qa/asap2-e2e/e2e/wait"
	"github.com/mosk-qa/asap2-e2e/fixtures"
)

var dataPair = []fixtures.Server{
	{Name: "vm0", Hypervisor: "compute2", DataIP: "198.18.10.229"},
	{Name: "vm1", Hypervisor: "compute1", DataIP: "198.18.10.233"},
}

// iputils ping 20221126 (Debian 12), one echo unanswered and answered.
var (
	pingLost = fakeremote.Reply{Exit: 1, Stdout: []byte("PING 198.18.10.229 (198.18.10.229) 56(84) bytes of data.\n\n--- 198.18.10.229 ping statistics ---\n1 packets transmitted, 0 received, 100% packet loss, time 0ms\n")}
	pingOK   = fakeremote.Reply{Stdout: []byte("PING 198.18.10.229 (198.18.10.229) 56(84) bytes of data.\n64 bytes from 198.18.10.229: icmp_seq=1 ttl=64 time=0.412 ms\n")}
)

func dataGuests(w *fakeremote.World) (*fakeremote.Runner, *fakeremote.Runner, []remote.Runner) {
	g0, g1 := fakeremote.New("vm0", w), fakeremote.New("vm1", w)
	return g0, g1, []remote.Runner{g0, g1}
}

// A path that answers only from the third ping on (the lab's first
// connect failed 3 s after the port went ACTIVE) is waited for, not
// measured: the wait returns once both directions answered.
func TestWaitDataPathWaitsForALatePath(t *testing.T) {
	w := fakeremote.NewWorld()
	g0, g1, guests := dataGuests(w)
	g0.On(DataPathPing("198.18.10.233"), pingOK)
	g1.On(DataPathPing("198.18.10.229"), pingLost, pingLost, pingOK)
	var said []string
	err := waitDataPath(context.Background(), wait.Interval{Timeout: 5 * time.Second, Poll: 10 * time.Millisecond}, guests, dataPair,
		func(f string, a ...any) { said = append(said, f) })
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range w.Log() {
		if e.Runner == "vm1" {
			n++
		}
	}
	if n != 3 || len(said) != 2 {
		t.Errorf("vm1 pinged %d times (want 3), logged %d lines (want 2)", n, len(said))
	}
}

// A path that never answers fails at the interval's bound naming both
// guests, their hosts and addresses and the last ping's words; the other
// direction is tried too, every problem listed.
func TestWaitDataPathNamesTheMissingPath(t *testing.T) {
	w := fakeremote.NewWorld()
	g0, g1, guests := dataGuests(w)
	g0.On(DataPathPing("198.18.10.233"), pingLost)
	g1.On(DataPathPing("198.18.10.229"), pingLost)
	start := time.Now()
	err := waitDataPath(context.Background(), wait.Interval{Timeout: 200 * time.Millisecond, Poll: 20 * time.Millisecond}, guests, dataPair, t.Logf)
	if err == nil {
		t.Fatal("no error for a data path that never answered")
	}
	for _, want := range []string{
		"guest vm0 (on compute2) reaching vm1's data address 198.18.10.233 (on compute1): gave up after 200ms",
		"guest vm1 (on compute1) reaching vm0's data address 198.18.10.229 (on compute2): gave up after 200ms",
		"the last ping said: PING 198.18.10.229", "100% packet loss",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %s for two 200ms bounds", d)
	}
}

// A guest without ping is said at once, not waited on for a minute.
func TestWaitDataPathStopsWithoutPing(t *testing.T) {
	w := fakeremote.NewWorld()
	g0, g1, guests := dataGuests(w)
	g0.On(DataPathPing("198.18.10.233"), fakeremote.Reply{Exit: 127, Stderr: []byte("sh: 1: ping: not found\n")})
	g1.On(DataPathPing("198.18.10.229"), pingOK)
	err := waitDataPath(context.Background(), wait.Interval{Timeout: time.Minute, Poll: time.Second}, guests, dataPair, t.Logf)
	if err == nil || !strings.Contains(err.Error(), "vm0: the guest has no ping (iputils-ping)") || !strings.Contains(err.Error(), "ping: not found") {
		t.Fatalf("err = %v", err)
	}
	if strings.Contains(err.Error(), "vm1") && strings.Contains(err.Error(), "gave up") {
		t.Errorf("the other direction, which answered, is named: %v", err)
	}
}
