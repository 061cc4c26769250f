package offload

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// The ovs-vswitchd log lines that matter for rule scale (issue 38 item 3):
// the flow limit reached, the emergency flush above twice the limit, a
// revalidator dump that took too long, a flow key not installed, and a
// datapath or tc put that failed. Each format is OVS's own (the file and
// function are named per kind; testdata/scale/README.md has the lines in
// v2.17.12 and v3.3.0); everything else in the log is passed over.

// LogKind names one kind of line.
type LogKind string

const (
	// LogFlowLimit: "upcall: datapath reached the dynamic limit of N
	// flows." (ofproto-dpif-upcall.c, should_install_flow, WARN): a new
	// flow was not installed, its packets stay in userspace. Value: N.
	LogFlowLimit LogKind = "flow-limit"
	// LogFlowLimitKill: "Number of datapath flows (N) twice as high as
	// current dynamic flow limit (M).  Starting to delete flows
	// unconditionally as an emergency measure." (revalidate, WARN, once
	// per revalidator thread). Value: N.
	LogFlowLimitKill LogKind = "flow-limit-kill"
	// LogLongDump: "Spent an unreasonably long Nms dumping flows"
	// (udpif_revalidator; INFO up to OVS 3.2, WARN from 3.3), logged when a
	// dump took over 2 s; the flow limit is then divided. Value: N (ms).
	LogLongDump LogKind = "long-dump"
	// LogUkeyInstall: "upcall_cb failure: ukey installation fails"
	// (upcall_cb, WARN; OVS 3.x, not in 2.17).
	LogUkeyInstall LogKind = "ukey-install"
	// LogOffloadFailed: "failed to offload flow: <error>: <device>"
	// (lib/dpif-netlink.c, parse_flow_put; ERR, and DBG — not in a default
	// log — for ENOSPC and EOPNOTSUPP). Detail: "<error>: <device>".
	LogOffloadFailed LogKind = "offload-failed"
	// LogPutFailed: "<dpif>: failed to put[create] (<error>) ufid:..."
	// (lib/dpif.c, log_flow_put_message, WARN). Detail: the error.
	LogPutFailed LogKind = "put-failed"
)

// logKinds is every kind, in the order ScaleLog lists them.
var logKinds = []LogKind{LogFlowLimit, LogFlowLimitKill, LogLongDump, LogUkeyInstall, LogOffloadFailed, LogPutFailed}

var (
	reFlowLimit   = regexp.MustCompile(`^upcall: datapath reached the dynamic limit of (\d+) flows\.$`)
	reKill        = regexp.MustCompile(`^Number of datapath flows \((\d+)\) twice as high as current dynamic flow limit \((\d+)\)\.`)
	reLongDump    = regexp.MustCompile(`^Spent an unreasonably long (\d+)ms dumping flows$`)
	reOffload     = regexp.MustCompile(`^failed to offload flow: (.+)$`)
	rePut         = regexp.MustCompile(`^\S+: failed to put(?:\[[a-z]+\])* \(([^)]*)\)`)
	reRateDropped = regexp.MustCompile(`^Dropped (\d+) log messages in last \d+ seconds \(most recently, \d+ seconds ago\) due to excessive rate$`)
)

// LogEvent is one line of a kind.
type LogEvent struct {
	// LineNo is the line's number in the input (from 1).
	LineNo int
	Time   time.Time
	// Level is OVS's level word (WARN, INFO, ERR); Module the module
	// without its "(thread)" suffix.
	Level, Module string
	// Value is the number the line carries (see each kind); Detail the
	// error it names.
	Value  uint64
	Detail string
	// Line is the line exactly as logged.
	Line string
}

// LogKindCount is every line of one kind.
type LogKindCount struct {
	Kind   LogKind
	Events []LogEvent
}

// Count is the kind's lines. OVS rate-limits these messages: the real
// occurrences are at least this many (ScaleLog.Dropped).
func (k LogKindCount) Count() int { return len(k.Events) }

// First and Last are the times of the kind's first and last line.
func (k LogKindCount) First() time.Time { return k.Events[0].Time }
func (k LogKindCount) Last() time.Time  { return k.Events[len(k.Events)-1].Time }

// Lines are the kind's lines as logged.
func (k LogKindCount) Lines() []string {
	out := make([]string, len(k.Events))
	for i, e := range k.Events {
		out[i] = e.Line
	}
	return out
}

