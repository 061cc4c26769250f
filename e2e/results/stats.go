package results

import (
	"fmt"
	"math"
	"sort"
)

// StatOf computes median, min, max, mean and coefficient of variation of xs.
// The CV uses the sample standard deviation (n-1) and is 0 for fewer than
// two values or a zero mean.
func StatOf(xs []float64) Stat {
	n := len(xs)
	if n == 0 {
		return Stat{}
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	st := Stat{N: n, Min: s[0], Max: s[n-1], Median: median(s)}
	sum := 0.0
	for _, x := range s {
		sum += x
	}
	st.Mean = sum / float64(n)
	if n >= 2 && st.Mean != 0 {
		ss := 0.0
		for _, x := range s {
			d := x - st.Mean
			ss += d * d
		}
		st.CVPercent = math.Sqrt(ss/float64(n-1)) / math.Abs(st.Mean) * 100
	}
	return st
}

// median of an already sorted, non-empty slice.
func median(s []float64) float64 {
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// IntervalStatsOf summarises a per-interval series; nil for an empty one.
// It gives every interval statistic the results record and the report
// prints (iperf3.IntervalStats is a different rule, see its Stats).
// Intervals shorter than half the median interval length (iperf3's trailing
// partial interval) are left out, since their rate is noise, unless that
// would leave nothing.
func IntervalStatsOf(iv []Interval) *IntervalStats {
	if len(iv) == 0 {
		return nil
	}
	lens := make([]float64, len(iv))
	for i, x := range iv {
		lens[i] = x.End - x.Start
	}
	sort.Float64s(lens)
	typical := median(lens)
	use := make([]Interval, 0, len(iv))
	for _, x := range iv {
		if x.End-x.Start >= typical/2 {
			use = append(use, x)
		}
	}
	if len(use) == 0 {
		use = iv
	}
	bps := make([]float64, len(use))
	worst := use[0]
	for i, x := range use {
		bps[i] = x.Bps
		if x.Bps < worst.Bps {
			worst = x
		}
	}
	sort.Float64s(bps)
	return &IntervalStats{
		Count:     len(use),
		MinBps:    bps[0],
		MedianBps: median(bps),
		MaxBps:    bps[len(bps)-1],
		Worst:     worst,
	}
}

// Summarize fills p.Summary and every run's IntervalStats from p.Runs.
// cvLimitPercent > 0 marks the profile unstable when the CV of the
// delivered rate over two or more successful repeats exceeds it.
func Summarize(p *ProfileResult, cvLimitPercent float64) {
	var delivered, offered, loss, retr []float64
	var pooled []Interval
	s := Summary{}
	for i := range p.Runs {
		r := &p.Runs[i]
		r.IntervalStats = IntervalStatsOf(r.Intervals)
		if r.Error != "" {
			s.Failed++
			continue
		}
		s.Runs++
		delivered = append(delivered, r.DeliveredBps)
		offered = append(offered, r.OfferedBps)
		loss = append(loss, r.LossPercent)
		retr = append(retr, float64(r.Retransmits))
		pooled = append(pooled, r.Intervals...)
	}
	s.Delivered = StatOf(delivered)
	s.Offered = StatOf(offered)
	s.Loss = StatOf(loss)
	s.Retransmits = StatOf(retr)
	s.Intervals = IntervalStatsOf(pooled)
	s.CPU = summarizeCPU(p.Runs)
	if cvLimitPercent > 0 && s.Delivered.N >= 2 && s.Delivered.CVPercent > cvLimitPercent {
		s.Unstable = true
		s.UnstableReason = fmt.Sprintf("delivered CV %.1f%% over %d repeats exceeds the limit %.1f%%",
			s.Delivered.CVPercent, s.Delivered.N, cvLimitPercent)
	}
	p.Summary = s
	SummarizePackets(p)
}
