// Package sockperf measures latency between the two guests with sockperf
// (Mellanox/NVIDIA): a pure parser of the client's summary (Parse), a pure
// parser of ping's per-reply lines for first-packet latency (ParsePing), and
// runners over remote.Runner (server on one guest, ping-pong client on the
// other).
//
// What is parsed, and why: sockperf prints one human-readable summary per
// server at the end of a ping-pong or under-load run. Its shape is the same
// from 3.7 (Debian 12, Ubuntu 22.04) to 3.10 (Ubuntu 24.04): src/client.cpp's
// printPercentiles and client_statistics (tags 3.7 and 3.10 of
// github.com/Mellanox/sockperf). 3.8 onwards adds mean-ad, median-ad, siqr,
// cv, std-error and a confidence interval inside the "avg-..." line and an
// optional --histogram; no version has a JSON output. --full-log dumps every
// valid message (tx/rx time, rtt) as CSV: the same observations the summary
// sorts, so it adds nothing the percentiles need, is megabytes at full
// rate, and does NOT include the first messages of a run (sockperf discards
// its 400 ms warm-up window from every statistic and from the log, recorded
// in testdata/v3.7-pp-udp-m1400-t1-fulllog.txt), so it cannot show
// first-packet latency either. The harness therefore parses the summary
// only, and measures first packets with ping (ParsePing).
//
// Units: sockperf prints microseconds. Without --full-rtt its "latency" is
// half the round trip ("avg-latency", "Latency is"); the runner always
// passes --full-rtt, and the parser records which of the two it read
// (Result.RoundTrip), so a half-RTT number is never reported as an RTT.
//
// Parse reads 3.7's summary as recorded and the avg line of 3.8+ and 3.10 from
// public output and the source, with ANSI colours stripped; it refuses
// sockperf's exit-0 failures, a half-RTT "latency" unless the caller asks for
// it, and any percentile out of order. A LostMessageError is a ping-pong that
// lost a message in its warm-up; Run runs it once more with a warning.
//
// The runners: Start, Ping and Stop (the server on the server guest's data
// address, seen listening with wait.Poll; the client bounded by -t plus
// latency.grace; split so that the under-load profile starts its load only
// after the server listens), and FirstPacket (ping after an idle gap, per
// flow). A missing tool names the guest and the package.
package sockperf

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
)

// Percentile is one "---> percentile P = V" line.
type Percentile struct {
	P  float64 `json:"p"`  // e.g. 99.9
	Us float64 `json:"us"` // microseconds
}

// Result is one sockperf client summary.
type Result struct {
	Version string `json:"version,omitempty"` // "3.7-no.git"
	// Protocol is "udp" or "tcp" from the client's "[ 0] IP = ... # UDP" line.
	Protocol string `json:"protocol,omitempty"`
	// RoundTrip is true when the values are full round trips (--full-rtt:
	// "avg-rtt"); false when sockperf halved them ("avg-latency"/"avg-lat").
	RoundTrip bool `json:"round_trip"`
	// The valid window ("[Valid Duration]"): warm-up and cool-down excluded.
	RunTimeSeconds   float64 `json:"run_time_seconds"`
	SentMessages     int64   `json:"sent_messages"`
	ReceivedMessages int64   `json:"received_messages"`
	Observations     int64   `json:"observations"`
	AvgUs            float64 `json:"avg_us"`
	StdDevUs         float64 `json:"std_dev_us"`
	Dropped          int64   `json:"dropped"`
	Duplicated       int64   `json:"duplicated"`
	OutOfOrder       int64   `json:"out_of_order"`
	MaxUs            float64 `json:"max_us"`
	MinUs            float64 `json:"min_us"`
	// Percentiles in sockperf's order (highest first).
	Percentiles []Percentile `json:"percentiles"`
}

// Percentile returns the value of percentile p (e.g. 99.9), if printed.
func (r Result) Percentile(p float64) (float64, bool) {
	for _, q := range r.Percentiles {
		if math.Abs(q.P-p) < 1e-6 {
			return q.Us, true
		}
	}
	return 0, false
}

// P50, P99 and P999 are the percentiles the harness reports; Parse
// guarantees all three are present.
func (r Result) P50() float64  { v, _ := r.Percentile(50); return v }
func (r Result) P99() float64  { v, _ := r.Percentile(99); return v }
func (r Result) P999() float64 { v, _ := r.Percentile(99.9); return v }

// Warnings are what the summary says went wrong without failing the run:
// messages lost, duplicated or reordered in the valid window.
func (r Result) Warnings() []string {
	var w []string
	if r.Dropped > 0 || r.Duplicated > 0 || r.OutOfOrder > 0 {
		w = append(w, fmt.Sprintf("sockperf counted %d dropped, %d duplicated and %d out-of-order messages in the valid window", r.Dropped, r.Duplicated, r.OutOfOrder))
	}
	if r.SentMessages > r.ReceivedMessages {
		w = append(w, fmt.Sprintf("sockperf sent %d messages in the valid window and received %d replies", r.SentMessages, r.ReceivedMessages))
	}
	return w
}

