package hostcpu

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Marker starts every section line of a reading's output.
const Marker = "@@asap2e2e-cpu"

// Command is the one shell command that prints a reading of a hypervisor:
// its boot id and host name, /proc/stat, and the stat lines of
// ovs-vswitchd's process and threads, each section after a Marker line,
// ending with "<Marker> end" (a reading cut short is refused).
//
// It runs on the hypervisor as it is, like tc or ip (it is not an OVS tool,
// so hypervisors.ovs_command_prefix does not apply): /proc/stat is the
// host's wherever it is read (a container sees the host's counters too),
// and ovs-vswitchd is found where the command runs. The pid comes from the
// pidfile in /run/openvswitch or /var/run/openvswitch when that pid's comm
// is ovs-vswitchd (a pidfile written inside a container holds the
// container's pid, which on the host may be another process), otherwise
// from the one process whose comm is ovs-vswitchd; with none, or several
// and no pidfile naming one (the lab's two namespace hypervisors share one
// pid namespace), the reading says so and no OVS number is made up.
// Only POSIX sh, cat, grep, cut and tr are used.
func Command() string {
	return `M=` + Marker + `; echo "$M host"; cat /proc/sys/kernel/random/boot_id; cat /proc/sys/kernel/hostname; ` +
		`echo "$M stat"; cat /proc/stat; p=; s=; ` +
		`for f in /run/openvswitch/ovs-vswitchd.pid /var/run/openvswitch/ovs-vswitchd.pid; do ` +
		`q=$(cat "$f" 2>/dev/null); case "$q" in ''|*[!0-9]*) continue;; esac; ` +
		`if [ "$(cat /proc/"$q"/comm 2>/dev/null)" = ovs-vswitchd ]; then p=$q; s=$f; break; fi; done; ` +
		`c=$(grep -lx ovs-vswitchd /proc/[0-9]*/comm 2>/dev/null | cut -d/ -f3 | tr '\n' ' '); ` +
		`if [ -z "$p" ]; then set -- $c; if [ $# -eq 1 ]; then p=$1; s=comm; fi; fi; ` +
		`echo "$M ovs pid=$p source=$s candidates=$c"; ` +
		`if [ -n "$p" ]; then echo "$M proc"; cat /proc/"$p"/stat; echo "$M tasks"; cat /proc/"$p"/task/*/stat 2>/dev/null; fi; ` +
		`echo "$M end"`
}

// Reading is one hypervisor's counters at one moment.
type Reading struct {
	BootID   string
	Hostname string
	Stat     Stat
	OVS      OVS
}

// OVS is what a reading found of ovs-vswitchd.
type OVS struct {
	// PID is ovs-vswitchd's pid; 0 when none was found (Missing says why).
	PID int
	// Source is how PID was found: the pidfile's path, or "comm" (the only
	// process of that name).
	Source string
	// Candidates are every process whose comm is ovs-vswitchd.
	Candidates []int
	// Process is /proc/<pid>/stat: its utime and stime include the threads
	// that have exited.
	Process *Task
	// Threads are /proc/<pid>/task/*/stat.
	Threads []Task
	// Missing says why there is no OVS number ("" when PID is set).
	Missing string
}

