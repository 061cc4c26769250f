package offload

import (
	"context"
	"errors"
	"net/netip"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mosk-qa/asap2-e2e/e2e/conntrack"
	"github.com/mosk-qa/asap2-e2e/e2e/remote"
	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// The conntrack check over recorded outputs (e2e/conntrack/testdata/README.md
// and testdata/README.md name their sources): the mlx5 hardware listing of
// 2020, the software listings, the lab's userspace datapath recording.

func ctFile(t *testing.T, name string) []byte {
	t.Helper()
	return readTestdata(t, filepath.Join("..", "..", "conntrack", "testdata", name))
}

func ctEvidence(table, ovs, flows []byte) []EvidenceFile {
	return []EvidenceFile{
		{Name: ConntrackTableFile, Cmd: conntrack.ReadCommand, Output: table, Target: "hypervisor cmp-1"},
		{Name: ConntrackOVSFile, Cmd: conntrack.DPCtlCommand, Output: ovs, Target: "hypervisor cmp-1"},
		{Name: ConntrackFlowsFile, Cmd: DpctlFlowsCommand, Output: flows, Target: "hypervisor cmp-1"},
	}
}

func tcpFlow(client, server string, port uint16, opened int) []conntrack.Flow {
	return []conntrack.Flow{{Proto: "tcp", Client: netip.MustParseAddr(client), Server: netip.MustParseAddr(server), ServerPort: port, Opened: opened}}
}

var (
	// [sriov-op] guests of pipeline/dpctl-ct-offloaded-*.txt.
	ctHWMACs = []string{"fa:16:3e:4a:11:01", "fa:16:3e:4a:11:02"}
	// the lab recording's guests (conntrack testdata ovs/).
	ctLabMACs = []string{"02:00:c6:12:d4:01", "02:00:c6:12:d4:02"}
	// the recorded software-path session without port security (sw/).
	swMACs = []string{"02:00:c6:12:d2:01", "02:00:c6:12:d2:02"}
)

func TestJudgeConntrack(t *testing.T) {
	hwFlows := readTestdata(t, "pipeline/dpctl-ct-offloaded-1.txt")
	hwTable := ctFile(t, "hw/proc-hw-offload-mlx5-2020.txt")
	cases := []struct {
		name    string
		ev      []EvidenceFile
		flows   []conntrack.Flow
		macs    []string
		want    results.Verdict
		reasons []string
	}{
		{"hardware: both connections [HW_OFFLOAD], the pair through ct(",
			ctEvidence(hwTable, nil, hwFlows), tcpFlow("1.1.1.17", "1.1.1.16", 5001, 2), ctHWMACs,
			results.VerdictOffloaded, []string{"2 of 2 connections the run opened are [HW_OFFLOAD]"}},
		{"hardware listing of conntrack -L",
			ctEvidence(ctFile(t, "hw/conntrack-L-hw-offload-mlx5-2020.txt"), nil, hwFlows), tcpFlow("1.1.1.17", "1.1.1.16", 5001, 2), ctHWMACs,
			results.VerdictOffloaded, []string{"[HW_OFFLOAD]"}},
		{"a connection more than the run opened is not proof",
			ctEvidence(hwTable, nil, hwFlows), tcpFlow("1.1.1.17", "1.1.1.16", 5001, 1), ctHWMACs,
			results.VerdictInconclusive, []string{"more than it opened"}},
		{"a connection missing is not proof",
			ctEvidence(hwTable, nil, hwFlows), tcpFlow("1.1.1.17", "1.1.1.16", 5001, 3), ctHWMACs,
			results.VerdictInconclusive, []string{"1 not in the table"}},
		{"software: ESTABLISHED [ASSURED] without offload",
			ctEvidence(ctFile(t, "sw/conntrack-L-established.txt"), nil, hwFlows), tcpFlow("172.20.36.14", "172.31.2.45", 17652, 2), ctHWMACs,
			results.VerdictSoftware, []string{"2 tracked in software"}},
		{"software flowtable [OFFLOAD] is not hardware",
			ctEvidence(ctFile(t, "sw/proc-offload-flowtable-2018.txt"), nil, hwFlows), tcpFlow("10.141.10.2", "147.75.205.195", 443, 1), ctHWMACs,
			results.VerdictSoftware, []string{"[OFFLOAD]: the kernel's software flowtable"}},
		{"lab: the userspace datapath's conntrack is software",
			ctEvidence(ctFile(t, "ovs/proc-nf_conntrack-hv.txt"), ctFile(t, "ovs/dump-conntrack-tcp.txt"), ctFile(t, "ovs/dpctl-flows-tcp-m.txt")),
			tcpFlow("198.18.212.1", "198.18.212.2", 5201, 5), ctLabMACs,
			results.VerdictSoftware, []string{"OVS's userspace conntrack", "holds 5 live connections of the run's ports (it opened 5)", "the kernel's table none"}},
		{"kernel table empty on a kernel datapath: read in the wrong place",
			ctEvidence(nil, ctFile(t, "ovs/dump-conntrack-tcp.txt"), hwFlows), tcpFlow("198.18.212.1", "198.18.212.2", 5201, 5), ctHWMACs,
			results.VerdictInconclusive, []string{"not OVS's userspace one"}},
		{"noop firewall: hardware entries, but the pair's flows never cross ct(",
			ctEvidence(hwTable, nil, readTestdata(t, "sw/dpctl-tcp-all-1.txt")), tcpFlow("1.1.1.17", "1.1.1.16", 5001, 2), swMACs,
			results.VerdictInconclusive, []string{"port_security is true but none of the pair's", "no ct( action", "no proof of conntrack offload"}},
		{"the table could not be read",
			func() []EvidenceFile {
				ev := ctEvidence(nil, nil, hwFlows)
				ev[0].ExitCode, ev[0].Stderr = 127, []byte("sh: 1: conntrack: not found\n")
				return ev
			}(), tcpFlow("1.1.1.17", "1.1.1.16", 5001, 2), ctHWMACs,
			results.VerdictInconclusive, []string{"exited 127", "conntrack: not found"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := JudgeConntrack(tc.ev, tc.flows, tc.macs)
			if c.Name != results.CheckConntrack || c.Verdict != tc.want {
				t.Fatalf("got %s %s (%s), want %s", c.Name, c.Verdict, c.Reason, tc.want)
			}
			for _, r := range tc.reasons {
				if !strings.Contains(c.Reason, r) {
					t.Errorf("reason %q lacks %q", c.Reason, r)
				}
			}
			if len(c.Evidence) != 3 || len(c.Basis) == 0 {
				t.Errorf("evidence %d files, basis %q: want the three reads and a basis", len(c.Evidence), c.Basis)
			}
		})
	}
}

func TestCTStagesAndModeFinding(t *testing.T) {
	parse := func(b []byte) []DpctlFlow {
		f, err := ParseDpctl(b)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	hw := parse(readTestdata(t, "pipeline/dpctl-ct-offloaded-1.txt"))
	lab := parse(ctFile(t, "ovs/dpctl-flows-tcp-m.txt"))
	noCT := parse(readTestdata(t, "sw/dpctl-tcp-all-1.txt"))

	if pair, ct := CTStages(hw, ctHWMACs); len(pair) != 4 || len(ct) != 2 {
		t.Errorf("tc pipeline: got %d flows of the pair, %d through ct(; want 4 and 2", len(pair), len(ct))
	}
	// The lab: two pre-ct flows (eth wildcarded, printed), the post-ct
	// ones (one ct(commit)); ARP between the pair, no multicast.
	if pair, ct := CTStages(lab, ctLabMACs); len(pair) != 6 || len(ct) != 3 {
		t.Errorf("userspace pipeline: got %d flows of the pair, %d through ct(; want 6 and 3", len(pair), len(ct))
	}
	if pair, ct := CTStages(noCT, swMACs); len(pair) == 0 || len(ct) != 0 {
		t.Errorf("no port security: got %d flows of the pair, %d through ct(; want some and none", len(pair), len(ct))
	}
	if pair, _ := CTStages(hw, swMACs); len(pair) != 0 {
		t.Errorf("other guests' flows counted as the pair's: %d", len(pair))
	}

	for _, tc := range []struct {
		name  string
		on    bool
		flows map[string][]DpctlFlow
		macs  []string
		want  []string // substrings; none: the empty finding
	}{
		{"on, ct( on both", true, map[string][]DpctlFlow{"cmp-1": hw, "cmp-2": hw}, ctHWMACs, nil},
		{"on, ct( on one hypervisor is enough", true, map[string][]DpctlFlow{"cmp-1": hw, "cmp-2": nil}, ctHWMACs, nil},
		{"on, no ct( anywhere: the noop driver", true, map[string][]DpctlFlow{"cmp-1": noCT, "cmp-2": noCT}, swMACs,
			[]string{"data_port.port_security is true", "on cmp-1, cmp-2", "did not take effect", "no proof of conntrack offload"}},
		{"off, no ct(", false, map[string][]DpctlFlow{"cmp-1": noCT}, swMACs, nil},
		{"off, ct( present", false, map[string][]DpctlFlow{"cmp-1": lab, "cmp-2": noCT}, ctLabMACs,
			[]string{"data_port.port_security is false", "cmp-1 (3 of 6 flows)", "did not measure the path without security groups"}},
		{"no flow of the pair: nothing to say", true, map[string][]DpctlFlow{"cmp-1": hw}, swMACs, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ModeFinding(tc.on, tc.flows, tc.macs)
			if len(tc.want) == 0 {
				if got != "" {
					t.Fatalf("got %q, want none", got)
				}
				return
			}
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("finding %q lacks %q", got, w)
				}
			}
		})
	}
}

