package report

import (
	"math"
	"strings"
	"testing"

	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

func costRun(id string, ps *bool, path results.Path, build string, profs ...results.ProfileResult) *results.Results {
	return &results.Results{RunID: id,
		Config:      results.ConfigSummary{ExpectedPath: path, PortSecurity: ps, DurationSeconds: 10},
		Environment: results.Environment{BuildLabel: build, Hypervisors: []results.Hypervisor{{Name: "cmp1", OVSVersion: "3.1.0"}, {Name: "cmp2", OVSVersion: "3.1.0"}}},
		Profiles:    profs}
}

func costProfile(id, proto string, streams int, delivered, busy, per10G float64) results.ProfileResult {
	p := results.ProfileResult{ID: id, Protocol: proto, Streams: streams, Path: results.PathBaseline}
	p.Summary.Runs = 2
	p.Summary.Delivered = results.Stat{N: 2, Median: delivered}
	if busy > 0 {
		p.Summary.CPU = &results.CPUSummary{HostBusy: results.Stat{N: 2, Median: busy}, CoresPer10G: results.Stat{N: 2, Median: per10G}}
	}
	return p
}

func TestSecurityGroupCostPairsShapesAndComputesTheRatio(t *testing.T) {
	off, on := false, true
	a := costRun("off1", &off, results.PathBaseline, "b1",
		costProfile("tcp-p1", "tcp", 1, 10e9, 2, 2),
		costProfile("udp-p1", "udp", 1, 4e9, 0, 0),
		costProfile("tcp-p8", "tcp", 8, 20e9, 0, 0))
	b := costRun("on1", &on, results.PathBaseline, "b1",
		costProfile("tcp-p1", "tcp", 1, 7.5e9, 3, 4),
		costProfile("udp-p1", "udp", 1, 0, 0, 0),
		costProfile("tcp-p4", "tcp", 4, 9e9, 0, 0))
	c, err := NewSecurityGroupCost(a, b)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Rows) != 2 || c.Rows[0].ID != "tcp-p1" || c.Rows[1].ID != "udp-p1" {
		t.Fatalf("rows %+v, want tcp-p1 and udp-p1", c.Rows)
	}
	if r := c.Rows[0]; math.Abs(r.Ratio-0.75) > 1e-9 || *r.BusyOff != 2 || *r.BusyOn != 3 || *r.Per10GOn != 4 {
		t.Errorf("tcp-p1 row %+v, want ratio 0.75 and the CPU medians", r)
	}
	if r := c.Rows[1]; r.Ratio != 0 || r.BusyOff != nil {
		t.Errorf("udp-p1 row %+v: a zero delivered rate gives ratio 0 and no CPU where none was recorded", r)
	}
	if strings.Join(c.OnlyOff, ",") != "tcp-p8" || strings.Join(c.OnlyOn, ",") != "tcp-p4" {
		t.Errorf("only off %v, only on %v", c.OnlyOff, c.OnlyOn)
	}
	md := c.Markdown()
	for _, want := range []string{"| tcp-p1 | 10.0 Gbit/s | 7.50 Gbit/s | 0.75× (-25 %) |", "| 2.00 / 3.00 | 2.00 / 4.00 |", "port security off only: tcp-p8", "on only: tcp-p4", "ICMP is not offloaded under conntrack"} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
}