// ScaleLog is what ParseScaleLog found in a log.
type ScaleLog struct {
	// Kinds are the kinds found, in logKinds' order; a kind never logged
	// is absent.
	Kinds []LogKindCount
	// Dropped is, by module, the messages OVS's rate limit left out of the
	// log ("Dropped N log messages in last M seconds ... due to excessive
	// rate"): messages of any kind, so a kind's count is a lower bound
	// when its module dropped some.
	Dropped map[string]uint64
	// Lines is the number of lines read.
	Lines int
}

// Kind is the kind's lines (Count 0 when none).
func (s ScaleLog) Kind(k LogKind) LogKindCount {
	for _, c := range s.Kinds {
		if c.Kind == k {
			return c
		}
	}
	return LogKindCount{Kind: k}
}

// ParseScaleLog reads an ovs-vswitchd log (or its tail), whose lines are
// "<time>|<sequence>|<module>|<level>|<message>":
//
//	2026-12-06T04:32:13.209Z|00059|ofproto_dpif_upcall|WARN|upcall: datapath reached the dynamic limit of 200 flows.
//	2026-12-06T04:32:13.206Z|00001|ofproto_dpif_upcall(revalidator5)|WARN|Number of datapath flows (2000) twice as high as current dynamic flow limit (400).  Starting to delete flows unconditionally as an emergency measure.
//
// Lines of other messages, other formats and continuation lines are
// passed over. A line of a known kind whose time is not OVS's (RFC 3339,
// UTC, with or without milliseconds) or whose number does not fit is an
// error: all are named at once, with their line numbers.
func ParseScaleLog(log string) (ScaleLog, error) {
	var s ScaleLog
	byKind := map[LogKind][]LogEvent{}
	var bad []string
	for i, line := range strings.Split(strings.TrimRight(log, "\n"), "\n") {
		n := i + 1
		s.Lines = n
		f := strings.SplitN(line, "|", 5)
		if len(f) != 5 {
			continue
		}
		msg := strings.TrimRight(f[4], "\r")
		module, _, _ := strings.Cut(f[2], "(")
		if m := reRateDropped.FindStringSubmatch(msg); m != nil {
			v, err := strconv.ParseUint(m[1], 10, 64)
			if err != nil {
				bad = append(bad, fmt.Sprintf("line %d: dropped count %q does not fit", n, m[1]))
				continue
			}
			if s.Dropped == nil {
				s.Dropped = map[string]uint64{}
			}
			s.Dropped[module] += v
			continue
		}
		kind, value, detail, err := logKindOf(msg)
		if kind == "" {
			continue
		}
		if err != nil {
			bad = append(bad, fmt.Sprintf("line %d: %s: %v", n, kind, err))
			continue
		}
		at, err := time.Parse(time.RFC3339Nano, f[0])
		if err != nil || !strings.HasSuffix(f[0], "Z") {
			bad = append(bad, fmt.Sprintf("line %d: %s: time %q is not OVS's <yyyy-mm-dd>T<hh:mm:ss>[.mmm]Z", n, kind, clip(f[0])))
			continue
		}
		byKind[kind] = append(byKind[kind], LogEvent{LineNo: n, Time: at, Level: f[3], Module: module,
			Value: value, Detail: detail, Line: line})
	}
	if len(bad) > 0 {
		return ScaleLog{}, fmt.Errorf("ovs-vswitchd log: %s", strings.Join(bad, "; "))
	}
	for _, k := range logKinds {
		if ev := byKind[k]; len(ev) > 0 {
			s.Kinds = append(s.Kinds, LogKindCount{Kind: k, Events: ev})
		}
	}
	return s, nil
}

// logKindOf is a message's kind ("" for none), its number and its detail.
func logKindOf(msg string) (LogKind, uint64, string, error) {
	num := func(k LogKind, s string) (LogKind, uint64, string, error) {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return k, 0, "", fmt.Errorf("number %q does not fit", s)
		}
		return k, v, "", nil
	}
	if m := reFlowLimit.FindStringSubmatch(msg); m != nil {
		return num(LogFlowLimit, m[1])
	}
	if m := reKill.FindStringSubmatch(msg); m != nil {
		return num(LogFlowLimitKill, m[1])
	}
	if m := reLongDump.FindStringSubmatch(msg); m != nil {
		return num(LogLongDump, m[1])
	}
	if msg == "upcall_cb failure: ukey installation fails" {
		return LogUkeyInstall, 0, "", nil
	}
	if m := reOffload.FindStringSubmatch(msg); m != nil {
		return LogOffloadFailed, 0, m[1], nil
	}
	if m := rePut.FindStringSubmatch(msg); m != nil {
		return LogPutFailed, 0, m[1], nil
	}
	return "", 0, "", nil
}
