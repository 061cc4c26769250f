package hostcpu

import (
	"fmt"
	"slices"
	"strings"

	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// UserHZ is the unit of /proc/stat and /proc/<pid>/stat: USER_HZ, 100 on
// every Linux architecture's user ABI (sysconf(_SC_CLK_TCK)), whatever the
// kernel's own HZ.
const UserHZ = 100

// Thread kinds of ovs-vswitchd (its threads' comm names).
const (
	KindMain        = "main"        // ovs-vswitchd itself
	KindHandler     = "handler"     // upcall handlers (handler12)
	KindRevalidator = "revalidator" // flow revalidators (revalidator13)
	KindPMD         = "pmd"         // DPDK / userspace poll-mode threads (pmd-c01/id:8)
	KindOther       = "other"       // urcu3, ct_clean1, ipf_clean2, ...
)

// ThreadKind names the kind of an ovs-vswitchd thread from its comm.
func ThreadKind(comm string) string {
	switch {
	case comm == "ovs-vswitchd":
		return KindMain
	case strings.HasPrefix(comm, "handler"):
		return KindHandler
	case strings.HasPrefix(comm, "revalidator"):
		return KindRevalidator
	case strings.HasPrefix(comm, "pmd"):
		return KindPMD
	}
	return KindOther
}

// Delta computes the host's usage from before to after. The span is
// measured by the counters themselves: the aggregate line's Total grows by
// ncpu ticks per tick of wall time, so the ticks per CPU are ΔTotal / ncpu
// and no clock is needed. It refuses two
// readings of different boots, of different CPU sets, with no time between
// them, or with a counter that went backwards (except iowait, which the
// kernel may lower while idle grows: idle and iowait are taken together).
// An OVS that is missing in either reading, or restarted between them,
// leaves OVS nil and says why; the host's numbers still count.
func Delta(before, after Reading) (results.CPUUsage, error) {
	if before.BootID != after.BootID {
		return results.CPUUsage{}, fmt.Errorf("the host rebooted between the readings (boot id %s, then %s)", before.BootID, after.BootID)
	}
	if !slices.Equal(before.Stat.IDs, after.Stat.IDs) {
		return results.CPUUsage{}, fmt.Errorf("the online CPUs changed between the readings (%d, then %d)", len(before.Stat.IDs), len(after.Stat.IDs))
	}
	b, a := before.Stat.All, after.Stat.All
	type pair struct {
		name string
		b, a uint64
	}
	for _, p := range []pair{{"user", b.User, a.User}, {"nice", b.Nice, a.Nice}, {"system", b.System, a.System},
		{"irq", b.IRQ, a.IRQ}, {"softirq", b.SoftIRQ, a.SoftIRQ}, {"steal", b.Steal, a.Steal},
		{"guest", b.Guest, a.Guest}, {"guest_nice", b.GuestNice, a.GuestNice},
		{"idle+iowait", b.Idle + b.IOWait, a.Idle + a.IOWait}} {
		if p.a < p.b {
			return results.CPUUsage{}, fmt.Errorf("/proc/stat %s went backwards (%d, then %d)", p.name, p.b, p.a)
		}
	}
	total := a.Total() - b.Total()
	if total == 0 {
		return results.CPUUsage{}, fmt.Errorf("no time passed between the readings (/proc/stat total %d both times)", a.Total())
	}
	n := len(after.Stat.CPUs)
	el := float64(total) / float64(n)
	cores := func(d uint64) float64 { return float64(d) / el }
	guest := (a.Guest + a.GuestNice) - (b.Guest + b.GuestNice)
	u := results.CPUUsage{
		CPUs: n, SpanSeconds: el / UserHZ,
		Busy:    cores(a.Busy() - b.Busy()),
		User:    cores((a.User + a.Nice) - (b.User + b.Nice) - guest),
		Guest:   cores(guest),
		System:  cores(a.System - b.System),
		IRQ:     cores(a.IRQ - b.IRQ),
		SoftIRQ: cores(a.SoftIRQ - b.SoftIRQ),
		Steal:   cores(a.Steal - b.Steal),
	}
	if (a.User+a.Nice)-(b.User+b.Nice) < guest {
		return results.CPUUsage{}, fmt.Errorf("/proc/stat guest time grew more than user+nice (%d > %d)", guest, (a.User+a.Nice)-(b.User+b.Nice))
	}
	u.OVS, u.OVSThreads, u.OVSMissing = ovsDelta(before.OVS, after.OVS, cores)
	if u.OVS != nil {
		u.OVSPID = after.OVS.PID
	}
	return u, nil
}

func ovsDelta(b, a OVS, cores func(uint64) float64) (*float64, map[string]float64, string) {
	switch {
	case b.PID == 0 && a.PID == 0 && b.Missing == a.Missing:
		return nil, nil, a.Missing
	case b.PID == 0:
		return nil, nil, "before: " + b.Missing
	case a.PID == 0:
		return nil, nil, "after: " + a.Missing
	case b.PID != a.PID:
		return nil, nil, fmt.Sprintf("ovs-vswitchd restarted between the readings (pid %d, then %d)", b.PID, a.PID)
	case b.Process == nil || a.Process == nil:
		return nil, nil, "ovs-vswitchd's process line is missing"
	}
	pb, pa := b.Process.UTime+b.Process.STime, a.Process.UTime+a.Process.STime
	if pa < pb {
		return nil, nil, fmt.Sprintf("ovs-vswitchd's CPU time went backwards (%d, then %d ticks)", pb, pa)
	}
	v := cores(pa - pb)
	before := map[int]Task{}
	for _, t := range b.Threads {
		before[t.ID] = t
	}
	kinds := map[string]float64{}
	for _, t := range a.Threads {
		now := t.UTime + t.STime
		was := uint64(0)
		// A thread new since the first reading (or a tid reused by another
		// thread) spent all its time within the span.
		if o, ok := before[t.ID]; ok && o.Comm == t.Comm && o.UTime+o.STime <= now {
			was = o.UTime + o.STime
		}
		kinds[ThreadKind(t.Comm)] += cores(now - was)
	}
	return &v, kinds, ""
}