// TestReadConntrack: one read of each table and of the flows; a transport
// failure names the check and the hypervisor.
func TestReadConntrack(t *testing.T) {
	hv := &fakeRunner{results: map[string][]remote.Result{
		conntrack.ReadCommand:  {ok(ctFile(t, "hw/proc-hw-offload-mlx5-2020.txt"))},
		conntrack.DPCtlCommand: {ok(nil)},
		DpctlFlowsCommand:      {ok(readTestdata(t, "pipeline/dpctl-ct-offloaded-1.txt"))},
	}}
	ev, err := ReadConntrack(context.Background(), hv)
	if err != nil {
		t.Fatal(err)
	}
	if len(ev) != 3 || strings.Join(hv.calls, "|") != conntrack.ReadCommand+"|"+conntrack.DPCtlCommand+"|"+DpctlFlowsCommand {
		t.Fatalf("ran %q, %d files", hv.calls, len(ev))
	}
	if c := JudgeConntrack(ev, tcpFlow("1.1.1.17", "1.1.1.16", 5001, 2), ctHWMACs); c.Verdict != results.VerdictOffloaded {
		t.Errorf("got %s: %s", c.Verdict, c.Reason)
	}
	hv.err = errors.New("connection lost")
	if _, err := ReadConntrack(context.Background(), hv); err == nil || !strings.Contains(err.Error(), "conntrack check on fake-hv") {
		t.Errorf("transport failure: got %v", err)
	}
}

