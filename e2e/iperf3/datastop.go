package iperf3

import (
	"fmt"
	"time"
)

// What an iperf3 client's own JSON says about a data path that stopped: when
// the client last moved data, and the sentence the harness's look after a
// failed window (e2e/harness stall.go) puts in the failure.

// dataStop is when an iperf3 client last moved data, read from its own
// JSON after a failed window.
type dataStop struct {
	// Last is start.timestamp plus the end of the last interval with bytes
	// > 0 (zero when no interval had data).
	Last time.Time
	// Intervals is how many intervals the client printed.
	Intervals int
	// Stalled: the data stopped before the test's end: intervals without
	// data follow the last one with data, or the intervals end well short
	// of the requested duration (ShortRunTolerance), or none had data.
	Stalled bool
}

// clientDataStop reads the output of an `iperf3 -c … -J` client, complete
// or cut short by an error (iperf3 then prints the intervals it had, and
// the error), e.g. testdata/stall/v3.12-tcp-p1-path-cut.json:
//
//	{"start": {"timestamp": {"time": "Wed, 02 Dec 2026 15:57:07 GMT", "timesecs": 1796227027}, …,
//	           "test_start": {"protocol": "TCP", "omit": 0, "duration": 8, …}},
//	 "intervals": [… {"sum": {"start": 3.00024, "end": 4.001473, "bytes": 56360960, "omitted": false, …}},
//	               {"sum": {"start": 4.001473, "end": 5.001235, "bytes": 0, "omitted": false, …}}, …],
//	 "error": "control socket has closed unexpectedly"}
//
// start.timestamp is taken when the client connects, in whole seconds.
// After a -O warm-up the measured intervals count from 0 again, so they
// are placed after the last omitted one. ok is false when the output has
// no timestamp or no interval: there is nothing to say then.
func clientDataStop(data []byte) (ds dataStop, ok bool) {
	// Parse's error is the window's own failure, reported already; the
	// timestamp and the intervals it read before it are what matters here.
	r, _ := Parse(data)
	if r.StartedAt.IsZero() || len(r.Intervals) == 0 {
		return dataStop{}, false
	}
	start := r.StartedAt
	omitEnd := r.OmitSeconds
	for _, iv := range r.Intervals {
		if iv.Omitted {
			omitEnd = iv.End
		}
	}
	ds.Intervals = len(r.Intervals)
	lastEnd, last := 0.0, -1
	for i, iv := range r.Intervals {
		end := iv.End
		if !iv.Omitted {
			end += omitEnd
		}
		if iv.Bytes > 0 {
			lastEnd, last = end, i
		}
	}
	if last < 0 {
		ds.Stalled = true
		return ds, true
	}
	ds.Last = start.Add(time.Duration(lastEnd * float64(time.Second)))
	measured := lastEnd - omitEnd
	ds.Stalled = last < len(r.Intervals)-1 ||
		(r.RequestedSeconds > 0 && measured < r.RequestedSeconds-ShortRunTolerance(r.RequestedSeconds))
	return ds, true
}

// DescribeDataStop is the finding about the clients of a failed window
// ("iperf3 client on vm1 stopped receiving at 12:56:49", UTC like every
// log line); "" when every client moved data to the end, or none printed
// intervals. With several processes, the latest stop counts.
func DescribeDataStop(guest string, m Measurement) string {
	var latest dataStop
	stalled, seen := false, false
	for _, p := range m.Processes {
		ds, ok := clientDataStop(p.ClientJSON)
		if !ok {
			continue
		}
		seen = true
		stalled = stalled || ds.Stalled
		if ds.Last.After(latest.Last) {
			latest.Last = ds.Last
		}
		latest.Intervals += ds.Intervals
	}
	switch {
	case !seen || !stalled:
		return ""
	case latest.Last.IsZero():
		return fmt.Sprintf("iperf3 client on %s moved no data in its %d intervals", guest, latest.Intervals)
	}
	return fmt.Sprintf("iperf3 client on %s stopped receiving at %s", guest, latest.Last.UTC().Format("15:04:05"))
}
