package faultlab

import (
	"bufio"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/faultproxy"
	"github.com/mosk-qa/asap2-e2e/e2e/remote"
)

// The pure parts of the driver: parsers of what the harness and the tools
// write, and the wording of the matrix's cells (tests in parse_test.go).

// Tail is the last n lines of s.
func Tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// GrepLine returns the first line of s matching re ("" when none).
func GrepLine(s, re string) string {
	rx := regexp.MustCompile(re)
	sc := bufio.NewScanner(strings.NewReader(s))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if rx.MatchString(sc.Text()) {
			return strings.TrimSpace(sc.Text())
		}
	}
	return ""
}

// Excerpt is the first match of re in text with up to before characters of
// context ahead of it, cut to n characters ("" when nothing matches).
func Excerpt(text, re string, before, n int) string {
	loc := regexp.MustCompile(re).FindStringIndex(text)
	if loc == nil {
		return ""
	}
	start := max(0, loc[0]-before)
	if i := strings.LastIndexByte(text[:loc[0]], '\n'); i >= start {
		start = i + 1
	}
	out := text[start:]
	if i := strings.IndexByte(out, '\n'); i >= 0 {
		out = out[:i]
	}
	if start > 0 && text[start-1] != '\n' {
		out = "…" + out
	}
	return Shorten(strings.TrimSpace(out), n)
}

// Shorten drops a leading time stamp (harness.log's or the console's) and
// cuts s to n characters.
func Shorten(s string, n int) string {
	s = regexp.MustCompile(`^\S+Z |^\[\d\d:\d\d:\d\d\] `).ReplaceAllString(s, "")
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// HitNames lists the rules that fired, in the order they first did, with
// their counts ("rule×2, other×1").
func HitNames(in *faultproxy.Injector) string {
	seen := map[string]int{}
	var order []string
	for _, h := range in.Hits() {
		if seen[h.Rule] == 0 {
			order = append(order, h.Rule)
		}
		seen[h.Rule]++
	}
	var parts []string
	for _, n := range order {
		parts = append(parts, fmt.Sprintf("%s×%d", n, seen[n]))
	}
	return strings.Join(parts, ", ")
}

// OrNone is s, or "none" when it is empty.
func OrNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// ReBoundSaid is the harness's sentence for a command killed at its bound
// (remote.BoundError: the command quoted with %q).
const ReBoundSaid = `"(?:[^"\\]|\\.)*" did not finish within \S+ \([^)]*\)`

// FirstMatch is the first match of re in text, with a quoted command at
// its start cut to 60 characters ("" when nothing matches).
func FirstMatch(text, re string) string {
	m := regexp.MustCompile(re).FindString(text)
	if strings.HasPrefix(m, `"`) {
		if k := strings.Index(m, `" did not finish`); k > 61 {
			m = m[:61] + "…" + m[k:]
		}
	}
	return m
}

// Explanation is the harness's look at what changed after a failed
// window or wait ("after the window: …", "after the wait: …"), run ids left
// out of the names it gives.
func Explanation(log, after string) string {
	_, text, ok := FirstLogLine(log, time.Time{}, `^after the `+regexp.QuoteMeta(after)+`: `)
	if !ok {
		return ""
	}
	return regexp.MustCompile(`\S+-\d{8}t\d{6}-[0-9a-f]{4}-`).ReplaceAllString(text, "…-")
}

// logTimeRe is the stamp every harness.log line starts with.
var logTimeRe = regexp.MustCompile(`^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z) `)

// LogLine is one stamped line of harness.log, e.g.
//
//	2026-12-02T15:08:33.58453615Z TCP 1 stream (-P1) repeat 1 FAILED: …
type LogLine struct {
	At   time.Time
	Text string // without the stamp
}

// StampedLines returns the lines of harness.log that carry a time stamp.
func StampedLines(log string) []LogLine {
	var out []LogLine
	sc := bufio.NewScanner(strings.NewReader(log))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		m := logTimeRe.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		if at, err := time.Parse(time.RFC3339Nano, m[1]); err == nil {
			out = append(out, LogLine{At: at, Text: line[len(m[0]):]})
		}
	}
	return out
}

