package results

import (
	"encoding/json"
	"strings"
	"testing"
)

func fp(v float64) *float64 { return &v }

func cpuRun(rep int, delivered float64, hosts ...HostCPU) Run {
	return Run{Repeat: rep, DeliveredBps: delivered, OfferedBps: delivered,
		HostCPU: &HostCPURun{Hosts: hosts}, GuestCPU: &GuestCPU{ClientPercent: 50 + float64(rep), ServerPercent: 30}}
}

func TestSummarizeCPUTwoHosts(t *testing.T) {
	p := ProfileResult{ID: "tcp-p1", Runs: []Run{
		cpuRun(1, 20e9, HostCPU{Hypervisor: "a", BootID: "A", CPUUsage: CPUUsage{Busy: 1.5, User: 0.5, System: 0.5, SoftIRQ: 0.5, OVS: fp(0.25)}},
			HostCPU{Hypervisor: "b", BootID: "B", CPUUsage: CPUUsage{Busy: 2.5, User: 1, System: 1, SoftIRQ: 0.5, OVS: fp(0.75)}}),
		cpuRun(2, 10e9, HostCPU{Hypervisor: "a", BootID: "A", CPUUsage: CPUUsage{Busy: 1, OVS: fp(0.5)}},
			HostCPU{Hypervisor: "b", BootID: "B", CPUUsage: CPUUsage{Busy: 1, OVS: fp(0.5)}}),
	}}
	Summarize(&p, 0)
	c := p.Summary.CPU
	if c == nil {
		t.Fatal("no CPU summary")
	}
	// Repeat 1: 4 cores at 20 Gbit/s = 2 per 10 Gbit/s; repeat 2: 2 cores at 10 Gbit/s = 2.
	if r := p.Runs[0].HostCPU; *r.BusyCores != 4 || *r.OVSCores != 1 || *r.CoresPer10G != 2 || r.SharedHost {
		t.Errorf("repeat 1: busy %v ovs %v per10G %v shared %v", *r.BusyCores, *r.OVSCores, *r.CoresPer10G, r.SharedHost)
	}
	if c.HostBusy.N != 2 || c.HostBusy.Median != 3 || c.HostBusy.Min != 2 || c.HostBusy.Max != 4 {
		t.Errorf("host busy %+v", c.HostBusy)
	}
	if c.CoresPer10G.Median != 2 || c.OVS.Median != 1 || c.User.Max != 1.5 || c.SoftIRQ.Max != 1 {
		t.Errorf("summary %+v", c)
	}
	if c.GuestClient.Median != 51.5 || c.GuestServer.Median != 30 {
		t.Errorf("guest %+v %+v", c.GuestClient, c.GuestServer)
	}
}

// Both hypervisors on one machine (the lab): its counters are counted
// once, and the summary says so.
func TestSummarizeCPUSharedHost(t *testing.T) {
	p := ProfileResult{Runs: []Run{cpuRun(1, 5e9,
		HostCPU{Hypervisor: "compute1", BootID: "X", CPUUsage: CPUUsage{Busy: 1.2, OVS: fp(0.1), OVSPID: 10}},
		HostCPU{Hypervisor: "compute2", BootID: "X", CPUUsage: CPUUsage{Busy: 1.21, OVS: fp(0.2), OVSPID: 20}})}}
	Summarize(&p, 0)
	r := p.Runs[0].HostCPU
	if !r.SharedHost || *r.BusyCores != 1.2 || *r.CoresPer10G != 1.2/0.5 {
		t.Errorf("shared: %+v busy %v per %v", r, *r.BusyCores, *r.CoresPer10G)
	}
	// Each hypervisor has its own ovs-vswitchd even on one machine: both count.
	if d := *r.OVSCores - 0.3; d > 1e-12 || d < -1e-12 {
		t.Errorf("ovs %v, want both processes", *r.OVSCores)
	}
	// The same process read twice counts once.
	p.Runs[0].HostCPU.Hosts[1].OVSPID = 10
	Summarize(&p, 0)
	if *p.Runs[0].HostCPU.OVSCores != 0.1 {
		t.Errorf("one ovs-vswitchd counted twice: %v", *p.Runs[0].HostCPU.OVSCores)
	}
	if !p.Summary.CPU.SharedHost {
		t.Error("summary does not say shared")
	}
}

