package conntrack

import (
	"context"
	"fmt"
	"time"
)

// The connection-scale profile (issue 22): N concurrent connections between
// the pair, each hypervisor's table read every second or so while iperf3's
// omit period runs (-O: the seconds iperf3 leaves out of its numbers), and
// never after it, so the measured seconds stay undisturbed.

// The tables a sample was read from.
const (
	// SourceKernel is the kernel's table (ReadCommand): the one that says
	// [HW_OFFLOAD].
	SourceKernel = "kernel"
	// SourceOVS is OVS's userspace conntrack (DPCtlCommand): the
	// userspace datapath's table, software by construction.
	SourceOVS = "ovs-userspace"
)

// Sample is one read of one hypervisor's table during the omit period.
type Sample struct {
	// At is when the read ended, from the moment the clients started.
	At       time.Duration `json:"at_ns"`
	Source   string        `json:"source,omitempty"`
	Found    int           `json:"found"`    // live connections of the run's flows
	Hardware int           `json:"hardware"` // of them, [HW_OFFLOAD] in every zone
	// Fill is the table's fill against its limit (SizeCommand or
	// DPCtlSizeCommand) read after it; nil when that read failed.
	Fill  *Size  `json:"fill,omitempty"`
	Error string `json:"error,omitempty"`
}

// SampleOf is a sample judged from one read: the kernel's table, or — when
// it holds none of the flows and ovs is not nil — OVS's userspace table
// (dpctl/dump-conntrack output). A table that cannot be read or parsed is
// the sample's error, never a count of 0.
func SampleOf(kernel, ovs []byte, flows []Flow) Sample {
	entries, err := Parse(kernel)
	if err != nil {
		return Sample{Source: SourceKernel, Error: err.Error()}
	}
	j, _, err := Judge(entries, flows)
	if err != nil {
		return Sample{Source: SourceKernel, Error: err.Error()}
	}
	if j.Found > 0 || ovs == nil {
		return Sample{Source: SourceKernel, Found: j.Found, Hardware: j.Hardware}
	}
	oe, err := ParseDPCtl(ovs)
	if err != nil {
		return Sample{Source: SourceOVS, Error: err.Error()}
	}
	oj, _, err := Judge(oe, flows)
	if err != nil {
		return Sample{Source: SourceOVS, Error: err.Error()}
	}
	// OVS prints no offload status: its userspace conntrack runs on the CPU.
	return Sample{Source: SourceOVS, Found: oj.Found}
}

// ScaleOutcome is one hypervisor's connection-scale result over its samples.
type ScaleOutcome struct {
	Opened   int     `json:"opened"`
	Found    int     `json:"found"`    // the last sample's
	Hardware int     `json:"hardware"` // the last sample's
	Share    float64 `json:"share"`    // Hardware / Opened of the last sample
	Source   string  `json:"source,omitempty"`
	// TimeToOffload is the first sample at which every connection the run
	// opened was in the table and [HW_OFFLOAD]; nil when none was.
	TimeToOffload *time.Duration `json:"time_to_offload_ns,omitempty"`
	Samples       int            `json:"samples"`
	Fill          *Size          `json:"fill,omitempty"` // the last sample's
	Reason        string         `json:"reason"`
}