// FirstLogLine returns the time and text of the first harness.log line
// stamped at or after since that matches re.
func FirstLogLine(log string, since time.Time, re string) (time.Time, string, bool) {
	rx := regexp.MustCompile(re)
	for _, l := range StampedLines(log) {
		if !l.At.Before(since) && rx.MatchString(l.Text) {
			return l.At, l.Text, true
		}
	}
	return time.Time{}, "", false
}

// TrafficSpan is when a run had traffic on the data path: from its first
// evidence flow or window to the end of its last one.
func TrafficSpan(log string) (from, to time.Time, ok bool) {
	starts := regexp.MustCompile(`^sustained \w+ flow running|, repeat \d+/\d+: .*until`)
	ends := regexp.MustCompile(`flow delivered|flow failed|repeat \d+.*(goodput|offered|FAILED)`)
	for _, l := range StampedLines(log) {
		if from.IsZero() && starts.MatchString(l.Text) {
			from = l.At
		}
		if !from.IsZero() && ends.MatchString(l.Text) {
			to = l.At
		}
	}
	return from, to, !to.IsZero()
}

// Overlap is how long two spans [aFrom, aTo] and [bFrom, bTo] overlap
// (zero or negative when they do not).
func Overlap(aFrom, aTo, bFrom, bTo time.Time) time.Duration {
	from, to := aFrom, aTo
	if bFrom.After(from) {
		from = bFrom
	}
	if bTo.Before(to) {
		to = bTo
	}
	return to.Sub(from)
}

// TeardownFailures lists the harness's teardown lines that report an
// error ("teardown: delete port N (ID): …") rather than "… deleted (0.3s)".
func TeardownFailures(log string) []string {
	rx := regexp.MustCompile(`teardown: delete .*\([^)]*\): `)
	var out []string
	for _, l := range strings.Split(log, "\n") {
		if rx.MatchString(l) {
			out = append(out, strings.TrimSpace(l))
		}
	}
	return out
}

// SockLine is one established TCP socket of `ss -tnp` output.
type SockLine struct {
	Local, Peer string // address:port
	PIDs        []int
	Comms       []string
}

var ssUserRe = regexp.MustCompile(`\("([^"]*)",pid=(\d+),fd=\d+\)`)

// ParseSS reads `ss -tnp [state established]` output, with or without the
// State column and header:
//
//	ESTAB 0 0 198.18.0.11:22 198.18.0.1:42690 users:(("sshd",pid=28084,fd=4))
func ParseSS(out string) []SockLine {
	var socks []SockLine
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		var addrs []string
		var s SockLine
		for _, x := range f {
			switch {
			case strings.HasPrefix(x, "users:"):
				for _, m := range ssUserRe.FindAllStringSubmatch(x, -1) {
					pid, _ := strconv.Atoi(m[2])
					s.Comms, s.PIDs = append(s.Comms, m[1]), append(s.PIDs, pid)
				}
			case strings.LastIndexByte(x, ':') > 0:
				if _, err := strconv.Atoi(x[strings.LastIndexByte(x, ':')+1:]); err == nil {
					addrs = append(addrs, x)
				}
			}
		}
		if len(addrs) != 2 {
			continue // the header ("Local Address:Port") or not a socket
		}
		s.Local, s.Peer = addrs[0], addrs[1]
		socks = append(socks, s)
	}
	return socks
}

// SSHDServing finds the sshd processes that serve client pid's SSH
// connections to addr:22: rootSS is `ss -tnp` where the client runs (its
// sockets to addr:22 give the local ports), hvSS is `ss -tnp` inside the
// server's namespace (sockets on :22 whose peer port is one of those). It
// returns the sshd pids and the connections ("198.18.0.1:42690") they serve.
func SSHDServing(rootSS, hvSS string, pid int, addr string) ([]int, []string) {
	ports := map[string]bool{}
	for _, s := range ParseSS(rootSS) {
		if s.Peer != addr+":22" {
			continue
		}
		for _, p := range s.PIDs {
			if p == pid {
				ports[s.Local[strings.LastIndexByte(s.Local, ':')+1:]] = true
			}
		}
	}
	seen := map[int]bool{}
	var pids []int
	var conns []string
	for _, s := range ParseSS(hvSS) {
		if s.Local != addr+":22" || !ports[s.Peer[strings.LastIndexByte(s.Peer, ':')+1:]] {
			continue
		}
		conns = append(conns, s.Peer)
		for i, p := range s.PIDs {
			// OpenSSH 9.8 split the per-connection processes out of sshd:
			// from there on (Epoxy's Debian 13 has 10.0) they are
			// "sshd-session" (and the listener stays "sshd").
			if (s.Comms[i] == "sshd" || s.Comms[i] == "sshd-session") && !seen[p] {
				seen[p] = true
				pids = append(pids, p)
			}
		}
	}
	sort.Ints(pids)
	return pids, conns
}

