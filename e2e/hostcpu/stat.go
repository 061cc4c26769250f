// Package hostcpu reads a hypervisor's CPU counters just before and just
// after a measured window, and turns two readings into cores busy: pure
// parsers of /proc/stat and /proc/<pid>/task/*/stat, the one shell command
// that prints a reading (Command), its parser (ParseReading) and the
// difference of two readings (Delta). It imports nothing of the project.
//
// ParseStat reads /proc/stat and ParseTask /proc/<pid>/task/*/stat (a comm
// with blanks and parentheses). Command prints the boot id, /proc/stat and
// ovs-vswitchd's process and threads, found by its pidfile checked against its
// comm, else the one process of that name. Delta refuses a reboot, a changed
// CPU set and counters going backwards; OVS missing or restarted is said,
// never zero. The harness reads it in harness/cpu.go from iperf3's
// ClientsStarting to ClientsDone (issue 12); results/cpu.go holds the schema
// and the pair's sums, report/cpu.go the table, chart and compare gate.
package hostcpu

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Times is one "cpu" line of /proc/stat, in USER_HZ ticks:
//
//	cpu  982301 214121 468190 3907922 9087 0 71031 52420 0 0
//
// user nice system idle iowait irq softirq steal guest guest_nice. The
// kernel counts guest time inside user and guest_nice inside nice
// (proc(5)), so Total leaves them out.
type Times struct {
	User, Nice, System, Idle, IOWait, IRQ, SoftIRQ, Steal, Guest, GuestNice uint64
}

// MinCPUFields is how many counters a cpu line must carry (user .. steal,
// every kernel since 2.6.11); guest and guest_nice are optional.
const MinCPUFields = 8

// Total is every tick of the line: user+nice+system+idle+iowait+irq+
// softirq+steal (guest time is already in user and nice).
func (t Times) Total() uint64 {
	return t.User + t.Nice + t.System + t.Idle + t.IOWait + t.IRQ + t.SoftIRQ + t.Steal
}

// Busy is Total minus idle and iowait: time a CPU ran something.
func (t Times) Busy() uint64 { return t.Total() - t.Idle - t.IOWait }

// Stat is /proc/stat's CPU part: the aggregate line and the per-CPU lines
// (CPUs[i] is the line "cpuN" in the order printed; offline CPUs are absent).
type Stat struct {
	All  Times
	CPUs []Times
	// IDs are the N of each per-CPU line, index for index with CPUs.
	IDs []int
}

// ParseStat reads /proc/stat. Lines other than "cpu" and "cpuN" (intr,
// ctxt, btime, ...) are ignored. It fails when there is no aggregate line,
// no per-CPU line, or a cpu line with fewer than MinCPUFields counters or a
// counter that is not an unsigned integer.
func ParseStat(data []byte) (Stat, error) {
	var st Stat
	seenAll := false
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64*1024), 4*1024*1024) // the intr line is long
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 || !strings.HasPrefix(f[0], "cpu") {
			continue
		}
		name := f[0]
		t, err := parseTimes(f[1:])
		if err != nil {
			return Stat{}, fmt.Errorf("/proc/stat %s: %w", name, err)
		}
		if name == "cpu" {
			if seenAll {
				return Stat{}, errors.New("/proc/stat: two aggregate cpu lines")
			}
			st.All, seenAll = t, true
			continue
		}
		id, err := strconv.Atoi(strings.TrimPrefix(name, "cpu"))
		if err != nil || id < 0 {
			return Stat{}, fmt.Errorf("/proc/stat: %q is not a cpu line", name)
		}
		st.CPUs = append(st.CPUs, t)
		st.IDs = append(st.IDs, id)
	}
	if err := sc.Err(); err != nil {
		return Stat{}, fmt.Errorf("/proc/stat: %w", err)
	}
	if !seenAll {
		return Stat{}, errors.New("/proc/stat: no aggregate cpu line")
	}
	if len(st.CPUs) == 0 {
		return Stat{}, errors.New("/proc/stat: no per-CPU line")
	}
	return st, nil
}

