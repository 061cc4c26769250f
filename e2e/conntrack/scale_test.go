package conntrack

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"
)

var (
	labClient = netip.MustParseAddr("198.18.212.1")
	labServer = netip.MustParseAddr("198.18.212.2")
)

// The recorded tables (testdata/README.md) read as samples: the mlx5
// mail's two [HW_OFFLOAD] iperf connections from the kernel's table; the
// lab's userspace datapath, whose kernel table is empty, from OVS's own
// (the 4 streams and the control connection of iperf3 -P 4), never hardware.
func TestSampleOfRecordedTables(t *testing.T) {
	hw := SampleOf(read(t, "hw/proc-hw-offload-mlx5-2020.txt"), nil, IperfFlows(false, 1, mlxClient, mlxServer, 5001))
	if hw != (Sample{Source: SourceKernel, Found: 2, Hardware: 2}) {
		t.Errorf("mlx5 table: %+v", hw)
	}
	ovs := SampleOf(read(t, "ovs/proc-nf_conntrack-hv.txt"), read(t, "ovs/dump-conntrack-tcp.txt"), IperfFlows(false, 4, labClient, labServer, 5201))
	if ovs != (Sample{Source: SourceOVS, Found: 5}) {
		t.Errorf("lab table: %+v", ovs)
	}
	// Without OVS's table the empty kernel table is a sample of 0 found.
	if k := SampleOf(read(t, "ovs/proc-nf_conntrack-hv.txt"), nil, IperfFlows(false, 4, labClient, labServer, 5201)); k != (Sample{Source: SourceKernel}) {
		t.Errorf("empty kernel table: %+v", k)
	}
	bad := SampleOf([]byte("ipv4 2 tcp 6 garbage\n"), nil, IperfFlows(false, 4, labClient, labServer, 5201))
	if bad.Error == "" {
		t.Errorf("an unreadable table must be the sample's error, got %+v", bad)
	}
}

func TestSummarize(t *testing.T) {
	flows := IperfFlows(false, 1, mlxClient, mlxServer, 5001) // opens 2
	empty := SampleOf(nil, nil, flows)
	full := SampleOf(read(t, "hw/proc-hw-offload-mlx5-2020.txt"), nil, flows)
	empty.At, full.At = 1*time.Second, 2*time.Second
	later := full
	later.At = 3 * time.Second
	o := Summarize([]Sample{empty, full, later}, 2, 10*time.Second)
	if o.TimeToOffload == nil || *o.TimeToOffload != 2*time.Second || o.Share != 1 || o.Samples != 3 {
		t.Fatalf("offloaded at the second sample: %+v", o)
	}
	if !strings.Contains(o.Reason, "all 2 connections [HW_OFFLOAD] at 2.0 s") {
		t.Errorf("reason: %s", o.Reason)
	}

	// Three opened (one more stream), two offloaded: the share falls to
	// 2/3 and the time is never, with the numbers.
	o = Summarize([]Sample{empty, full}, 3, 10*time.Second)
	if o.TimeToOffload != nil || o.Share != 2.0/3 || o.Hardware != 2 {
		t.Fatalf("2 of 3: %+v", o)
	}
	if !strings.Contains(o.Reason, "never all [HW_OFFLOAD] within the 10s offload wait") || !strings.Contains(o.Reason, "2 of 3 [HW_OFFLOAD] (67 %)") {
		t.Errorf("reason: %s", o.Reason)
	}

	// OVS's userspace table: software, never a time.
	ovs := SampleOf(read(t, "ovs/proc-nf_conntrack-hv.txt"), read(t, "ovs/dump-conntrack-tcp.txt"), IperfFlows(false, 4, labClient, labServer, 5201))
	o = Summarize([]Sample{ovs}, 5, 5*time.Second)
	if o.TimeToOffload != nil || o.Share != 0 || o.Found != 5 || !strings.Contains(o.Reason, "userspace") {
		t.Errorf("userspace: %+v", o)
	}

	// The fill of OVS's table as recorded (ct-get-nconns, ct-get-maxconns:
	// DPCtlSizeCommand's output) is said beside the share; a full table
	// says that missing connections are its limit, not offload.
	sz, perr := ParseSize(append(read(t, "ovs/ct-nconns.txt"), read(t, "ovs/ct-maxconns.txt")...))
	if perr != nil {
		t.Fatal(perr)
	}
	ovs.Fill = &sz
	o = Summarize([]Sample{ovs}, 5, 5*time.Second)
	if o.Fill == nil || !strings.Contains(o.Reason, "; table 6 of 3000000 entries") {
		t.Errorf("fill: %+v", o)
	}
	tableFull := later
	tableFull.Fill = &Size{Count: 65536, Max: 65536}
	tableFull.Hardware = 1
	o = Summarize([]Sample{tableFull}, 3, 5*time.Second)
	if !strings.Contains(o.Reason, "the table is full (65536 of 65536 entries): new connections are dropped") {
		t.Errorf("full table: %s", o.Reason)
	}

	// Failed reads are not zeros; no good sample says so.
	o = Summarize([]Sample{{Error: "ssh: broken pipe"}}, 5, 5*time.Second)
	if o.Samples != 0 || o.Share != 0 || !strings.Contains(o.Reason, "no sample") || !strings.Contains(o.Reason, "broken pipe") {
		t.Errorf("failed reads: %+v", o)
	}
	o = Summarize([]Sample{full, {Error: "timeout"}}, 2, 5*time.Second)
	if o.Samples != 1 || o.Share != 1 || !strings.Contains(o.Reason, "1 read(s) failed") {
		t.Errorf("a failed read after a good one: %+v", o)
	}
}