func TestSecurityGroupCostRefusesEveryProblemAtOnce(t *testing.T) {
	off, on := false, true
	p := costProfile("tcp-p1", "tcp", 1, 1e9, 0, 0)
	// Swapped modes, another path, another build: all four named.
	_, err := NewSecurityGroupCost(costRun("r-on", &on, results.PathASAP2, "b1", p), costRun("r-off", &off, results.PathBaseline, "b2", p))
	if err == nil {
		t.Fatal("no error for swapped modes")
	}
	for _, want := range []string{"first run (r-on) was measured with security groups on", "second run (r-off) was measured with security groups off", "different paths", "different builds"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
	// An unrecorded mode is not "on".
	if _, err := NewSecurityGroupCost(costRun("a", &off, results.PathBaseline, "b", p), costRun("b", nil, results.PathBaseline, "b", p)); err == nil || !strings.Contains(err.Error(), "mode not recorded") {
		t.Errorf("an unrecorded second mode: %v", err)
	}
	// Nothing in common.
	q := costProfile("udp-p1", "udp", 1, 1e9, 0, 0)
	if _, err := NewSecurityGroupCost(costRun("a", &off, results.PathBaseline, "b", p), costRun("b", &on, results.PathBaseline, "b", q)); err == nil || !strings.Contains(err.Error(), "share no profile") {
		t.Errorf("no shared profile: %v", err)
	}
}

func TestSecurityGroupCostNamesEnvironmentDifferences(t *testing.T) {
	off, on := false, true
	p := costProfile("tcp-p1", "tcp", 1, 1e9, 0, 0)
	a, b := costRun("a", &off, results.PathBaseline, "b", p), costRun("b", &on, results.PathBaseline, "b", p)
	b.Environment.Hypervisors[1].OVSVersion = "3.5.0"
	b.Config.DurationSeconds = 30
	c, err := NewSecurityGroupCost(a, b)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(c.Differences, "; ")
	for _, want := range []string{`OVS: "3.1.0" off, "cmp1: 3.1.0; cmp2: 3.5.0" on`, `duration per repeat: "10s" off, "30s" on`} {
		if !strings.Contains(got, want) {
			t.Errorf("differences %q lack %q", got, want)
		}
	}
	if !strings.Contains(c.Markdown(), "Besides the mode, the runs differ in") {
		t.Error("the markdown does not say the runs differ beyond the mode")
	}
}

// Two real lab runs (testdata/sgcost-lab/README.md): every profile both
// runs measured is paired, the conntrack verdicts appear only on the on
// side, and the files swapped are refused.
func TestSecurityGroupCostOnRecordedLabRuns(t *testing.T) {
	off, err := results.Load("testdata/sgcost-lab/off.json")
	if err != nil {
		t.Fatal(err)
	}
	on, err := results.Load("testdata/sgcost-lab/on.json")
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewSecurityGroupCost(off, on)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range c.Rows {
		ids = append(ids, r.ID)
		if r.Off <= 0 || r.On <= 0 || r.BusyOff == nil || r.BusyOn == nil {
			t.Errorf("row %s lacks a rate or the host CPU: %+v", r.ID, r)
		}
	}
	if got := strings.Join(ids, " "); got != "tcp-p1 tcp-p15 udp-500m-p1-l700 udp-b0-p1 udp-b0-p1-l64" {
		t.Errorf("rows %s", got)
	}
	if len(c.Differences) != 0 {
		t.Errorf("differences between two runs on one lab: %v", c.Differences)
	}
	if got := strings.Join(c.ChecksOn, "; "); !strings.Contains(got, "tcp conntrack: software ×2") || !strings.Contains(got, "udp conntrack: software ×2") {
		t.Errorf("on: %s", got)
	}
	if got := strings.Join(c.ChecksOff, "; "); strings.Contains(got, "conntrack") || !strings.Contains(got, "tcp dpctl: software ×2") {
		t.Errorf("off: %s", got)
	}
	if _, err := NewSecurityGroupCost(on, off); err == nil {
		t.Error("the files swapped were not refused")
	}
}

// The connection-scale results pair by N and cap: the rates side by side,
// the port-security run's shares (OVS's userspace table named software),
// an error kept in its cell, an N of one mode listed apart; connection
// results alone are enough for a report.
func TestSecurityGroupCostPairsConnectionScale(t *testing.T) {
	off, on := false, true
	a := costRun("off1", &off, results.PathBaseline, "b1")
	b := costRun("on1", &on, results.PathBaseline, "b1")
	cr := func(n int, cap int64, bps float64, hosts ...results.ConnectionHost) results.ConnectionResult {
		procs := (n + 127) / 128
		return results.ConnectionResult{N: n, Path: results.PathBaseline, Processes: procs, Opened: n + procs, BitratePerConnectionBps: cap, DeliveredBps: bps, Hosts: hosts}
	}
	user := results.ConnectionHost{Hypervisor: "cmp1", Source: "ovs-userspace", Found: 101, Samples: 3, Reason: "software"}
	hw := results.ConnectionHost{Hypervisor: "cmp2", Source: "kernel", Found: 101, Offloaded: 101, Share: 1, Samples: 3, Reason: "all"}
	a.Connections = []results.ConnectionResult{cr(100, 0, 2e9), cr(1000, 1e6, 1e9), cr(1, 0, 1e9)}
	a.Connections[2].NotApplicable = "not applicable"
	failed := cr(1000, 1e6, 0, user, hw)
	failed.Error = "iperf3: Connection timed out"
	b.Connections = []results.ConnectionResult{cr(100, 0, 1.5e9, user, hw), failed, cr(1000, 2e6, 9e8), cr(10, 0, 1e8)}
	c, err := NewSecurityGroupCost(a, b)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Rows) != 0 || len(c.Connections) != 2 {
		t.Fatalf("rows %+v, connections %+v", c.Rows, c.Connections)
	}
	if r := c.Connections[0]; r.N != 100 || math.Abs(r.Ratio-0.75) > 1e-9 || r.Opened != 101 {
		t.Errorf("N=100 row %+v, want ratio 0.75", r)
	}
	if r := c.Connections[1]; r.N != 1000 || r.Ratio != 0 || r.ErrOn == "" {
		t.Errorf("N=1000 row %+v, want the error kept and no ratio", r)
	}
	if intList(c.OnlyConnOff) != "1" || intList(c.OnlyConnOn) != "10, 1000" {
		t.Errorf("only off %v, only on %v (1000 at another cap is another row)", c.OnlyConnOff, c.OnlyConnOn)
	}
	md := c.Markdown()
	for _, want := range []string{
		"| 100 | 101 | unlimited | 2.00 Gbit/s | 1.50 Gbit/s | 0.75× (-25 %) | cmp1: 0 %, OVS's userspace conntrack (software); cmp2: 100 % [HW_OFFLOAD] |",
		"| 1000 | 1008 | 1.00 Mbit/s | 1.00 Gbit/s | error: iperf3: Connection timed out | n/a |",
		"port security off only: N = 1.", "port security on only: N = 10, 1000.",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
}