// ParseReading reads the output of Command.
func ParseReading(data []byte) (Reading, error) {
	sections := map[string]string{}
	var order []string
	var ovsHeader string
	var cur string
	var body strings.Builder
	flush := func() {
		if cur != "" {
			sections[cur] = body.String()
		}
		body.Reset()
	}
	for _, line := range strings.Split(string(data), "\n") {
		rest, ok := strings.CutPrefix(line, Marker+" ")
		if !ok {
			if cur != "" {
				body.WriteString(line)
				body.WriteByte('\n')
			}
			continue
		}
		flush()
		name, args, _ := strings.Cut(rest, " ")
		name = strings.TrimSpace(name)
		if _, dup := sections[name]; dup {
			return Reading{}, fmt.Errorf("cpu reading: section %q twice", name)
		}
		if name == "ovs" {
			ovsHeader = args
		}
		cur = name
		order = append(order, name)
	}
	flush()
	for _, want := range []string{"host", "stat", "ovs", "end"} {
		if _, ok := sections[want]; !ok {
			return Reading{}, fmt.Errorf("cpu reading: no %q section (output cut short or not the reading's command; sections %v)", want, order)
		}
	}
	if order[len(order)-1] != "end" {
		return Reading{}, errors.New(`cpu reading: "end" is not the last section`)
	}
	var r Reading
	host := strings.Fields(sections["host"])
	if len(host) < 1 {
		return Reading{}, errors.New("cpu reading: no boot id")
	}
	r.BootID = host[0]
	if len(host) > 1 {
		r.Hostname = host[1]
	}
	st, err := ParseStat([]byte(sections["stat"]))
	if err != nil {
		return Reading{}, fmt.Errorf("cpu reading: %w", err)
	}
	r.Stat = st
	o, err := parseOVS(ovsHeader, sections)
	if err != nil {
		return Reading{}, fmt.Errorf("cpu reading: %w", err)
	}
	r.OVS = o
	return r, nil
}

// parseOVS reads "pid=<p> source=<s> candidates=<c1> <c2> " and the proc
// and tasks sections.
func parseOVS(header string, sections map[string]string) (OVS, error) {
	var o OVS
	pidText, rest, _ := strings.Cut(header, " ")
	srcText, candText, _ := strings.Cut(rest, " ")
	pid, ok := strings.CutPrefix(pidText, "pid=")
	src, ok2 := strings.CutPrefix(srcText, "source=")
	cands, ok3 := strings.CutPrefix(candText, "candidates=")
	if !ok || !ok2 || !ok3 {
		return o, fmt.Errorf("ovs line %q: want pid=... source=... candidates=...", header)
	}
	for _, c := range strings.Fields(cands) {
		n, err := strconv.Atoi(c)
		if err != nil || n <= 0 {
			return o, fmt.Errorf("ovs line: candidate %q is not a pid", c)
		}
		o.Candidates = append(o.Candidates, n)
	}
	sort.Ints(o.Candidates)
	o.Source = src
	_, hasProc := sections["proc"]
	if pid == "" {
		if hasProc {
			return o, errors.New("ovs: process stat without a pid")
		}
		switch len(o.Candidates) {
		case 0:
			o.Missing = "no ovs-vswitchd process where the reading ran"
		default:
			o.Missing = fmt.Sprintf("%d ovs-vswitchd processes (pids %s) and no pidfile in /run/openvswitch names one of them", len(o.Candidates), joinInts(o.Candidates))
		}
		return o, nil
	}
	n, err := strconv.Atoi(pid)
	if err != nil || n <= 0 {
		return o, fmt.Errorf("ovs: pid %q is not a pid", pid)
	}
	o.PID = n
	if src == "" {
		return o, errors.New("ovs: pid without its source")
	}
	if !hasProc {
		return o, fmt.Errorf("ovs: pid %d without its process stat", n)
	}
	p, err := ParseTask(strings.TrimSpace(sections["proc"]))
	if err != nil {
		// The process ended between the lookup and the cat: no number.
		if strings.TrimSpace(sections["proc"]) == "" {
			o.PID, o.Missing = 0, fmt.Sprintf("ovs-vswitchd pid %d exited during the reading", n)
			return o, nil
		}
		return o, fmt.Errorf("ovs process: %w", err)
	}
	if p.ID != n {
		return o, fmt.Errorf("ovs: process stat is of pid %d, not %d", p.ID, n)
	}
	o.Process = &p
	threads, err := ParseTasks([]byte(sections["tasks"]))
	if err != nil {
		return o, fmt.Errorf("ovs threads: %w", err)
	}
	o.Threads = threads
	return o, nil
}

func joinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ", ")
}