// fakeClock is the sampler's clock: sleeping and reading move it.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }
func (c *fakeClock) sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.t = c.t.Add(d)
	return nil
}

// No read of the sampler may end after the omit period: every kept read
// began and ended before Until, reads start every Every, and the sampler
// stops on its own once the next read could cross Until.
func TestSamplerStaysInsideTheOmitPeriod(t *testing.T) {
	for _, tc := range []struct {
		name  string
		reads []time.Duration // how long each read takes, the last repeated
		every time.Duration
	}{
		{"fast reads", []time.Duration{50 * time.Millisecond}, time.Second},
		{"a slow 10000-entry table", []time.Duration{300 * time.Millisecond, 900 * time.Millisecond}, time.Second},
		{"reads longer than the interval", []time.Duration{1500 * time.Millisecond}, time.Second},
		{"a read that grows past the end", []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 4 * time.Second}, time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := &fakeClock{t: time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)}
			start := clk.t
			until := start.Add(5 * time.Second)
			n := 0
			s := Sampler{Start: start, Until: until, Every: tc.every, Now: clk.now, Sleep: clk.sleep,
				Read: func(ctx context.Context) []Sample {
					if d, ok := ctx.Deadline(); !ok || d.After(until) {
						t.Errorf("read %d: context deadline %v, want at most %v", n, d, until)
					}
					clk.t = clk.t.Add(tc.reads[min(n, len(tc.reads)-1)])
					n++
					return []Sample{{Source: SourceKernel}, {Source: SourceKernel}}
				}}
			ticks := s.Run(context.Background())
			if len(ticks) == 0 {
				t.Fatal("no read at all")
			}
			var prev time.Time
			for i, tk := range ticks {
				if tk.Began.After(until) || !tk.Began.Before(until) {
					t.Errorf("read %d began at %v, at or after the omit period's end %v", i, tk.Began.Sub(start), until.Sub(start))
				}
				if !tk.Dropped && tk.Ended.After(until) {
					t.Errorf("read %d ended at %v after the omit period's end but was kept", i, tk.Ended.Sub(start))
				}
				if i > 0 && tk.Began.Sub(prev) < tc.every {
					t.Errorf("read %d began %v after the one before, sooner than every %v", i, tk.Began.Sub(prev), tc.every)
				}
				prev = tk.Began
			}
			for i, hv := range Kept(ticks) {
				for _, smp := range hv {
					if smp.At > until.Sub(start) {
						t.Errorf("hypervisor %d: a kept sample at %v, after the omit period (%v)", i, smp.At, until.Sub(start))
					}
				}
			}
			if clk.t.After(until) && !ticks[len(ticks)-1].Dropped {
				t.Errorf("the clock ran to %v past the end without a dropped read", clk.t.Sub(start))
			}
		})
	}
}

// A read that overran is dropped and ends the sampling; the count of reads
// of the fast case is the interval's (0, 1, 2, 3, 4 s: five reads).
func TestSamplerCountsAndDrops(t *testing.T) {
	clk := &fakeClock{t: time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)}
	start := clk.t
	s := Sampler{Start: start, Until: start.Add(5 * time.Second), Every: time.Second, Now: clk.now, Sleep: clk.sleep,
		Read: func(context.Context) []Sample { clk.t = clk.t.Add(10 * time.Millisecond); return []Sample{{}} }}
	if ticks := s.Run(context.Background()); len(ticks) != 5 || len(Kept(ticks)[0]) != 5 {
		t.Errorf("fast reads over 5 s every 1 s: %d reads, want 5", len(ticks))
	}
	clk.t = start
	reads := 0
	s.Read = func(context.Context) []Sample {
		reads++
		clk.t = clk.t.Add(map[bool]time.Duration{true: 10 * time.Millisecond, false: 3 * time.Second}[reads < 4])
		return []Sample{{}}
	}
	ticks := s.Run(context.Background())
	if len(ticks) != 4 || !ticks[3].Dropped || len(Kept(ticks)[0]) != 3 {
		t.Errorf("the fourth read overran: %d reads, last dropped %v", len(ticks), ticks[len(ticks)-1].Dropped)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	clk.t = start
	s.Sleep = func(ctx context.Context, d time.Duration) error { return errors.Join(ctx.Err()) }
	if ticks := s.Run(ctx); len(ticks) != 0 {
		t.Errorf("a cancelled context read %d times", len(ticks))
	}
}

// BenchmarkSampleOf10000: one read's judging cost at the largest count, on
// the recorded mlx5 line repeated with 10079 client ports (79 processes of
// 10000 streams and their control connections).
func BenchmarkSampleOf10000(b *testing.B) {
	line, err := os.ReadFile("testdata/hw/proc-hw-offload-mlx5-2020.txt")
	if err != nil {
		b.Fatal(err)
	}
	first, _, _ := strings.Cut(string(line), "\n")
	var sb strings.Builder
	var flows []Flow
	for p := 0; p < 79; p++ {
		streams := 10000 / 79
		if p < 10000%79 {
			streams++
		}
		flows = append(flows, IperfFlows(false, streams, mlxClient, mlxServer, uint16(5001+p))...)
		for s := 0; s <= streams; s++ {
			l := strings.ReplaceAll(first, "5001", fmt.Sprint(5001+p))
			l = strings.ReplaceAll(l, "56408", fmt.Sprint(20000+p*200+s))
			sb.WriteString(l + "\n")
		}
	}
	table := []byte(sb.String())
	b.SetBytes(int64(len(table)))
	b.ResetTimer()
	for range b.N {
		s := SampleOf(table, nil, flows)
		if s.Found != 10079 || s.Hardware != 10079 {
			b.Fatalf("%+v", s)
		}
	}
}