// RequiredPercentiles are the percentiles a summary must have: sockperf
// prints percentile p when round(p * observations) >= 1, so any run with an
// observation has them.
var RequiredPercentiles = []float64{50, 99, 99.9}

var (
	ansiRE     = regexp.MustCompile("\x1b\\[[0-9;]*m")
	versionRE  = regexp.MustCompile(`== version #(\S+)`)
	protoRE    = regexp.MustCompile(`^\[\s*\d+\]\s+IP\s*=\s*\S+\s+PORT\s*=\s*\d+\s+#\s*(UDP|TCP)`)
	validRE    = regexp.MustCompile(`^\[Valid Duration\] RunTime=([0-9.]+) sec; SentMessages=(\d+); ReceivedMessages=(\d+)$`)
	avgRE      = regexp.MustCompile(`^====> avg-(rtt|latency|lat)=([0-9.]+) \(std-dev=([0-9.]+)[,)]`)
	countsRE   = regexp.MustCompile(`^# dropped messages = (\d+); # duplicated messages = (\d+); # out-of-order messages = (\d+)$`)
	totalRE    = regexp.MustCompile(`^Total (\d+) observations`)
	extremeRE  = regexp.MustCompile(`^---> <?(MAX|MIN)>? observation =\s*([0-9.]+)$`)
	pctRE      = regexp.MustCompile(`^---> percentile\s+([0-9.]+) =\s*([0-9.]+)$`)
	serverNoRE = regexp.MustCompile(`^========= Printing statistics for Server No: (\d+)$`)
	totalRunRE = regexp.MustCompile(`^\[Total Run\] RunTime=([0-9.]+) sec; Warm up time=(\d+) msec; SentMessages=(\d+); ReceivedMessages=(\d+)$`)
)

// LostMessageError is a ping-pong that measured nothing because a message
// went unanswered in its warm-up: ping-pong waits for every reply and
// resends nothing over UDP, so one lost packet ends its observations.
type LostMessageError struct {
	Msg            string
	Sent, Received int64
}

func (e *LostMessageError) Error() string { return e.Msg }

// lostInWarmup explains a ping-pong without a valid observation from its
// [Total Run] line (m: runtime, warm-up ms, sent, received); nil when the
// line is missing or every message was answered.
func lostInWarmup(m []string) *LostMessageError {
	if m == nil {
		return nil
	}
	sent, errS := strconv.ParseInt(m[3], 10, 64)
	recv, errR := strconv.ParseInt(m[4], 10, 64)
	if errS != nil || errR != nil || sent <= recv {
		return nil
	}
	return &LostMessageError{Sent: sent, Received: recv, Msg: fmt.Sprintf(": of the %d messages it sent in %s s, %d were answered, all within its %s ms warm-up; a message or its reply was lost, and ping-pong waits for every reply and resends nothing, so the rest of the run measured nothing: the data path dropped a packet of the pair's flow",
		sent, m[1], recv, m[2])}
}

