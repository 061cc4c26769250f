package report

import (
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// withCPU gives every successful run of f host CPU readings on two
// hypervisors: each busy coresPerGbps × delivered Gbit/s / 2 (so the pair
// costs coresPerGbps × 10 cores per 10 Gbit/s), ovs-vswitchd a tenth of
// that; sharedBoot puts both on one machine (same boot id).
func withCPU(f *results.Results, coresPerGbps float64, sharedBoot bool) *results.Results {
	for i := range f.Profiles {
		p := &f.Profiles[i]
		for j := range p.Runs {
			r := &p.Runs[j]
			half := coresPerGbps * r.DeliveredBps / 1e9 / 2
			ovs := half / 10
			boot2 := "boot-b"
			if sharedBoot {
				boot2, half = "boot-a", half*2
			}
			r.HostCPU = &results.HostCPURun{Hosts: []results.HostCPU{
				{Hypervisor: "cmp-1", BootID: "boot-a", CPUUsage: results.CPUUsage{Busy: half, User: half / 2, System: half / 4, SoftIRQ: half / 4, OVS: &ovs, OVSPID: 10}},
				{Hypervisor: "cmp-2", BootID: boot2, CPUUsage: results.CPUUsage{Busy: half, User: half / 2, System: half / 4, SoftIRQ: half / 4, OVS: &ovs, OVSPID: 20}},
			}}
			r.GuestCPU = &results.GuestCPU{ClientPercent: 97, ServerPercent: 41}
		}
		results.Summarize(p, f.Config.CVLimitPercent)
	}
	return f
}

func cpuSet(t *testing.T, asap2, baseline float64, shared bool) *Set {
	t.Helper()
	s, err := NewSet(withCPU(seedResults(results.PathASAP2), asap2, shared), withCPU(seedResults(results.PathBaseline), baseline, shared))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestCPUMarkdown(t *testing.T) {
	md := Markdown(cpuSet(t, 0.02, 0.11, false), Options{})
	i := strings.Index(md, "## Host CPU during the measured windows")
	if i < 0 {
		t.Fatalf("no CPU section:\n%s", md)
	}
	sec := md[i:]
	sec = sec[:strings.Index(sec[3:], "\n## ")+3]
	for _, want := range []string{
		"just before each repeat's iperf3 clients start and just after the last one returned — never while they run",
		"| Profile | Path | Runs | Host cores busy median (min–max) | User / system / softirq / guest vCPUs | ovs-vswitchd cores | Host cores per 10 Gbit/s | Guest CPU sender / receiver (iperf3) |",
		// 0.02 cores per Gbit/s = 0.20 per 10 Gbit/s, on every profile.
		"| 0.20 | 97 % / 41 % |",
		"| 1.10 | 97 % / 41 % |",
	} {
		if !strings.Contains(sec, want) {
			t.Errorf("CPU section lacks %q:\n%s", want, sec)
		}
	}
	if strings.Contains(sec, "One machine") {
		t.Error("two boot ids called one machine")
	}
	shared := Markdown(cpuSet(t, 0.02, 0.11, true), Options{})
	if !strings.Contains(shared, "**One machine:** in the ASAP² run seed-asap2, the Baseline run seed-baseline both hypervisors reported the same boot id") {
		t.Errorf("shared host not named:\n%s", shared[strings.Index(shared, "## Host CPU"):])
	}
	// Per-10G cell of a shared machine: counted once (same numbers as two
	// machines each carrying half).
	if !strings.Contains(shared, "| 0.20 | 97 % / 41 % |") {
		t.Error("a shared machine counted twice")
	}
	// No CPU data: no section.
	plain, _ := NewSet(seedResults(results.PathASAP2))
	if strings.Contains(Markdown(plain, Options{}), "Host CPU") {
		t.Error("CPU section without data")
	}
}

func TestCPUMarkdownMissing(t *testing.T) {
	f := withCPU(seedResults(results.PathBaseline), 0.1, false)
	p := &f.Profiles[0]
	p.Runs[0].HostCPU.Hosts[1] = results.HostCPU{Hypervisor: "cmp-2", Error: "reading before the window: ssh: connection refused"}
	p.Runs[0].HostCPU.Hosts[0].OVS, p.Runs[0].HostCPU.Hosts[0].OVSMissing = nil, "no ovs-vswitchd process where the reading ran"
	results.Summarize(p, 0)
	s, _ := NewSet(f)
	md := Markdown(s, Options{})
	for _, want := range []string{
		"repeat 1, cmp-2: reading before the window: ssh: connection refused",
		"repeat 1, cmp-1: no ovs-vswitchd figure: no ovs-vswitchd process where the reading ran",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("missing note %q", want)
		}
	}
	if !strings.Contains(md, "| "+profileTitle(p)+" | Baseline | 0 | — | — | — | — | 97 % / 41 % |") {
		t.Errorf("a profile without host numbers must show dashes:\n%s", md[strings.Index(md, "## Host CPU"):])
	}
}

var rectRE = regexp.MustCompile(`<rect class="bar cpu" x="[0-9.]+" y="([0-9.]+)" width="[0-9.]+" height="([0-9.]+)" fill="(#[0-9a-f]+)"><title>([^<]*)</title>`)

// The chart's bars are as tall as their medians: ASAP² at 0.2 and baseline
// at 1.1 cores per 10 Gbit/s stand in that ratio, in their path's colour.
func TestCPUChart(t *testing.T) {
	s := cpuSet(t, 0.02, 0.11, false)
	svg := cpuChart(s)
	ms := rectRE.FindAllStringSubmatch(svg, -1)
	if want := 2 * 14; len(ms) != want {
		t.Fatalf("%d bars, want %d (14 profiles × 2 paths)", len(ms), want)
	}
	for k := 0; k < len(ms); k += 2 {
		ha, _ := strconv.ParseFloat(ms[k][2], 64)
		hb, _ := strconv.ParseFloat(ms[k+1][2], 64)
		if ms[k][3] != colASAP2 || ms[k+1][3] != colBaseline {
			t.Fatalf("colours %s, %s", ms[k][3], ms[k+1][3])
		}
		if math.Abs(hb/ha-5.5) > 0.05 {
			t.Errorf("bar heights %v and %v: ratio %.2f, want 5.5 (%s / %s)", ha, hb, hb/ha, ms[k][4], ms[k+1][4])
		}
	}
	if !strings.Contains(string(HTML(s, Options{})), "<h2>Host cores per 10 Gbit/s delivered</h2>") {
		t.Error("chart not in the HTML")
	}
	plain, _ := NewSet(seedResults(results.PathASAP2))
	if cpuChart(plain) != "" {
		t.Error("a chart without data")
	}
}

func TestCompareCPU(t *testing.T) {
	acc := cpuSet(t, 0.02, 0.10, false)
	cand := cpuSet(t, 0.026, 0.10, false) // ASAP² 30 % dearer
	o := CompareOptions{TolerancePercent: 5, LossTolerancePoints: 1, CPUTolerancePercent: 25}
	c := Compare(acc, cand, o)
	asap2Regressions := 0
	for _, r := range c.Rows {
		if r.Path == results.PathASAP2 {
			if !r.Regression || !strings.Contains(strings.Join(r.Notes, "; "), "host cores per 10 Gbit/s rose 30") {
				t.Errorf("%s: %+v", r.Profile, r)
			}
			asap2Regressions++
		} else if r.Regression {
			t.Errorf("baseline row regressed: %+v", r)
		}
	}
	if asap2Regressions == 0 || !c.Failed() {
		t.Fatal("no ASAP² row gated")
	}
	o.CPUTolerancePercent = 35
	if Compare(acc, cand, o).Failed() {
		t.Error("a 30 % rise failed a 35 % tolerance")
	}
	o.CPUTolerancePercent, o.IgnoreCPU = 25, true
	if Compare(acc, cand, o).Failed() {
		t.Error("-ignore-cpu still gated")
	}
	// A reading on one side only is a note, not a regression.
	plain, _ := NewSet(seedResults(results.PathASAP2), seedResults(results.PathBaseline))
	c = Compare(plain, cand, CompareOptions{TolerancePercent: 5, LossTolerancePoints: 1})
	if c.Failed() || !strings.Contains(c.Markdown(), "host cores per 10 Gbit/s not compared: no reading in the accepted run") {
		t.Errorf("one-sided reading: failed=%v\n%s", c.Failed(), c.Markdown())
	}
}
