package results

import (
	"fmt"
	"time"
)

// HostCPURun is the hypervisors' CPU over one repeat's measured window:
// read on both hypervisors just before the iperf3 clients start and just
// after the last one returned (never during the traffic). The span
// therefore covers the clients' whole run (connection setup, -O, -t and
// the final exchange) and the readings' own few milliseconds, not the
// iperf3 server start or the wait for it to listen.
type HostCPURun struct {
	// ReadBefore is when the first reading was asked for, ReadAfter when
	// the second one had answered on both hypervisors (harness clock).
	ReadBefore time.Time `json:"read_before"`
	ReadAfter  time.Time `json:"read_after"`
	// Hosts are the hypervisors' usages, the iperf3 server's first.
	Hosts []HostCPU `json:"hosts"`
	// SharedHost is true when both hypervisors reported the same boot id:
	// one machine (the lab's namespace hypervisors), whose counters are
	// the whole machine's and are counted once.
	SharedHost bool `json:"shared_host,omitempty"`
	// BusyCores, OVSCores and CoresPer10G are derived by Summarize over
	// the distinct hosts (by boot id); nil when a host has no number.
	BusyCores   *float64 `json:"busy_cores,omitempty"`
	OVSCores    *float64 `json:"ovs_cores,omitempty"`
	CoresPer10G *float64 `json:"cores_per_10gbps,omitempty"`
}

// HostCPU is one hypervisor's CPU between the two readings (its usage's
// fields stand in the JSON object beside the hypervisor's names).
type HostCPU struct {
	Hypervisor string `json:"hypervisor"`
	BootID     string `json:"boot_id,omitempty"`
	Hostname   string `json:"hostname,omitempty"`
	CPUUsage
	// Error is set when this hypervisor had no usable pair of readings.
	Error string `json:"error,omitempty"`
}

// CPUUsage is what one host's CPUs did between two readings (hostcpu.Delta
// computes it from /proc), in cores: a share of the span times the CPUs
// online (2.0 = two CPUs busy the whole span).
type CPUUsage struct {
	CPUs int `json:"cpus,omitempty"`
	// SpanSeconds is the span by the host's own counters (ticks per CPU
	// / USER_HZ 100).
	SpanSeconds float64 `json:"span_seconds,omitempty"`
	// Busy = Δ(total − idle − iowait) of /proc/stat's cpu line.
	Busy float64 `json:"busy_cores"`
	// User is user+nice without the guests' vCPU time (Guest, counted
	// inside user and nice by the kernel); User+Guest+System+IRQ+SoftIRQ+
	// Steal = Busy.
	User    float64 `json:"user_cores"`
	Guest   float64 `json:"guest_cores"`
	System  float64 `json:"system_cores"`
	IRQ     float64 `json:"irq_cores"`
	SoftIRQ float64 `json:"softirq_cores"`
	Steal   float64 `json:"steal_cores"`
	// OVS is ovs-vswitchd's own CPU (its process line, so threads that
	// ended count too) and OVSPID its pid; OVS nil with OVSMissing saying
	// why (no such process, several and none named, restarted).
	OVS        *float64 `json:"ovs_cores,omitempty"`
	OVSPID     int      `json:"ovs_pid,omitempty"`
	OVSMissing string   `json:"ovs_missing,omitempty"`
	// OVSThreads splits OVS by thread kind (hostcpu.ThreadKind) over the
	// threads alive at the second reading.
	OVSThreads map[string]float64 `json:"ovs_threads,omitempty"`
}

// GuestCPU is iperf3's own end.cpu_utilization_percent of a repeat:
// process CPU time over wall time, 100 = one vCPU, summed over the
// repeat's iperf3 processes. Client is the sending guest's, Server the
// receiving guest's.
type GuestCPU struct {
	ClientPercent float64 `json:"client_percent"`
	ServerPercent float64 `json:"server_percent"`
}

// CPUSummary is a profile's CPU over its successful repeats with numbers.
type CPUSummary struct {
	// HostBusy is the pair's busy cores (distinct hosts summed); User,
	// System, SoftIRQ, Guest the same parts; OVS ovs-vswitchd's cores;
	// CoresPer10G host busy cores per 10 Gbit/s delivered.
	HostBusy    Stat `json:"host_busy_cores"`
	User        Stat `json:"user_cores"`
	System      Stat `json:"system_cores"`
	SoftIRQ     Stat `json:"softirq_cores"`
	Guest       Stat `json:"guest_cores"`
	OVS         Stat `json:"ovs_cores"`
	CoresPer10G Stat `json:"cores_per_10gbps"`
	// GuestClient and GuestServer are iperf3's own CPU percentages.
	GuestClient Stat `json:"guest_client_percent"`
	GuestServer Stat `json:"guest_server_percent"`
	// SharedHost: in some repeat both hypervisors were one machine.
	SharedHost bool `json:"shared_host,omitempty"`
	// Missing are the reasons a repeat's or a host's number is absent.
	Missing []string `json:"missing,omitempty"`
}

// TenGbps is the unit of CoresPer10G.
const TenGbps = 10e9