// Parse reads a sockperf ping-pong or under-load client's output (stdout
// and stderr together: sockperf 3.7 writes its errors to stdout). It fails
// on sockperf's own errors (it exits 0 after "ERROR: Can`t connect" and "No
// messages were received"), on a summary without the window, the average,
// the counts, MAX, MIN or the required percentiles, on a second server's
// statistics, and on any value out of order: percentiles must not decrease
// as p grows, and MIN <= every percentile <= MAX.
func Parse(data []byte) (Result, error) {
	var r Result
	var seen struct{ valid, avg, counts, total, max, min bool }
	var problems []string
	var total []string // the [Total Run] line's fields, for a run with no valid observation
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(ansiRE.ReplaceAllString(sc.Text(), ""))
		line = strings.TrimSpace(strings.TrimPrefix(line, "sockperf:"))
		switch {
		case strings.HasPrefix(line, "ERROR:"):
			return r, fmt.Errorf("sockperf: %s", line)
		case strings.HasPrefix(line, "No messages were received"):
			return r, fmt.Errorf("sockperf: %s", line)
		case strings.HasPrefix(line, "No valid observations found"):
			if lost := lostInWarmup(total); lost != nil {
				lost.Msg = "sockperf: " + line + lost.Msg
				return r, lost
			}
			return r, fmt.Errorf("sockperf: %s", line)
		}
		if m := totalRunRE.FindStringSubmatch(line); m != nil {
			total = m
			continue
		}
		if m := versionRE.FindStringSubmatch(line); m != nil && r.Version == "" {
			r.Version = m[1]
			continue
		}
		if m := protoRE.FindStringSubmatch(line); m != nil && r.Protocol == "" {
			r.Protocol = strings.ToLower(m[1])
			continue
		}
		if m := serverNoRE.FindStringSubmatch(line); m != nil && m[1] != "0" {
			return r, fmt.Errorf("sockperf printed statistics for server %s: one server per run is expected", m[1])
		}
		if m := validRE.FindStringSubmatch(line); m != nil {
			seen.valid = true
			r.RunTimeSeconds = num(m[1], &problems)
			r.SentMessages, r.ReceivedMessages = count(m[2], &problems), count(m[3], &problems)
			continue
		}
		if m := avgRE.FindStringSubmatch(line); m != nil {
			seen.avg = true
			r.RoundTrip = m[1] == "rtt"
			r.AvgUs, r.StdDevUs = num(m[2], &problems), num(m[3], &problems)
			continue
		}
		if m := countsRE.FindStringSubmatch(line); m != nil {
			seen.counts = true
			r.Dropped, r.Duplicated, r.OutOfOrder = count(m[1], &problems), count(m[2], &problems), count(m[3], &problems)
			continue
		}
		if m := totalRE.FindStringSubmatch(line); m != nil {
			seen.total = true
			r.Observations = count(m[1], &problems)
			continue
		}
		if m := extremeRE.FindStringSubmatch(line); m != nil {
			v := num(m[2], &problems)
			if m[1] == "MAX" {
				seen.max, r.MaxUs = true, v
			} else {
				seen.min, r.MinUs = true, v
			}
			continue
		}
		if m := pctRE.FindStringSubmatch(line); m != nil {
			p := num(m[1], &problems)
			if p <= 0 || p >= 100 {
				problems = append(problems, fmt.Sprintf("percentile %s is not between 0 and 100", m[1]))
			}
			r.Percentiles = append(r.Percentiles, Percentile{P: p, Us: num(m[2], &problems)})
		}
	}
	if err := sc.Err(); err != nil {
		return r, fmt.Errorf("sockperf output: %w", err)
	}
	for _, miss := range []struct {
		ok   bool
		what string
	}{
		{seen.valid, `"[Valid Duration]" line`},
		{seen.avg, `"====> avg-..." line`},
		{seen.counts, `"# dropped messages" line`},
		{seen.total, `"Total N observations" line`},
		{seen.max, `"<MAX> observation" line`},
		{seen.min, `"<MIN> observation" line`},
	} {
		if !miss.ok {
			problems = append(problems, "no "+miss.what)
		}
	}
	for _, p := range RequiredPercentiles {
		if _, ok := r.Percentile(p); !ok && seen.total {
			problems = append(problems, fmt.Sprintf("no percentile %g", p))
		}
	}
	problems = append(problems, r.orderProblems()...)
	if len(problems) > 0 {
		return r, errors.New("sockperf summary: " + strings.Join(problems, "; "))
	}
	return r, nil
}

// orderProblems checks the invariants of a summary: no value below MIN or
// above MAX, percentiles listed from the highest p down with values that
// never grow as p falls, observations equal to the replies counted, and
// a valid window with at least one observation.
func (r Result) orderProblems() []string {
	var p []string
	if r.MinUs > r.MaxUs {
		p = append(p, fmt.Sprintf("MIN %.3f is above MAX %.3f", r.MinUs, r.MaxUs))
	}
	for i, q := range r.Percentiles {
		if q.Us < r.MinUs || q.Us > r.MaxUs {
			p = append(p, fmt.Sprintf("percentile %g = %.3f is outside MIN %.3f .. MAX %.3f", q.P, q.Us, r.MinUs, r.MaxUs))
		}
		if i == 0 {
			continue
		}
		prev := r.Percentiles[i-1]
		if q.P >= prev.P {
			p = append(p, fmt.Sprintf("percentile %g listed after percentile %g (sockperf lists them from the highest down)", q.P, prev.P))
		}
		if q.Us > prev.Us {
			p = append(p, fmt.Sprintf("percentile %g = %.3f is above percentile %g = %.3f", q.P, q.Us, prev.P, prev.Us))
		}
	}
	if r.Observations != r.ReceivedMessages {
		p = append(p, fmt.Sprintf("%d observations but %d received messages in the valid window", r.Observations, r.ReceivedMessages))
	}
	if r.Observations < 1 {
		p = append(p, "no observation")
	}
	if r.AvgUs > 0 && (r.AvgUs < r.MinUs || r.AvgUs > r.MaxUs) {
		p = append(p, fmt.Sprintf("average %.3f is outside MIN %.3f .. MAX %.3f", r.AvgUs, r.MinUs, r.MaxUs))
	}
	return p
}

func num(s string, problems *[]string) float64 {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		*problems = append(*problems, fmt.Sprintf("%q is not a finite number", s))
		return 0
	}
	return v
}

func count(s string, problems *[]string) int64 {
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v < 0 {
		*problems = append(*problems, fmt.Sprintf("%q is not a count", s))
		return 0
	}
	return v
}

// ParseVersion reads `sockperf --version` ("sockperf, version 3.7-no.git").
func ParseVersion(data []byte) (string, error) {
	m := versionLineRE.FindSubmatch(ansiRE.ReplaceAll(data, nil))
	if m == nil {
		first, _, _ := strings.Cut(strings.TrimSpace(string(data)), "\n")
		return "", fmt.Errorf("no sockperf version in %q", first)
	}
	return string(m[1]), nil
}

var versionLineRE = regexp.MustCompile(`sockperf, version (\S+)`)