// Summarize gives the share (the last good sample's [HW_OFFLOAD]
// connections over those the run opened) and the time until every one of
// them was offloaded; wait is the omit period the samples were taken in,
// for the reason's words.
func Summarize(samples []Sample, opened int, wait time.Duration) ScaleOutcome {
	o := ScaleOutcome{Opened: opened}
	var last *Sample
	var errs int
	for i := range samples {
		s := &samples[i]
		if s.Error != "" {
			errs++
			continue
		}
		o.Samples++
		last = s
		if o.TimeToOffload == nil && opened > 0 && s.Source == SourceKernel && s.Found == opened && s.Hardware == opened {
			at := s.At
			o.TimeToOffload = &at
		}
	}
	if last == nil {
		o.Reason = fmt.Sprintf("no sample of the table within the %s offload wait", wait)
		if errs > 0 {
			o.Reason += fmt.Sprintf(" (%d read(s) failed: %s)", errs, samples[len(samples)-1].Error)
		}
		return o
	}
	o.Found, o.Hardware, o.Source = last.Found, last.Hardware, last.Source
	if opened > 0 {
		o.Share = float64(last.Hardware) / float64(opened)
	}
	at := fmt.Sprintf("the last of %d samples (%.1f s)", o.Samples, last.At.Seconds())
	switch {
	case last.Source == SourceOVS:
		o.Reason = fmt.Sprintf("%s: OVS's userspace conntrack holds %d of the %d connections the run opened, the kernel's none: software, never offloaded", at, last.Found, opened)
	case o.TimeToOffload != nil:
		o.Reason = fmt.Sprintf("all %d connections [HW_OFFLOAD] at %.1f s; %s: %d of %d (%s)", opened, o.TimeToOffload.Seconds(), at, last.Hardware, opened, sharePercent(o.Share))
	default:
		o.Reason = fmt.Sprintf("never all [HW_OFFLOAD] within the %s offload wait; %s: %d of %d [HW_OFFLOAD] (%s), %d in the table", wait, at, last.Hardware, opened, sharePercent(o.Share), last.Found)
	}
	if o.Fill = last.Fill; o.Fill != nil {
		if o.Fill.Room() == 0 {
			o.Reason += fmt.Sprintf("; the table is full (%d of %d entries): new connections are dropped, not tracked, so a missing one is the table's limit, not offload", o.Fill.Count, o.Fill.Max)
		} else {
			o.Reason += fmt.Sprintf("; table %d of %d entries", o.Fill.Count, o.Fill.Max)
		}
	}
	if errs > 0 {
		o.Reason += fmt.Sprintf("; %d read(s) failed", errs)
	}
	return o
}

func sharePercent(s float64) string { return fmt.Sprintf("%.0f %%", 100*s) }

// Sampler reads the tables every Every from Start, and only while a read
// can end before Until (the end of iperf3's omit period): a read is not
// started when the longest read so far would end after Until, every read's
// context ends at Until, and a read that ended after it is dropped and
// ends the sampling.
type Sampler struct {
	Start, Until time.Time
	Every        time.Duration
	// Now and Sleep are the clock (time.Now and a timer when nil).
	Now   func() time.Time
	Sleep func(ctx context.Context, d time.Duration) error
	// Read reads every hypervisor once; the sampler stamps the samples' At.
	Read func(ctx context.Context) []Sample
}

// Tick is one read the sampler made, kept or dropped.
type Tick struct {
	Began, Ended time.Time
	Samples      []Sample
	Dropped      bool // it ended after Until: not used
}

// Run samples until Until or ctx ends, and returns every read it made.
func (s Sampler) Run(ctx context.Context) []Tick {
	now, sleep := s.Now, s.Sleep
	if now == nil {
		now = time.Now
	}
	if sleep == nil {
		sleep = timerSleep
	}
	if s.Every <= 0 || s.Read == nil {
		return nil
	}
	var ticks []Tick
	var longest time.Duration
	for k := 0; ; k++ {
		next := s.Start.Add(time.Duration(k) * s.Every)
		t := now()
		if next.After(t) {
			if err := sleep(ctx, next.Sub(t)); err != nil {
				return ticks
			}
			t = now()
		}
		if ctx.Err() != nil || !t.Add(longest).Before(s.Until) {
			return ticks
		}
		rctx, cancel := context.WithDeadline(ctx, s.Until)
		got := s.Read(rctx)
		cancel()
		end := now()
		tk := Tick{Began: t, Ended: end, Samples: got, Dropped: end.After(s.Until)}
		for i := range tk.Samples {
			tk.Samples[i].At = end.Sub(s.Start)
		}
		ticks = append(ticks, tk)
		if tk.Dropped {
			return ticks
		}
		longest = max(longest, end.Sub(t))
		// A read longer than Every: the next starts at the next whole tick.
		for s.Start.Add(time.Duration(k+1) * s.Every).Before(end) {
			k++
		}
	}
}

// Kept are the samples of the reads that ended within the omit period,
// per hypervisor index of Read's answer.
func Kept(ticks []Tick) [][]Sample {
	var out [][]Sample
	for _, t := range ticks {
		if t.Dropped {
			continue
		}
		for i, smp := range t.Samples {
			for len(out) <= i {
				out = append(out, nil)
			}
			out[i] = append(out[i], smp)
		}
	}
	return out
}

func timerSleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
