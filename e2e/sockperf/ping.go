package sockperf

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// PingReply is one echo reply: "64 bytes from 198.19.250.2: icmp_seq=1
// ttl=64 time=0.043 ms".
type PingReply struct {
	Seq int     `json:"seq"`
	Us  float64 `json:"us"` // round trip, microseconds
}

// PingResult is one `ping -c N` run (iputils).
type PingResult struct {
	Transmitted int         `json:"transmitted"`
	Received    int         `json:"received"`
	Replies     []PingReply `json:"replies"` // in arrival order
}

var (
	replyRE = regexp.MustCompile(`icmp_seq=(\d+) .*time=([0-9.]+) (ms|us|usec|µs)`)
	statsRE = regexp.MustCompile(`^(\d+) packets transmitted, (\d+) (?:packets )?received`)
)

// ParsePing reads iputils ping output: every reply's sequence number and
// round trip, and the closing counts. Duplicates ("(DUP!)") are skipped;
// a run without the closing counts, with more replies than it says it
// received, or with a sequence number outside 1..transmitted is an error.
func ParsePing(data []byte) (PingResult, error) {
	var r PingResult
	statsSeen := false
	var problems []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if m := statsRE.FindStringSubmatch(line); m != nil {
			statsSeen = true
			r.Transmitted, _ = strconv.Atoi(m[1])
			r.Received, _ = strconv.Atoi(m[2])
			continue
		}
		if strings.Contains(line, "(DUP!)") {
			continue
		}
		m := replyRE.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		seq, err1 := strconv.Atoi(m[1])
		v, err2 := strconv.ParseFloat(m[2], 64)
		if err := errors.Join(err1, err2); err != nil || math.IsInf(v, 0) {
			problems = append(problems, fmt.Sprintf("reply %q: not a number", line))
			continue
		}
		if m[3] == "ms" {
			v *= 1000
		}
		r.Replies = append(r.Replies, PingReply{Seq: seq, Us: v})
	}
	if err := sc.Err(); err != nil {
		return r, fmt.Errorf("ping output: %w", err)
	}
	if !statsSeen {
		problems = append(problems, `no "N packets transmitted, M received" line`)
	}
	if statsSeen && len(r.Replies) != r.Received {
		problems = append(problems, fmt.Sprintf("%d reply lines but ping counted %d received", len(r.Replies), r.Received))
	}
	seen := map[int]bool{}
	for _, rep := range r.Replies {
		if rep.Seq < 1 || (statsSeen && rep.Seq > r.Transmitted) {
			problems = append(problems, fmt.Sprintf("icmp_seq=%d outside 1..%d", rep.Seq, r.Transmitted))
		}
		// ping marks a duplicate reply "(DUP!)" (skipped above) and counts
		// it apart: an unmarked second reply to one sequence is not ping's
		// output, and would give the flow two first packets.
		if seen[rep.Seq] {
			problems = append(problems, fmt.Sprintf("icmp_seq=%d answered twice without (DUP!)", rep.Seq))
		}
		seen[rep.Seq] = true
	}
	if len(problems) > 0 {
		return r, errors.New("ping output: " + strings.Join(problems, "; "))
	}
	return r, nil
}

// First is the round trip of the flow's first packet (icmp_seq=1); ok is
// false when the first echo got no reply (the first packet of a fresh flow
// lost is itself a finding: FirstPacket reports it).
func (r PingResult) First() (float64, bool) {
	for _, rep := range r.Replies {
		if rep.Seq == 1 {
			return rep.Us, true
		}
	}
	return 0, false
}

// Steady are the round trips of every reply but the first packet's.
func (r PingResult) Steady() []float64 {
	var out []float64
	for _, rep := range r.Replies {
		if rep.Seq != 1 {
			out = append(out, rep.Us)
		}
	}
	return out
}

// Median is the median of vs (0 for none); vs is not changed.
func Median(vs []float64) float64 {
	if len(vs) == 0 {
		return 0
	}
	s := append([]float64(nil), vs...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
