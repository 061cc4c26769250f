package iperf3

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/remote"
)

func TestEndSpread(t *testing.T) {
	t0 := time.Date(2026, 12, 7, 4, 0, 0, 0, time.UTC)
	at := func(d time.Duration) ProcessRun { return ProcessRun{ClientEnded: t0.Add(d)} }
	cases := []struct {
		name   string
		prs    []ProcessRun
		spread time.Duration
		warns  bool
	}{
		{"one process: nothing to compare", []ProcessRun{at(0)}, 0, false},
		{"none clocked (a failed attempt's)", []ProcessRun{{}, {}}, 0, false},
		{"an unclocked process is left out", []ProcessRun{at(0), {}, at(300 * time.Millisecond)}, 300 * time.Millisecond, false},
		{"15 ending within 40 ms", func() (p []ProcessRun) {
			for i := range 15 {
				p = append(p, at(time.Duration(i)*40*time.Millisecond/14))
			}
			return
		}(), 40 * time.Millisecond, false},
		{"at a tenth of -t: not past it", []ProcessRun{at(0), at(500 * time.Millisecond)}, 500 * time.Millisecond, false},
		// The lab's tcp-p15 on a loaded machine, before it ran in one
		// process: client 13 of 15 was still sending its parameters after 5 s.
		{"the last a second and a half after the first, in any order", []ProcessRun{at(1500 * time.Millisecond), at(0), at(200 * time.Millisecond)}, 1500 * time.Millisecond, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := EndSpread(c.prs); got != c.spread {
				t.Errorf("EndSpread = %s, want %s", got, c.spread)
			}
			w := EndSpreadWarning(c.prs, 5*time.Second)
			if (w != "") != c.warns {
				t.Fatalf("warning %q, want one: %v", w, c.warns)
			}
			if c.warns {
				for _, want := range []string{"3 iperf3 processes did not run at once", "1.5s apart", "30 % of the 5s test"} {
					if !strings.Contains(w, want) {
						t.Errorf("warning %q lacks %q", w, want)
					}
				}
			}
		})
	}
	if w := EndSpreadWarning([]ProcessRun{at(0), at(time.Hour)}, 0); w != "" {
		t.Errorf("no duration, no share of it: %q", w)
	}
}

// A split whose second client ends 700 ms after the first, in a 5 s test:
// Run clocks both and says the sum was not of streams running at once.
func TestRunSaysASplitDidNotRunAtOnce(t *testing.T) {
	files := map[int]string{5201: "v3.12-tcp-p15.json", 5202: "v3.12-tcp-p1.json"}
	// The second client's command returns 700 ms after the first's did, not
	// 700 ms after it began: each process begins once its own set-up is
	// done, so the first may begin (and end) a few ms after the second began
	// (2 of 20 runs read 693-699.9 ms when both waits began at their own start).
	firstDone := make(chan struct{})
	var returned [2]time.Time // when each fake command returned: 5201, 5202
	s, c := pair(v312, v312, func(ctx context.Context, port int) remote.Result {
		out := remote.Result{Stdout: load(t, files[port])}
		switch port {
		case 5201:
			returned[0] = time.Now()
			close(firstDone)
		case 5202:
			select {
			case <-firstDone:
			case <-ctx.Done():
			}
			select {
			case <-time.After(700 * time.Millisecond):
			case <-ctx.Done():
			}
			returned[1] = time.Now()
		}
		return out
	})
	in := input(s, c, "tcp-p15")
	in.MaxStreamsPerProcess = 8
	m, err := Run(context.Background(), in)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if len(m.Processes) != 2 {
		t.Fatalf("%d processes, want the split's 2", len(m.Processes))
	}
	for i, pr := range m.Processes {
		if pr.ClientEnded.IsZero() {
			t.Errorf("process %d: its client's end was not clocked", i)
		} else if r := returned[pr.Port-5201]; pr.ClientEnded.Before(r) {
			t.Errorf("process %d (port %d): its client's end clocked at %s, before its command returned at %s", i, pr.Port, pr.ClientEnded, r)
		}
	}
	// 700 ms less the moments between the first command's return and its
	// clock, which no fake sees: a tenth of that is room enough, and still
	// past the warning's threshold (a tenth of the 5 s test).
	if sp := EndSpread(m.Processes); sp < 630*time.Millisecond {
		t.Errorf("spread %s, the second client ended 700 ms after the first", sp)
	}
	if !strings.Contains(strings.Join(m.Warnings, "\n"), "2 iperf3 processes did not run at once") {
		t.Errorf("warnings %q", m.Warnings)
	}
}
