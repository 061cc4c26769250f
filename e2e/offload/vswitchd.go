package offload

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/remote"
)

// Whether a hypervisor's ovs-vswitchd still answers, and if not why: the
// command, its parser and the sentence. The harness's look after a failed
// window (e2e/harness stall.go) runs it on each hypervisor of the pair: a
// vswitchd that crashed during the window (OVS 3.1's userspace conntrack
// asserted on the lab) takes the data path with it, and the guests' and
// ports' symptoms alone do not name it.

// vswitchdMarker leads the lines the look's command adds after
// ovs-appctl's own output.
const vswitchdMarker = "== "

// VswitchdCommand is the look's one command per hypervisor. It starts with
// ovs-appctl, so hypervisors.ovs_command_prefix wraps all of it
// (OVSCommand) and every part runs where the OVS tools do, with
// their OVS_RUNDIR and OVS_LOGDIR. ovs-appctl waits at most appctlSecs
// (AppctlSecs of the look's bound);
// when it fails, the command adds what names the cause: the pid in
// ovs-vswitchd's pidfile (the one ovs-appctl reads) and that pid's
// /proc/<pid>/stat (empty when the process is gone), and the last lines of ovs-vswitchd's
// log at its default place when it is readable there. Its output:
//
//	ovs-appctl: cannot connect to "/run/openvswitch/ovs-vswitchd.13893.ctl" (Connection refused)
//	== exit 1
//	== pidfile /run/openvswitch/ovs-vswitchd.pid 13893
//	== stat
//	== log /var/log/openvswitch/ovs-vswitchd.log
//	<up to 5 lines of the log>
func VswitchdCommand(appctlSecs int) string {
	return fmt.Sprintf(`ovs-appctl --timeout=%d -t ovs-vswitchd version 2>&1; r=$?; echo "== exit $r"; `+
		`if [ $r -ne 0 ]; then f=${OVS_RUNDIR:-/var/run/openvswitch}/ovs-vswitchd.pid; p=$(cat "$f" 2>/dev/null); `+
		`echo "== pidfile $f $p"; if [ -n "$p" ]; then echo "== stat $(cat "/proc/$p/stat" 2>/dev/null)"; fi; `+
		`l=${OVS_LOGDIR:-/var/log/openvswitch}/ovs-vswitchd.log; if [ -r "$l" ]; then echo "== log $l"; tail -n 5 "$l"; fi; fi; true`, appctlSecs)
}

// AppctlSecs is ovs-appctl's own wait in VswitchdCommand: half the look's
// bound (at least 1 s), so a vswitchd that hangs still leaves the rest of
// the command time to report.
func AppctlSecs(bound time.Duration) int {
	if s := int(bound / 2 / time.Second); s > 1 {
		return s
	}
	return 1
}

// Vswitchd is what VswitchdCommand found.
type Vswitchd struct {
	// Answers: ovs-appctl version exited 0; Version is its first line.
	Answers bool
	Version string
	// Appctl is ovs-appctl's output when it failed (one line).
	Appctl string
	// Pidfile and PID: the pidfile read and the pid in it (0: none).
	Pidfile string
	PID     int
	// State is the pidfile's pid's state letter in /proc/<pid>/stat when
	// that process is an ovs-vswitchd ("" = no such process, or another
	// program now has that pid; "Z" = it died and was not reaped yet).
	State string
	// Log is the log read; LogLine its last EMER message (or ERR, when it
	// has no EMER) without the time, sequence and module fields, LogLevel
	// that line's level ("" = neither).
	Log, LogLine, LogLevel string
}

// ParseVswitchd reads VswitchdCommand's output. An output without its
// exit line (the command did not run to its end) is an error, and so is
// every line it does not know: the error names them all.
func ParseVswitchd(out string) (Vswitchd, error) {
	var v Vswitchd
	var appctl, logLines, bad []string
	exit, inLog := -1, false
	for _, line := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		rest, marked := strings.CutPrefix(line, vswitchdMarker)
		switch {
		case inLog:
			logLines = append(logLines, line)
		case !marked && exit < 0:
			if strings.TrimSpace(line) != "" {
				appctl = append(appctl, strings.TrimSpace(line))
			}
		case !marked:
			bad = append(bad, fmt.Sprintf("unexpected line %q", line))
		default:
			key, val, _ := strings.Cut(rest, " ")
			val = strings.TrimSpace(val)
			switch key {
			case "exit":
				n, err := strconv.Atoi(val)
				if err != nil {
					bad = append(bad, fmt.Sprintf("exit status %q is not a number", val))
					continue
				}
				exit = n
			case "pidfile":
				path, pid, _ := strings.Cut(val, " ")
				v.Pidfile = path
				if pid != "" {
					n, err := strconv.Atoi(pid)
					if err != nil || n <= 0 {
						bad = append(bad, fmt.Sprintf("pidfile %s holds %q, not a pid", path, pid))
						continue
					}
					v.PID = n
				}
			case "stat":
				v.State = procState(val)
			case "log":
				v.Log, inLog = val, true
			default:
				bad = append(bad, fmt.Sprintf("unknown line %q", line))
			}
		}
	}
	if exit < 0 && !slices.ContainsFunc(bad, func(b string) bool { return strings.HasPrefix(b, "exit status ") }) {
		bad = append(bad, fmt.Sprintf("no exit line in %q", clip(out)))
	}
	if len(bad) > 0 {
		return Vswitchd{}, fmt.Errorf("ovs-vswitchd look: %s", strings.Join(bad, "; "))
	}
	if exit == 0 {
		v.Answers = true
		if len(appctl) > 0 {
			v.Version = appctl[0]
		}
		return v, nil
	}
	v.Appctl = appctlError(appctl)
	if v.Appctl == "" {
		v.Appctl = fmt.Sprintf("ovs-appctl exited %d with no output", exit)
	}
	v.LogLevel, v.LogLine = lastSevere(logLines)
	return v, nil
}