// CmdEntry is one line of the harness's commands.jsonl.
type CmdEntry struct {
	Target string
	Cmd    string
	Error  string
	End    time.Time
}

// FailedCommands returns, ordered by the time they ended, the commands of
// the targets whose name starts with target (e.g. "hypervisor compute1 ")
// that ended at or after since with a transport error or a cancellation
// (the "error" field of commands.jsonl):
//
//	{"target":"hypervisor compute1 (198.18.0.11)","cmd":"tc -s -j filter show …","start":"…","duration_seconds":69.0,"exit_code":-1,"error":"… stopped: context deadline exceeded …"}
func FailedCommands(jsonl []byte, target string, since time.Time) []CmdEntry {
	var out []CmdEntry
	sc := bufio.NewScanner(strings.NewReader(string(jsonl)))
	sc.Buffer(make([]byte, 4<<20), 4<<20)
	for sc.Scan() {
		var e remote.LogEntry // the writer's own schema
		if json.Unmarshal(sc.Bytes(), &e) != nil || e.Error == "" || !strings.HasPrefix(e.Target, target) {
			continue
		}
		end := e.Start.Add(time.Duration(e.DurationSeconds * float64(time.Second)))
		if !end.Before(since) {
			out = append(out, CmdEntry{Target: e.Target, Cmd: e.Cmd, Error: e.Error, End: end})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].End.Before(out[j].End) })
	return out
}

// The lab's API endpoints as api.log's URLs show them
// (lab/lib/keystone_setup.py: Neutron on :9696, Nova on :8774/v2.1).
const (
	EndpointNeutron = ":9696/"
	EndpointNova    = ":8774/"
)

// APIRequest is one request of the harness's api.log, which logs each one
// when its answer (or error) came, with how long it took:
//
//	2026-12-05T10:11:12.5Z cloud: POST http://198.18.0.1:9696/v2.0/subnets body {…} -> 201 Created in 24.9s
//	2026-12-05T10:11:12.5Z cloud: GET http://198.18.0.1:8774/v2.1/servers/… -> error after 2m0s: context deadline exceeded
type APIRequest struct {
	Start, End time.Time
	Request    string // method and URL
	Outcome    string // the status, or "error: …"
}

var apiLineRe = regexp.MustCompile(`^cloud: (\S+ \S+).* -> (?:error after (\S+?): (.*)|(.+) in (\S+))$`)

// InFlight returns the requests of api.log to endpoint (a part of the
// URL, e.g. EndpointNeutron) that were sent before until and answered after
// from: in flight while a service was stopped from from to until.
func InFlight(apiLog, endpoint string, from, until time.Time) []APIRequest {
	var out []APIRequest
	for _, l := range StampedLines(apiLog) {
		m := apiLineRe.FindStringSubmatch(l.Text)
		if m == nil || !strings.Contains(m[1], endpoint) {
			continue
		}
		took, outcome := m[5], m[4]
		if m[2] != "" {
			took, outcome = m[2], "error: "+m[3]
		}
		d, err := time.ParseDuration(took)
		if err != nil {
			continue
		}
		r := APIRequest{Start: l.At.Add(-d), End: l.At, Request: m[1], Outcome: outcome}
		if r.Start.Before(until) && r.End.After(from) {
			out = append(out, r)
		}
	}
	return out
}

// Longest is the request that took longest ("" when there is none):
// "POST …/v2.0/subnets -> 201 Created in 24.9s".
func Longest(reqs []APIRequest) string {
	var best *APIRequest
	for i := range reqs {
		if best == nil || reqs[i].End.Sub(reqs[i].Start) > best.End.Sub(best.Start) {
			best = &reqs[i]
		}
	}
	if best == nil {
		return ""
	}
	return fmt.Sprintf("%s -> %s in %s", best.Request, best.Outcome, best.End.Sub(best.Start).Round(100*time.Millisecond))
}
