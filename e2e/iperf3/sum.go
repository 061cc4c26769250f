package iperf3

import (
	"fmt"
	"sort"
)

// SumResults combines the results of one profile split over several iperf3
// processes that ran at the same time (consecutive ports, same duration).
//
// Rates, bytes, packets, lost packets and retransmits are summed (the
// processes ran concurrently, so their rates add up like iperf3's own
// per-stream sums do); loss is recomputed from the summed packet counts on
// the same basis the inputs used; seconds are the longest of the inputs;
// CPU utilisation is summed (each iperf3 process reports its own share of
// the host). Intervals are merged by time slot: the processes start
// together, so the i-th interval of every process covers the same slot;
// the merged interval spans the earliest start to the latest end of the
// slot and sums bytes, rates, retransmits, packets and lost packets.
// Warnings are kept, prefixed with the process number, plus a warning when
// the inputs disagree (protocol, version, requested duration, loss basis).
func SumResults(rs []Result) Result {
	if len(rs) == 0 {
		return Result{}
	}
	if len(rs) == 1 {
		return rs[0]
	}
	out := Result{
		Version: rs[0].Version, Protocol: rs[0].Protocol, Reverse: rs[0].Reverse,
		BlockSize: rs[0].BlockSize, TargetBitrate: rs[0].TargetBitrate,
		RequestedSeconds: rs[0].RequestedSeconds, OmitSeconds: rs[0].OmitSeconds,
		LossBasis: rs[0].LossBasis, HasRetransmits: true,
	}
	var jitterSum float64
	var jitterN int
	for i, r := range rs {
		if r.Protocol != out.Protocol {
			out.Warnings = append(out.Warnings, fmt.Sprintf("process %d: protocol %s differs from %s", i+1, r.Protocol, out.Protocol))
		}
		if r.Version != out.Version {
			out.Warnings = append(out.Warnings, fmt.Sprintf("process %d: iperf3 version %q differs from %q", i+1, r.Version, out.Version))
		}
		if r.RequestedSeconds != out.RequestedSeconds {
			out.Warnings = append(out.Warnings, fmt.Sprintf("process %d: requested %.0f s differs from %.0f s", i+1, r.RequestedSeconds, out.RequestedSeconds))
		}
		if r.LossBasis != out.LossBasis {
			out.Warnings = append(out.Warnings, fmt.Sprintf("process %d: loss basis %q differs from %q", i+1, r.LossBasis, out.LossBasis))
		}
		out.Streams += r.Streams
		out.Processes += max(r.Processes, 1)
		out.SenderSeconds = max(out.SenderSeconds, r.SenderSeconds)
		out.ReceiverSeconds = max(out.ReceiverSeconds, r.ReceiverSeconds)
		out.BytesSent += r.BytesSent
		out.BytesReceived += r.BytesReceived
		out.OfferedBps += r.OfferedBps
		out.DeliveredBps += r.DeliveredBps
		out.DeliveredDerived = out.DeliveredDerived || r.DeliveredDerived
		out.SenderPackets += r.SenderPackets
		out.ReceiverPackets += r.ReceiverPackets
		out.LostPackets += r.LostPackets
		out.OutOfOrder += r.OutOfOrder
		out.Retransmits += r.Retransmits
		out.HasRetransmits = out.HasRetransmits && r.HasRetransmits
		if r.JitterMs > 0 {
			jitterSum += r.JitterMs
			jitterN++
		}
		out.CPU.HostTotal += r.CPU.HostTotal
		out.CPU.HostUser += r.CPU.HostUser
		out.CPU.HostSystem += r.CPU.HostSystem
		out.CPU.RemoteTotal += r.CPU.RemoteTotal
		out.CPU.RemoteUser += r.CPU.RemoteUser
		out.CPU.RemoteSystem += r.CPU.RemoteSystem
		for _, w := range r.Warnings {
			out.Warnings = append(out.Warnings, fmt.Sprintf("process %d: %s", i+1, w))
		}
	}
	if jitterN > 0 {
		out.JitterMs = jitterSum / float64(jitterN) // iperf3 averages jitter over streams the same way
	}
	if out.Protocol == UDP {
		total := out.ReceiverPackets
		if out.LossBasis != "receiver" {
			total = out.SenderPackets
		}
		if total > 0 {
			out.LossPercent = 100 * float64(out.LostPackets) / float64(total)
		}
	} else {
		out.HasRetransmits = out.HasRetransmits && out.Protocol == TCP
	}
	series := make([][]Interval, len(rs))
	recv := make([][]Interval, len(rs))
	for i, r := range rs {
		series[i], recv[i] = r.Intervals, r.ReceiverIntervals
	}
	out.Intervals = mergeSlots(series)
	out.ReceiverIntervals = mergeSlots(recv)
	return out
}

