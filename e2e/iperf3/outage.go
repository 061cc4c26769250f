package iperf3

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"time"
)

// The gaps of one UDP flow (issue 38, the bond failover profile): where and
// how long the receiver got nothing, from its own intervals.
//
// How the receiver counts (iperf3's iperf_udp_recv, 3.x): every datagram
// carries a sequence number; the receiver's packets is the highest number
// seen, its lost_packets the numbers skipped, and both grow only when a
// datagram arrives (a late one, out of order, takes one back from lost). So
// a cut gives receiver intervals with no datagram (packets 0), then one
// interval that carries the whole gap in its lost_packets; a gap is never
// split over two intervals, and an interval's lost_packets is the most its
// longest run can be. The datagrams lost at the very end are counted by no
// interval: the sender's count minus the receiver's highest number.
//
// Recorded with iperf3 3.12 between namespaces, the path cut with `ip link
// set` (testdata/outage): a 1.12 s cut is 10 intervals without a datagram
// and then one with 2829 lost at 2500 datagrams/s (1.13 s).

// Gap is one run of datagrams that did not arrive.
type Gap struct {
	// From and To bound it in time, seconds from the receiver's start: From
	// is the start of the first interval without a datagram before the one
	// that carried it (that interval's own start when there was none), To
	// the end of the interval in which traffic came back (open: the
	// sender's last second, its -t). The gap began at most one interval
	// before From: in the last interval that still had arrivals.
	From, To float64
	// Lost is the datagrams the carrying interval counted lost: the most
	// the run can be. MinRun is the least: the interval's loss split over
	// its arrivals (each arrival ends a run), and at least the datagrams
	// sent over its intervals without any arrival.
	Lost, MinRun int64
	// Silent is how many intervals without a datagram came before it.
	Silent int
	// Open: traffic had not come back when the sender stopped; Lost is the
	// datagrams sent after the last one received (exact, MinRun = Lost).
	Open bool
}

// Exact reports whether the run's length is known to the datagram.
func (g Gap) Exact() bool { return g.Lost == g.MinRun }

// Outage is what a UDP flow's receiver says about its gaps.
type Outage struct {
	// PacketsPerSecond is the sender's rate in datagrams: its count over
	// its seconds (the target rate over the datagram when iperf3 gives no
	// count). One datagram is the resolution of a gap's length.
	PacketsPerSecond float64
	IntervalSeconds  float64 // the receiver's reporting interval (-i on the server)
	Sent             int64   // datagrams the sender sent
	// Lost is every datagram that did not arrive: the receiver's count and
	// the Tail it cannot count (sent after the last one it received).
	Lost, Tail int64
	OutOfOrder int64 // late datagrams (each took one back from Lost)
	// Gaps are every interval that counted loss, and an open gap at the
	// end, in time order.
	Gaps []Gap
	// End is the receiver's last interval's end (seconds).
	End float64
}

// Ms is n datagrams as milliseconds at the sender's rate.
func (o Outage) Ms(n int64) float64 {
	if o.PacketsPerSecond <= 0 {
		return math.NaN()
	}
	return float64(n) * 1000 / o.PacketsPerSecond
}

// ResolutionMs is one datagram's time at the sender's rate.
func (o Outage) ResolutionMs() float64 { return o.Ms(1) }

// Errors of Outages: what the flow lacks for gaps to be read.
var (
	ErrOutageNotUDP      = errors.New("not a UDP flow: only UDP datagrams carry the sequence numbers a gap is read from")
	ErrOutageStreams     = errors.New("more than one stream: the receiver's intervals sum the streams, a gap in one is hidden by the others")
	ErrOutageNoIntervals = errors.New("no receiver intervals (server_output_json): the client needs --get-server-output and the server -i")
	ErrOutageNoRate      = errors.New("no sender count or target rate: a gap cannot be turned into time")
	ErrOutageOrder       = errors.New("the receiver's intervals are not in time order")
)

