package results

import (
	"math"
	"strings"
	"testing"
)

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

func TestStatOf(t *testing.T) {
	st := StatOf([]float64{10, 12, 11, 30})
	if st.N != 4 || st.Min != 10 || st.Max != 30 || st.Median != 11.5 || st.Mean != 15.75 {
		t.Errorf("got %+v", st)
	}
	// sample sd of {10,12,11,30} = sqrt(((5.75²+3.75²+4.75²+14.25²))/3) = 9.5351...
	if !near(st.CVPercent, math.Sqrt((5.75*5.75+3.75*3.75+4.75*4.75+14.25*14.25)/3)/15.75*100) {
		t.Errorf("cv = %v", st.CVPercent)
	}
	if one := StatOf([]float64{7}); one.CVPercent != 0 || one.Median != 7 {
		t.Errorf("single: %+v", one)
	}
	if zero := StatOf(nil); zero.N != 0 {
		t.Errorf("empty: %+v", zero)
	}
}

func TestSummarizeRepeatsAndUnstable(t *testing.T) {
	p := ProfileResult{ID: "tcp-p15", Protocol: ProtoTCP, Streams: 15, Runs: []Run{
		{Repeat: 1, DeliveredBps: 22.7e9}, {Repeat: 2, DeliveredBps: 22.5e9}, {Repeat: 3, DeliveredBps: 18.0e9},
		{Repeat: 4, Error: "iperf3: the server is busy"},
	}}
	Summarize(&p, 5)
	s := p.Summary
	if s.Runs != 3 || s.Failed != 1 || s.Delivered.Median != 22.5e9 || s.Delivered.Min != 18e9 || s.Delivered.Max != 22.7e9 {
		t.Errorf("got %+v", s)
	}
	if !s.Unstable || !strings.Contains(s.UnstableReason, "exceeds the limit 5.0%") {
		t.Errorf("want unstable, got %v %q (cv %.2f)", s.Unstable, s.UnstableReason, s.Delivered.CVPercent)
	}
	Summarize(&p, 20)
	if p.Summary.Unstable {
		t.Errorf("cv %.1f%% must be within a 20%% limit", p.Summary.Delivered.CVPercent)
	}
	Summarize(&p, 0)
	if p.Summary.Unstable {
		t.Error("limit 0 means no limit")
	}
}
