package report

import (
	"strings"
	"testing"

	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// A test input, not a measurement: the asap2 run's table fills at N=1000
// on cmp-1 (620 of 1008 offloaded) while cmp-2 keeps all; the baseline run
// is the lab's shape (OVS userspace conntrack, software at every N); a
// third count ran without port security.
func connectionsSet(t *testing.T) *Set {
	t.Helper()
	a, b := seedResults(results.PathASAP2), seedResults(results.PathBaseline)
	sec := func(v float64) *float64 { return &v }
	host := func(hv string, off, opened int, at *float64) results.ConnectionHost {
		return results.ConnectionHost{Hypervisor: hv, Source: "kernel", Found: opened, Offloaded: off, Share: float64(off) / float64(opened), TimeToOffloadSeconds: at, Samples: 9, Reason: "r"}
	}
	full := func(h results.ConnectionHost) results.ConnectionHost {
		h.TableCount, h.TableMax = 65536, 65536
		return h
	}
	conn := func(p results.Path, n int, bps float64, hosts ...results.ConnectionHost) results.ConnectionResult {
		procs := (n + 127) / 128
		return results.ConnectionResult{N: n, Path: p, Processes: procs, Opened: n + procs, DurationSeconds: 10, OffloadWaitSeconds: 10, DeliveredBps: bps, Hosts: hosts}
	}
	a.Connections = []results.ConnectionResult{
		conn(results.PathASAP2, 1000, 20e9, full(host("cmp-1", 620, 1008, nil)), host("cmp-2", 1008, 1008, sec(3))),
		conn(results.PathASAP2, 1, 9e9, host("cmp-1", 2, 2, sec(1)), host("cmp-2", 2, 2, sec(2))),
		conn(results.PathASAP2, 100, 22e9, host("cmp-1", 101, 101, sec(1)), host("cmp-2", 101, 101, sec(2))),
	}
	na := conn(results.PathASAP2, 10, 21e9)
	na.NotApplicable = "not applicable: data_port.port_security is false, no conntrack on the path"
	a.Connections = append(a.Connections, na)
	ovs := func(n int) results.ConnectionResult {
		c := conn(results.PathBaseline, n, 2e9)
		c.Hosts = []results.ConnectionHost{{Hypervisor: "cmp-a", Source: "ovs-userspace", Found: c.Opened, Samples: 8, Reason: "software"}}
		return c
	}
	b.Connections = []results.ConnectionResult{ovs(1), ovs(100)}
	s, err := NewSet(a, b)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestConnectionFindingsNameWhereTheShareFalls(t *testing.T) {
	got := ConnectionFindings(connectionsSet(t).Connections())
	want := []string{
		"At N=1000 the share fell to 62 % on cmp-1 (ASAP²): 620 of 1008, from 100 % (101 of 101) at N=100. The table was full (65536 of 65536 entries): new connections were dropped, not left in software.",
		"On cmp-2 (ASAP²) the share never falls: 100 % at N=1, 100 % at N=1000.",
		"cmp-a (Baseline): every N's connections are in OVS's userspace conntrack, software at every N (0 % offloaded by construction).",
		"N=10: no share, port security was off (no conntrack on the path); the throughput stands.",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("findings\n--- got:\n%s\n--- want:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// Below 100 % at the smallest N is said too.
	one := &results.ConnectionResult{N: 1, Path: results.PathASAP2, Processes: 1, Opened: 2,
		Hosts: []results.ConnectionHost{{Hypervisor: "h", Source: "kernel", Offloaded: 1, Share: 0.5, Samples: 3}}}
	if f := ConnectionFindings([]*results.ConnectionResult{one}); len(f) != 1 || !strings.Contains(f[0], "below 100 % already at the smallest N: at N=1 50 % (1 of 2)") {
		t.Errorf("smallest N: %q", f)
	}
}

func TestConnectionsInBothReports(t *testing.T) {
	s := connectionsSet(t)
	md := Markdown(s, Options{})
	for _, want := range []string{
		"## Connection scale: offloaded share against N",
		"| 1000 | ASAP² | 1008 | cmp-1 | 62 % (620 of 1008) | never within 10s | 20.0 Gbit/s | kernel (`[HW_OFFLOAD]`) | **full**: 65536 of 65536 |",
		"| 1000 | ASAP² | 1008 | cmp-2 | 100 % (1008 of 1008) | 3.0 s |",
		"| 10 | ASAP² | 11 | — | not applicable: data_port.port_security is false, no conntrack on the path | — |",
		"| 1 | Baseline | 2 | cmp-a | 0 % (0 of 2) | never: software conntrack | 2.00 Gbit/s | OVS userspace (software) |",
		"- At N=1000 the share fell to 62 % on cmp-1",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q", want)
		}
	}
	html := string(HTML(s, Options{}))
	_, chart, _ := strings.Cut(html, "Connection scale: offloaded share against N")
	chart, _, _ = strings.Cut(chart, "</svg>")
	if n := strings.Count(chart, "<polyline"); n != 3 {
		t.Errorf("the curve has %d lines, want 3 (cmp-1, cmp-2, cmp-a)", n)
	}
	for _, want := range []string{"Connection scale: offloaded share against N", "cmp-1 (ASAP²), N=1000: 62 % (620 of 1008)", "At N=1000 the share fell to 62 % on cmp-1"} {
		if !strings.Contains(html, esc(want)) && !strings.Contains(html, want) {
			t.Errorf("html lacks %q", want)
		}
	}
	// A run without connection results has no such section.
	plain, err := NewSet(seedResults(results.PathASAP2))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(Markdown(plain, Options{}), "Connection scale") {
		t.Error("a section without results")
	}
}