func parseTimes(f []string) (Times, error) {
	if len(f) < MinCPUFields {
		return Times{}, fmt.Errorf("%d counters, want at least %d (user nice system idle iowait irq softirq steal)", len(f), MinCPUFields)
	}
	v := make([]uint64, 10)
	for i := 0; i < len(f) && i < len(v); i++ {
		n, err := strconv.ParseUint(f[i], 10, 64)
		if err != nil {
			return Times{}, fmt.Errorf("counter %d: %q is not an unsigned integer", i+1, f[i])
		}
		v[i] = n
	}
	t := Times{v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9]}
	// Sums must not wrap, and guest time lies inside user/nice time.
	var sum uint64
	for _, x := range v[:8] {
		if sum+x < sum {
			return Times{}, errors.New("counters overflow their sum")
		}
		sum += x
	}
	if t.Guest > t.User || t.GuestNice > t.Nice {
		return Times{}, fmt.Errorf("guest %d / guest_nice %d exceed user %d / nice %d (they are part of them)", t.Guest, t.GuestNice, t.User, t.Nice)
	}
	return t, nil
}

// Task is one line of /proc/<pid>/stat or /proc/<pid>/task/<tid>/stat:
//
//	29012 (revalidator5) S 1 28992 28992 0 -1 4194368 15 815 0 0 4 1 0 0 20 ...
//
// Comm is what lies between the first "(" and the last ")": a thread name
// may hold blanks and parentheses ("a) b (c"), never the fields after it.
// UTime and STime are fields 14 and 15, in USER_HZ ticks.
type Task struct {
	ID    int    `json:"id"`
	Comm  string `json:"comm"`
	UTime uint64 `json:"utime"`
	STime uint64 `json:"stime"`
}

// MinTaskFields is how many fields after the comm a task line must carry
// (state .. stime, fields 3 to 15 of proc(5)).
const MinTaskFields = 13

// ParseTask reads one stat line of a process or thread.
func ParseTask(line string) (Task, error) {
	line = strings.TrimSpace(line)
	open := strings.IndexByte(line, '(')
	closing := strings.LastIndexByte(line, ')')
	if open < 0 || closing < open {
		return Task{}, fmt.Errorf("task stat %q: no (comm)", short(line))
	}
	id, err := strconv.Atoi(strings.TrimSpace(line[:open]))
	if err != nil || id <= 0 {
		return Task{}, fmt.Errorf("task stat %q: %q is not a pid", short(line), strings.TrimSpace(line[:open]))
	}
	rest := strings.Fields(line[closing+1:])
	if len(rest) < MinTaskFields {
		return Task{}, fmt.Errorf("task stat %q: %d fields after the comm, want at least %d", short(line), len(rest), MinTaskFields)
	}
	if len(rest[0]) != 1 {
		return Task{}, fmt.Errorf("task stat %q: state %q is not one letter", short(line), rest[0])
	}
	ut, err1 := strconv.ParseUint(rest[11], 10, 64)
	st, err2 := strconv.ParseUint(rest[12], 10, 64)
	if err1 != nil || err2 != nil {
		return Task{}, fmt.Errorf("task stat %q: utime %q / stime %q are not unsigned integers", short(line), rest[11], rest[12])
	}
	if ut+st < ut {
		return Task{}, fmt.Errorf("task stat %q: utime + stime overflow", short(line))
	}
	return Task{ID: id, Comm: line[open+1 : closing], UTime: ut, STime: st}, nil
}

// ParseTasks reads the concatenated stat lines of a process's threads
// (`cat /proc/<pid>/task/*/stat`); blank lines are skipped; a thread listed
// twice is an error.
func ParseTasks(data []byte) ([]Task, error) {
	var out []Task
	seen := map[int]bool{}
	for _, line := range strings.Split(string(data), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		t, err := ParseTask(line)
		if err != nil {
			return nil, err
		}
		if seen[t.ID] {
			return nil, fmt.Errorf("task %d listed twice", t.ID)
		}
		seen[t.ID] = true
		out = append(out, t)
	}
	return out, nil
}

func short(s string) string {
	if len(s) > 60 {
		return s[:60] + "..."
	}
	return s
}