// TestExpectPathConntrack: the conntrack check, when the window ran it
// (port security on), counts like the four: an asap2 run whose kernel
// table shows a connection in software fails naming it, a noop firewall's
// inconclusive one too, and a baseline run may rest on it.
func TestExpectPathConntrack(t *testing.T) {
	four := func(v results.Verdict) []Check {
		var cs []Check
		for _, n := range results.AllChecks {
			cs = append(cs, Check{Name: n, Verdict: v, Reason: "r", Flow: "tcp", Host: "cmp-1"})
		}
		return cs
	}
	hwTable := ctFile(t, "hw/proc-hw-offload-mlx5-2020.txt")
	flows := tcpFlow("1.1.1.17", "1.1.1.16", 5001, 2)
	hw := JudgeConntrack(ctEvidence(hwTable, nil, readTestdata(t, "pipeline/dpctl-ct-offloaded-1.txt")), flows, ctHWMACs)
	if err := ExpectPath(results.PathASAP2, append(four(results.VerdictOffloaded), hw)); err != nil {
		t.Errorf("asap2, conntrack offloaded: %v", err)
	}
	sw := JudgeConntrack(ctEvidence(ctFile(t, "sw/proc-offload-flowtable-2018.txt"), nil, readTestdata(t, "pipeline/dpctl-ct-offloaded-1.txt")),
		tcpFlow("10.141.10.2", "147.75.205.195", 443, 1), ctHWMACs)
	err := ExpectPath(results.PathASAP2, append(four(results.VerdictOffloaded), sw))
	if err == nil || !strings.Contains(err.Error(), "1 of 5 checks disagree") || !strings.Contains(err.Error(), "conntrack: software") {
		t.Errorf("asap2, conntrack in the software flowtable: got %v", err)
	}
	noop := JudgeConntrack(ctEvidence(hwTable, nil, readTestdata(t, "sw/dpctl-tcp-all-1.txt")), flows, swMACs)
	err = ExpectPath(results.PathASAP2, append(four(results.VerdictOffloaded), noop))
	if err == nil || !strings.Contains(err.Error(), "conntrack: inconclusive") || !strings.Contains(err.Error(), "did not take effect") {
		t.Errorf("asap2, noop firewall: got %v", err)
	}
	if err := ExpectPath(results.PathBaseline, append(four(results.VerdictInconclusive), sw)); err != nil {
		t.Errorf("baseline resting on the conntrack check: %v", err)
	}
}