// pairCPU derives the pair's numbers of one run from its hosts: distinct
// hosts by boot id (a repeated boot id is the same machine, counted
// once), summed; ovs-vswitchd by boot id and pid (the lab's two
// hypervisors are one machine with two ovs-vswitchd); nil when any host
// has no number.
func pairCPU(r *Run) {
	c := r.HostCPU
	c.BusyCores, c.OVSCores, c.CoresPer10G = nil, nil, nil
	c.SharedHost = false
	seen, seenOVS := map[string]bool{}, map[string]bool{}
	busy, ovs := 0.0, 0.0
	ovsOK, ok := true, len(c.Hosts) > 0
	for _, h := range c.Hosts {
		if h.Error != "" {
			ok = false
			continue
		}
		switch key := fmt.Sprintf("%s/%d", h.BootID, h.OVSPID); {
		case h.OVS == nil:
			ovsOK = false
		case h.BootID == "" || !seenOVS[key]:
			seenOVS[key] = true
			ovs += *h.OVS
		}
		if h.BootID != "" && seen[h.BootID] {
			c.SharedHost = true
			continue
		}
		seen[h.BootID] = true
		busy += h.Busy
	}
	if !ok {
		return
	}
	c.BusyCores = &busy
	if ovsOK {
		c.OVSCores = &ovs
	}
	if r.Error == "" && r.DeliveredBps > 0 {
		per := busy / (r.DeliveredBps / TenGbps)
		c.CoresPer10G = &per
	}
}

// summarizeCPU derives every run's pair numbers and the profile's CPU
// summary; nil when no run has a CPU reading or iperf3 CPU figure.
func summarizeCPU(runs []Run) *CPUSummary {
	var busy, user, system, softirq, guest, ovs, per, gc, gs []float64
	s := &CPUSummary{}
	any := false
	for i := range runs {
		r := &runs[i]
		if r.HostCPU != nil {
			any = true
			pairCPU(r)
		}
		if r.Error != "" {
			continue
		}
		if r.GuestCPU != nil {
			any = true
			gc = append(gc, r.GuestCPU.ClientPercent)
			gs = append(gs, r.GuestCPU.ServerPercent)
		}
		c := r.HostCPU
		if c == nil {
			continue
		}
		s.SharedHost = s.SharedHost || c.SharedHost
		for _, h := range c.Hosts {
			switch {
			case h.Error != "":
				s.Missing = append(s.Missing, fmt.Sprintf("repeat %d, %s: %s", r.Repeat, h.Hypervisor, h.Error))
			case h.OVS == nil:
				s.Missing = append(s.Missing, fmt.Sprintf("repeat %d, %s: no ovs-vswitchd figure: %s", r.Repeat, h.Hypervisor, h.OVSMissing))
			}
		}
		if c.BusyCores == nil {
			continue
		}
		busy = append(busy, *c.BusyCores)
		var u, sy, si, g float64
		seen := map[string]bool{}
		for _, h := range c.Hosts {
			if h.BootID != "" && seen[h.BootID] {
				continue
			}
			seen[h.BootID] = true
			u, sy, si, g = u+h.User, sy+h.System, si+h.SoftIRQ, g+h.Guest
		}
		user, system, softirq, guest = append(user, u), append(system, sy), append(softirq, si), append(guest, g)
		if c.OVSCores != nil {
			ovs = append(ovs, *c.OVSCores)
		}
		if c.CoresPer10G != nil {
			per = append(per, *c.CoresPer10G)
		}
	}
	if !any {
		return nil
	}
	s.HostBusy, s.User, s.System, s.SoftIRQ, s.Guest = StatOf(busy), StatOf(user), StatOf(system), StatOf(softirq), StatOf(guest)
	s.OVS, s.CoresPer10G = StatOf(ovs), StatOf(per)
	s.GuestClient, s.GuestServer = StatOf(gc), StatOf(gs)
	return s
}

// FormatCores writes a number of cores: "1.23".
func FormatCores(v float64) string { return fmt.Sprintf("%.2f", v) }

// Threshold metrics on CPU, from CPUSummary's medians.
const (
	MetricHostCoresBusy   = "host_cores_busy"       // the pair's busy cores
	MetricHostCoresPer10G = "host_cores_per_10gbps" // busy cores per 10 Gbit/s delivered
	MetricOVSCores        = "ovs_cores"             // ovs-vswitchd's cores on the pair
)

// CPUMetrics are the CPU threshold metrics (part of ThresholdMetrics).
var CPUMetrics = []string{MetricHostCoresBusy, MetricHostCoresPer10G, MetricOVSCores}

// cpuStat is the statistic a CPU metric is taken from, and its words.
func cpuStat(metric string, c *CPUSummary) (Stat, string) {
	switch metric {
	case MetricHostCoresBusy:
		return c.HostBusy, "host cores busy"
	case MetricHostCoresPer10G:
		return c.CoresPer10G, "host cores per 10 Gbit/s"
	}
	return c.OVS, "ovs-vswitchd cores"
}

// cpuMetric is a CPU metric's median and its words, or why there is none
// (a gate never passes on nothing).
func cpuMetric(metric string, c *CPUSummary) (float64, string, string) {
	if c == nil {
		return 0, "", "no host CPU reading (traffic.host_cpu off, or a file written before it)"
	}
	st, words := cpuStat(metric, c)
	if st.N == 0 {
		why := "no repeat has " + words
		if len(c.Missing) > 0 {
			why += " (" + c.Missing[0] + ")"
		}
		return 0, "", why
	}
	return st.Median, words + " " + FormatCores(st.Median), ""
}

// cpuN is how many repeats a CPU metric's median is over.
func cpuN(metric string, c *CPUSummary) (int, bool) {
	for _, m := range CPUMetrics {
		if m == metric && c != nil {
			st, _ := cpuStat(metric, c)
			return st.N, true
		}
	}
	return 0, false
}