// Outages reads the gaps of one UDP flow of one stream from its parsed
// client JSON (Parse; the receiver's intervals come from
// --get-server-output). It is pure.
func Outages(r Result) (Outage, error) {
	switch {
	case r.Protocol != UDP:
		return Outage{}, ErrOutageNotUDP
	case r.Streams > 1:
		return Outage{}, ErrOutageStreams
	case len(r.ReceiverIntervals) == 0:
		return Outage{}, ErrOutageNoIntervals
	}
	o := Outage{Sent: r.SenderPackets, OutOfOrder: r.OutOfOrder}
	switch {
	case r.SenderPackets > 0 && r.SenderSeconds > 0:
		o.PacketsPerSecond = float64(r.SenderPackets) / r.SenderSeconds
	case r.TargetBitrate > 0 && r.BlockSize > 0:
		o.PacketsPerSecond = float64(r.TargetBitrate) / 8 / float64(r.BlockSize)
	default:
		return Outage{}, ErrOutageNoRate
	}
	ivs := r.ReceiverIntervals
	secs := make([]float64, 0, len(ivs))
	for i, iv := range ivs {
		if iv.End < iv.Start || i > 0 && iv.Start < ivs[i-1].End-1e-3 || math.IsNaN(iv.Start) || math.IsNaN(iv.End) {
			return Outage{}, fmt.Errorf("%w: interval %d at %v–%v s", ErrOutageOrder, i, iv.Start, iv.End)
		}
		if iv.Seconds > 0 {
			secs = append(secs, iv.Seconds)
		}
	}
	if len(secs) == 0 {
		return Outage{}, ErrOutageNoIntervals
	}
	sort.Float64s(secs)
	o.IntervalSeconds = secs[len(secs)/2]
	o.End = ivs[len(ivs)-1].End
	silent, lastData := 0, -1
	for i, iv := range ivs {
		if iv.Packets <= 0 {
			silent++
			continue
		}
		lastData = i
		if iv.LostPackets > 0 {
			from := iv.Start
			if silent > 0 {
				from = ivs[i-silent].Start
			}
			arrived := max(iv.Packets-iv.LostPackets, 1)
			minRun := (iv.LostPackets + arrived - 1) / arrived
			if s := int64(float64(silent) * o.IntervalSeconds * o.PacketsPerSecond); s > minRun {
				minRun = min(s, iv.LostPackets)
			}
			o.Gaps = append(o.Gaps, Gap{From: from, To: iv.End, Lost: iv.LostPackets, MinRun: minRun, Silent: silent})
			o.Lost += iv.LostPackets
		}
		silent = 0
	}
	if o.Sent > 0 && r.ReceiverPackets >= 0 && o.Sent > r.ReceiverPackets {
		o.Tail = o.Sent - r.ReceiverPackets
		from, k := 0.0, 0
		if lastData >= 0 && lastData+1 < len(ivs) {
			from = ivs[lastData+1].Start
		} else if lastData >= 0 {
			from = ivs[lastData].Start
		}
		to := r.RequestedSeconds
		for _, iv := range ivs[lastData+1:] {
			if iv.Start < to {
				k++
			}
		}
		if to <= from {
			to = o.End
		}
		o.Lost += o.Tail
		// An open gap needs a whole interval without a datagram at the end.
		// A shortfall whose last interval still carried data is what was in
		// flight when the receiver stopped counting: on the lab 5 datagrams
		// (2 ms at 2500/s) after a flow that ran to its last interval were
		// read as "the flow never came back" (2026-12-06). Such a tail is
		// counted lost, never an outage: a cut inside the last interval is
		// below this profile's resolution of one interval at the end.
		if k > 0 {
			o.Gaps = append(o.Gaps, Gap{From: from, To: to, Lost: o.Tail, MinRun: o.Tail, Silent: k, Open: true})
		}
	}
	return o, nil
}

// Longest is the gap with the most datagrams lost among those that overlap
// [from, to) seconds (to <= 0: to the end); ties go to the earlier one.
func (o Outage) Longest(from, to float64) (Gap, bool) {
	best, ok := Gap{}, false
	for _, g := range o.Gaps {
		if g.To <= from || (to > 0 && g.From >= to) {
			continue
		}
		if !ok || g.Lost > best.Lost {
			best, ok = g, true
		}
	}
	return best, ok
}

// IsGap reports whether g stands out as one run rather than loss spread
// over the flow: it is open, it follows intervals without any datagram,
// its interval's loss cannot be split into single datagrams (MinRun >= 2),
// or it lost at least 4 times the median loss of the other intervals that
// lost any, plus one. Spread loss (one datagram in fifty, every interval
// a few) is no outage, whatever it sums to.
func (o Outage) IsGap(g Gap) bool {
	if g.Open || g.Silent > 0 || g.MinRun >= 2 {
		return true
	}
	var others []int64
	skipped := false
	for _, h := range o.Gaps {
		if !skipped && h == g {
			skipped = true
			continue
		}
		if !h.Open {
			others = append(others, h.Lost)
		}
	}
	if len(others) == 0 {
		return g.Lost >= 2
	}
	slices.Sort(others)
	return g.Lost >= 4*others[len(others)/2]+1
}

// Words says a gap in one line: "1131.6 ms (2829 datagrams, at least
// 1000.0 ms: 10 intervals without one) at 2.0–3.2 s".
func (o Outage) Words(g Gap) string {
	at := fmt.Sprintf("at %s–%s s", trimFloat(g.From), trimFloat(g.To))
	if g.Open {
		return fmt.Sprintf("%.1f ms and not over when the sender stopped (%d datagrams sent after the last one received) from %s s", o.Ms(g.Lost), g.Lost, trimFloat(g.From))
	}
	if g.Exact() {
		return fmt.Sprintf("%.1f ms (%d datagrams, exact) %s", o.Ms(g.Lost), g.Lost, at)
	}
	why := "its interval's loss split over its arrivals"
	if g.Silent > 0 {
		why = fmt.Sprintf("%d interval(s) without a datagram", g.Silent)
	}
	return fmt.Sprintf("%.1f ms (%d datagrams; at least %.1f ms: %s) %s", o.Ms(g.Lost), g.Lost, o.Ms(g.MinRun), why, at)
}

func trimFloat(v float64) string { return strconv.FormatFloat(math.Round(v*1000)/1000, 'f', -1, 64) }

// IntervalFlag is iperf3's -i for a reporting interval ("-i 0.1"); both
// the server (its own intervals, which --get-server-output returns) and
// the client need it. 0 = iperf3's default (1 s), no flag.
func IntervalFlag(d time.Duration) []string {
	if d <= 0 {
		return nil
	}
	return []string{"-i", strconv.FormatFloat(d.Seconds(), 'f', -1, 64)}
}