func mergeSlots(series [][]Interval) []Interval {
	n := 0
	for _, s := range series {
		n = max(n, len(s))
	}
	if n == 0 {
		return nil
	}
	out := make([]Interval, n)
	for k := range out {
		first := true
		for _, s := range series {
			if k >= len(s) {
				continue
			}
			iv := s[k]
			m := &out[k]
			if first {
				m.Start, m.End, m.Omitted = iv.Start, iv.End, iv.Omitted
				first = false
			} else {
				m.Start = min(m.Start, iv.Start)
				m.End = max(m.End, iv.End)
				m.Omitted = m.Omitted || iv.Omitted
			}
			m.Bytes += iv.Bytes
			m.Bps += iv.Bps
			m.Retransmits += iv.Retransmits
			m.Packets += iv.Packets
			m.LostPackets += iv.LostPackets
		}
		m := &out[k]
		m.Seconds = m.End - m.Start
		if m.Packets > 0 {
			m.LossPercent = 100 * float64(m.LostPackets) / float64(m.Packets)
		}
	}
	return out
}

// Stats summarises an interval series: the seed's second reference shows
// how much a long average hides (dips to half the rate).
//
// The figures the results record and the report prints are NOT these:
// they are results.IntervalStatsOf over the intervals the harness copies
// (non-omitted ones only). The two compute the same quantity by different
// rules: here omitted and zero-length intervals are skipped and only the
// trailing interval is dropped when shorter than half the median length
// (iperf3's Seconds), and nothing left gives ok=false; there, every
// interval shorter than half the median length (End-Start) is dropped,
// wherever it is (the summary pools the series of several repeats, so a
// repeat's short last interval sits mid-series), and when that would leave
// nothing all intervals are used. Nothing outside this package's tests
// calls IntervalStats; swapping one for the other would change printed
// numbers on such edge series, so both stay.
type Stats struct {
	Count     int      `json:"count"` // non-omitted intervals considered
	MinBps    float64  `json:"min_bps"`
	MedianBps float64  `json:"median_bps"`
	MaxBps    float64  `json:"max_bps"`
	Worst     Interval `json:"worst"` // the interval with the lowest rate
}

// IntervalStats computes min/median/max and the worst interval over the
// intervals that are not omitted (-O warm-up). A trailing interval shorter
// than half of the median interval length (iperf3 prints a short remainder
// at the end of a run) is left out, since its rate is noise. ok is false
// when no interval qualifies.
func IntervalStats(ivs []Interval) (s Stats, ok bool) {
	var use []Interval
	for _, iv := range ivs {
		if !iv.Omitted && iv.Seconds > 0 {
			use = append(use, iv)
		}
	}
	if len(use) > 1 {
		lens := make([]float64, len(use))
		for i, iv := range use {
			lens[i] = iv.Seconds
		}
		sort.Float64s(lens)
		if last := use[len(use)-1]; last.Seconds < median(lens)/2 {
			use = use[:len(use)-1]
		}
	}
	if len(use) == 0 {
		return Stats{}, false
	}
	bps := make([]float64, len(use))
	s.Worst = use[0]
	for i, iv := range use {
		bps[i] = iv.Bps
		if iv.Bps < s.Worst.Bps {
			s.Worst = iv
		}
	}
	sort.Float64s(bps)
	s.Count, s.MinBps, s.MaxBps, s.MedianBps = len(use), bps[0], bps[len(bps)-1], median(bps)
	return s, true
}

func median(sorted []float64) float64 {
	n := len(sorted)
	if n%2 == 1 {
		return sorted[n/2]
	}
	return (sorted[n/2-1] + sorted[n/2]) / 2
}