// ReadVswitchd reads VswitchdCommand's result as a runner returned it. The
// command itself ends with status 0: another status is the prefix's or the
// transport's failure, named with its stderr.
func ReadVswitchd(res remote.Result) (Vswitchd, error) {
	if res.ExitCode != 0 {
		msg := clip(strings.TrimSpace(string(res.Stderr)))
		if msg == "" {
			msg = "no output on stderr"
		}
		return Vswitchd{}, fmt.Errorf("exit %d: %s", res.ExitCode, msg)
	}
	return ParseVswitchd(string(res.Stdout))
}

// clip is s cut to the 300 bytes a look's message quotes at most.
func clip(s string) string {
	if len(s) > 300 {
		return s[:300] + "..."
	}
	return s
}

// appctlError is ovs-appctl's failure in one line: its own "ovs-appctl:"
// lines when it printed some (it may log a WARN line of OVS's log format
// before them), else the messages of its log lines (ended by its
// --timeout: "terminating with signal 14 (Alarm clock)"), else all of it.
func appctlError(lines []string) string {
	var own, logged []string
	for _, l := range lines {
		if strings.HasPrefix(l, "ovs-appctl:") {
			own = append(own, l)
		} else if f := strings.SplitN(l, "|", 5); len(f) == 5 {
			logged = append(logged, "ovs-appctl: "+f[4])
		}
	}
	switch {
	case len(own) > 0:
		return strings.Join(own, " ")
	case len(logged) > 0:
		return strings.Join(logged, " ")
	}
	return strings.Join(lines, " ")
}

// procState is the state letter of a /proc/<pid>/stat line ("<pid>
// (<comm>) <state> ...") whose comm is ovs-vswitchd; "" for any other line.
func procState(stat string) string {
	lo, hi := strings.IndexByte(stat, '('), strings.LastIndexByte(stat, ')')
	if lo < 0 || hi < lo || stat[lo+1:hi] != "ovs-vswitchd" {
		return ""
	}
	f := strings.Fields(stat[hi+1:])
	if len(f) == 0 {
		return ""
	}
	return f[0]
}

// lastSevere is the level and message of the last EMER line of an OVS log,
// or of the last ERR line when there is no EMER ("" = neither). An OVS log
// line is time|sequence|module|level|message.
func lastSevere(lines []string) (level, msg string) {
	var emer, errLine string
	for _, l := range lines {
		f := strings.SplitN(l, "|", 5)
		if len(f) < 5 {
			continue
		}
		switch f[3] {
		case "EMER":
			emer = f[4]
		case "ERR":
			errLine = f[4]
		}
	}
	switch {
	case emer != "":
		return "EMER", emer
	case errLine != "":
		return "ERR", errLine
	}
	return "", ""
}

// Finding is the look's sentence about a hypervisor whose ovs-vswitchd
// does not answer ("" when it answers): "ovs-vswitchd does not answer
// (<ovs-appctl's error>; <the cause found>)".
func (v Vswitchd) Finding() string {
	if v.Answers {
		return ""
	}
	why := []string{v.Appctl}
	switch {
	case v.Pidfile != "" && v.PID == 0:
		why = append(why, "no ovs-vswitchd process (no pidfile at "+v.Pidfile+")")
	case v.PID != 0 && (v.State == "" || v.State == "X"):
		why = append(why, fmt.Sprintf("no ovs-vswitchd process (pid %d in %s is gone)", v.PID, v.Pidfile))
	case v.State == "Z":
		why = append(why, fmt.Sprintf("ovs-vswitchd pid %d (from %s) has died (a zombie)", v.PID, v.Pidfile))
	case v.State == "T" || v.State == "t":
		why = append(why, fmt.Sprintf("ovs-vswitchd pid %d (from %s) is stopped (state %s)", v.PID, v.Pidfile, v.State))
	case v.PID != 0:
		why = append(why, fmt.Sprintf("ovs-vswitchd pid %d (from %s) is running (state %s) but does not answer", v.PID, v.Pidfile, v.State))
	}
	if v.LogLine != "" {
		why = append(why, fmt.Sprintf("last %s in %s: %s", v.LogLevel, v.Log, v.LogLine))
	}
	return "ovs-vswitchd does not answer (" + strings.Join(why, "; ") + ")"
}
