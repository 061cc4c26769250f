package iperf3

import (
	"strings"
	"testing"
)

// Two recorded UDP runs (v3.12-udp-b0-p1.json, v3.12-udp-500m-p15-l700.json)
// stand in for two processes of one split profile: sums and loss are checked
// against the numbers in those files.
func TestSumResultsUDP(t *testing.T) {
	a, err := Parse(load(t, "v3.12-udp-b0-p1.json"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := Parse(load(t, "v3.12-udp-500m-p15-l700.json"))
	if err != nil {
		t.Fatal(err)
	}
	s := SumResults([]Result{a, b})
	if s.Streams != 16 || s.Processes != 2 || s.Protocol != UDP {
		t.Errorf("streams/processes/protocol = %d/%d/%s", s.Streams, s.Processes, s.Protocol)
	}
	if !near(s.OfferedBps, 2858949518.29472+894054174.7015927, 1e-12) || !near(s.DeliveredBps, 2578790824.81507+847619176.987615, 1e-12) {
		t.Errorf("offered/delivered = %v/%v", s.OfferedBps, s.DeliveredBps)
	}
	if s.BytesSent != 1786860960+558789000 || s.BytesReceived != 1611789072+530397700 {
		t.Errorf("bytes = %d/%d", s.BytesSent, s.BytesReceived)
	}
	// loss from packet counts, not the mean of the two percentages
	if s.LostPackets != 120899+39903 || s.ReceiverPackets != 1234013+797614 || !near(s.LossPercent, 100*float64(120899+39903)/float64(1234013+797614), 1e-12) {
		t.Errorf("lost %d of %d = %v %%", s.LostPackets, s.ReceiverPackets, s.LossPercent)
	}
	if s.SenderSeconds != 5.000049 { // max(5.000049, 5.000046)
		t.Errorf("sender seconds %v", s.SenderSeconds)
	}
	// slot 0: both processes' first receiver intervals added
	if len(s.ReceiverIntervals) != 5 {
		t.Fatalf("receiver intervals %d", len(s.ReceiverIntervals))
	}
	m0, a0, b0 := s.ReceiverIntervals[0], a.ReceiverIntervals[0], b.ReceiverIntervals[0]
	if m0.Bytes != a0.Bytes+b0.Bytes || m0.Packets != a0.Packets+b0.Packets || m0.LostPackets != a0.LostPackets+b0.LostPackets ||
		!near(m0.Bps, a0.Bps+b0.Bps, 1e-12) || m0.Start != 0 || m0.End != max(a0.End, b0.End) {
		t.Errorf("merged slot 0 = %+v from %+v and %+v", m0, a0, b0)
	}
	if !near(m0.LossPercent, 100*float64(m0.LostPackets)/float64(m0.Packets), 1e-12) {
		t.Errorf("slot loss %v", m0.LossPercent)
	}
	if s.CPU.HostTotal != a.CPU.HostTotal+b.CPU.HostTotal {
		t.Errorf("cpu %v", s.CPU.HostTotal)
	}
	// same version, duration and loss basis: no mismatch warning, only the processes' own (CPU) ones
	for _, w := range s.Warnings {
		if !strings.HasPrefix(w, "process ") || strings.Contains(w, "differs") {
			t.Errorf("unexpected warning %q", w)
		}
	}
}

func TestSumResultsTCPAndMismatch(t *testing.T) {
	a, _ := Parse(load(t, "v3.12-tcp-p1.json"))
	b, _ := Parse(load(t, "v3.12-tcp-p15.json"))
	s := SumResults([]Result{a, b})
	if s.Retransmits != 8448+606 || !s.HasRetransmits || s.LossPercent != 0 {
		t.Errorf("retransmits %d has %v loss %v", s.Retransmits, s.HasRetransmits, s.LossPercent)
	}
	if !near(s.DeliveredBps, 7485189016.197552+11506015965.548342, 1e-12) {
		t.Errorf("delivered %v", s.DeliveredBps)
	}
	// TCP + UDP, different versions: flagged, not silently merged
	u, _ := Parse(load(t, "v3.16-udp-b0-p1-public.json"))
	m := SumResults([]Result{a, u})
	if len(m.Warnings) < 2 {
		t.Errorf("mismatch warnings missing: %q", m.Warnings)
	}
	if one := SumResults([]Result{a}); one.OfferedBps != a.OfferedBps || one.Processes != 1 {
		t.Error("a single result must come back unchanged")
	}
	if z := SumResults(nil); z.Processes != 0 || z.OfferedBps != 0 {
		t.Error("empty input")
	}
}

func TestIntervalStats(t *testing.T) {
	// per-second sender rates of the public 3.16 sample, whose worst second is
	// 7.00106-8.002562 s at 1550614056.2398512 bit/s
	r, err := Parse(load(t, "v3.16-udp-b0-p1-public.json"))
	if err != nil {
		t.Fatal(err)
	}
	s, ok := IntervalStats(r.Intervals)
	if !ok || s.Count != 20 {
		t.Fatalf("stats %+v ok %v", s, ok)
	}
	if s.MinBps != 1550614056.2398512 || s.Worst.Start != 7.00106 || s.MaxBps != 1730081238.4016538 {
		t.Errorf("min %v worst %+v max %v", s.MinBps, s.Worst, s.MaxBps)
	}
	// median of 20 values = mean of the 10th and 11th smallest
	if !(s.MedianBps > s.MinBps && s.MedianBps < s.MaxBps) || !near(s.MedianBps, (1678823175.0861967+1679487387.4630966)/2, 1e-12) {
		t.Errorf("median %v", s.MedianBps)
	}

	// omitted intervals and a short trailing remainder are left out
	ivs := []Interval{
		{Start: 0, End: 1, Seconds: 1, Bps: 1, Omitted: true},
		{Start: 1, End: 2, Seconds: 1, Bps: 300},
		{Start: 2, End: 3, Seconds: 1, Bps: 100},
		{Start: 3, End: 4, Seconds: 1, Bps: 200},
		{Start: 4, End: 4.1, Seconds: 0.1, Bps: 5},
	}
	s, ok = IntervalStats(ivs)
	if !ok || s.Count != 3 || s.MinBps != 100 || s.MedianBps != 200 || s.MaxBps != 300 || s.Worst.Start != 2 {
		t.Errorf("stats %+v", s)
	}
	if _, ok := IntervalStats([]Interval{{Omitted: true, Seconds: 1}}); ok {
		t.Error("only omitted intervals must give ok=false")
	}
}