func TestSummarizeCPUMissing(t *testing.T) {
	failed := cpuRun(2, 0, HostCPU{Hypervisor: "a", BootID: "A", CPUUsage: CPUUsage{Busy: 9}})
	failed.Error = "iperf3 failed"
	p := ProfileResult{Runs: []Run{
		cpuRun(1, 10e9, HostCPU{Hypervisor: "a", BootID: "A", CPUUsage: CPUUsage{Busy: 1, OVSMissing: "no ovs-vswitchd process where the reading ran"}},
			HostCPU{Hypervisor: "b", Error: "ssh: connection refused"}),
		failed,
	}}
	Summarize(&p, 0)
	c := p.Summary.CPU
	if c.HostBusy.N != 0 || c.CoresPer10G.N != 0 {
		t.Errorf("a host without a reading must leave the pair without a number: %+v", c.HostBusy)
	}
	if len(c.Missing) != 2 || !strings.Contains(c.Missing[1], "b: ssh: connection refused") || !strings.Contains(c.Missing[0], "no ovs-vswitchd figure") {
		t.Errorf("missing %q", c.Missing)
	}
	if c.GuestClient.N != 1 {
		t.Errorf("the failed repeat's guest CPU counted: %+v", c.GuestClient)
	}
	// No CPU data at all: no summary (files written before it load as they were).
	q := ProfileResult{Runs: []Run{{Repeat: 1, DeliveredBps: 1e9}}}
	Summarize(&q, 0)
	if q.Summary.CPU != nil {
		t.Errorf("summary without data: %+v", q.Summary.CPU)
	}
}

func TestCPUThresholds(t *testing.T) {
	p := ProfileResult{ID: "tcp-p1", Path: PathBaseline, Runs: []Run{
		cpuRun(1, 10e9, HostCPU{Hypervisor: "a", BootID: "A", CPUUsage: CPUUsage{Busy: 3, OVS: fp(1)}}),
	}}
	Summarize(&p, 0)
	f := &Results{Config: ConfigSummary{ExpectedPath: PathBaseline}, Profiles: []ProfileResult{p, {ID: "tcp-p15", Path: PathBaseline, Runs: []Run{{Repeat: 1, DeliveredBps: 1e9}}}}}
	Summarize(&f.Profiles[1], 0)
	rules := []ThresholdRule{
		{Profile: "tcp-p1", Path: "baseline", Metric: MetricHostCoresPer10G, Op: "<=", Value: 2},
		{Profile: "tcp-p1", Path: "baseline", Metric: MetricHostCoresBusy, Op: "<=", Value: 3},
		{Profile: "tcp-p1", Path: "baseline", Metric: MetricOVSCores, Op: "<=", Value: 0.5},
		{Profile: "tcp-p15", Path: "baseline", Metric: MetricHostCoresBusy, Op: "<=", Value: 3},
	}
	got := EvaluateThresholds(rules, f)
	if got[0].Pass || *got[0].Actual != 3 || !strings.Contains(got[0].Reason, "host cores per 10 Gbit/s 3.00 (median of 1) violates <= 2 cores per 10 Gbit/s") {
		t.Errorf("per 10G: %+v", got[0])
	}
	if !got[1].Pass {
		t.Errorf("busy: %+v", got[1])
	}
	if got[2].Pass || *got[2].Actual != 1 {
		t.Errorf("ovs: %+v", got[2])
	}
	if got[3].Pass || got[3].Actual != nil || !strings.Contains(got[3].Reason, "no host CPU reading") {
		t.Errorf("no reading must fail: %+v", got[3])
	}
	if err := ValidateRule(ThresholdRule{Profile: "x", Path: "asap2", Metric: MetricHostCoresPer10G, Op: "<=", Value: -1}); err == nil {
		t.Error("negative cores accepted")
	}
}

// TestHostCPUJSON: a hypervisor's usage stands in its JSON object as it did before CPUUsage
// was its own type (results files written since issue 12 keep their layout, key for key).
func TestHostCPUJSON(t *testing.T) {
	h := HostCPU{Hypervisor: "compute1", BootID: "b", Hostname: "h", Error: "e", CPUUsage: CPUUsage{CPUs: 2, SpanSeconds: 3.51,
		Busy: 0.5, User: 0.25, Guest: 0.125, System: 0.0625, IRQ: 0.03125, SoftIRQ: 0.015625, Steal: 0.0078125,
		OVS: fp(0.25), OVSPID: 28992, OVSMissing: "m", OVSThreads: map[string]float64{"main": 0.25}}}
	got, err := json.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"hypervisor":"compute1","boot_id":"b","hostname":"h","cpus":2,"span_seconds":3.51,"busy_cores":0.5,` +
		`"user_cores":0.25,"guest_cores":0.125,"system_cores":0.0625,"irq_cores":0.03125,"softirq_cores":0.015625,` +
		`"steal_cores":0.0078125,"ovs_cores":0.25,"ovs_pid":28992,"ovs_missing":"m","ovs_threads":{"main":0.25},"error":"e"}`
	if string(got) != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}
