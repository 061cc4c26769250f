package faultlab

import (
	"os"
	"reflect"
	"strings"
	"testing"
	"time"
)

// testdata/openstack-batch-server-flavor.json was recorded on the lab with
//
//	printf 'server list -f json\nflavor list -f json\n' | OS_CLOUD=asap2lab-admin openstack
//
// (python-openstackclient 6.0 from Debian 12) while fault-matrix rows ran:
// an empty server list, then the flavors (three runs' "-faults" flavors).
func TestParseListingsRecordedBatch(t *testing.T) {
	raw, err := os.ReadFile("testdata/openstack-batch-server-flavor.json")
	if err != nil {
		t.Fatal(err)
	}
	cmds := []string{"server list", "flavor list --all"}
	got, err := ParseListings(raw, cmds, "20261202t100335-d2cc")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"flavor asap2e2e-20261202t100335-d2cc-faults (889379ce-ced2-423a-b355-522b02840ce5)"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ParseListings = %v, want %v", got, want)
	}
	if got, _ := ParseListings(raw, cmds, "20991231t000000-0000"); len(got) != 0 {
		t.Errorf("another run id matched %v", got)
	}
}

func TestParseListingsCountsListings(t *testing.T) {
	if _, err := ParseListings([]byte("[]\n"), []string{"server list", "port list"}, "x"); err == nil || !strings.Contains(err.Error(), "1 listings for 2 commands") {
		t.Errorf("a missing listing gave %v", err)
	}
	if _, err := ParseListings([]byte("[]\n[]\n"), []string{"server list"}, "x"); err == nil || !strings.Contains(err.Error(), "more listings") {
		t.Errorf("an extra listing gave %v", err)
	}
	// The CLI's batch mode prints an error as text where a listing should be.
	if _, err := ParseListings([]byte("[]\nopenstack: 'x' is not an openstack command\n"), []string{"server list", "port list"}, "x"); err == nil {
		t.Error("text instead of JSON was accepted")
	}
}

func TestSetCreatesNestedKeys(t *testing.T) {
	cfg := map[string]any{"run": map[string]any{"name_prefix": "asap2e2e"}}
	Set(cfg, "run.keep_topology", true)
	Set(cfg, "intervals.ssh_ready.timeout", "10s")
	want := map[string]any{
		"run":       map[string]any{"name_prefix": "asap2e2e", "keep_topology": true},
		"intervals": map[string]any{"ssh_ready": map[string]any{"timeout": "10s"}},
	}
	if !reflect.DeepEqual(cfg, want) {
		t.Errorf("Set gave %v, want %v", cfg, want)
	}
}

func TestExcerpt(t *testing.T) {
	log := "2026-12-02T10:10:26Z run x: artifacts in /out/iperf3-busy/x\n" +
		"2026-12-02T10:10:26Z TCP 1 stream (-P1) repeat 1 FAILED: iperf3 run tcp-p1: port 5201: iperf3 reported: the server is busy running a test. try again later\n"
	got := Excerpt(log, `iperf3 reported: .*server is busy`, 0, 200)
	if got != "…iperf3 reported: the server is busy running a test. try again later" {
		t.Errorf("Excerpt = %q", got)
	}
	if got := Excerpt(log, `FAILED`, 1000, 40); got != "TCP 1 stream (-P1) repeat 1 FAILED: iper…" {
		t.Errorf("Excerpt with context = %q (want the line from its start, timestamp dropped, cut to 40)", got)
	}
	if got := Excerpt(log, `nothing like this`, 10, 10); got != "" {
		t.Errorf("no match gave %q", got)
	}
}

// testdata/harness-port-deleted.log is the whole harness.log of the
// datapath/port-deleted row on the lab (2026-12-02): the receiving guest's
// data port was deleted at 16:04:08 (the row's clock), the profile failed
// at 16:04:50.
func TestFirstLogLineRecordedPortDeleted(t *testing.T) {
	raw, err := os.ReadFile("testdata/harness-port-deleted.log")
	if err != nil {
		t.Fatal(err)
	}
	fault := time.Date(2026, 12, 2, 16, 4, 8, 0, time.UTC)
	at, text, ok := FirstLogLine(string(raw), fault, `FAILED`)
	if !ok {
		t.Fatal("no FAILED line found after the fault")
	}
	if got := at.Sub(fault).Round(time.Millisecond); got != 42239*time.Millisecond {
		t.Errorf("fault to failure = %s, want 42.239s", got)
	}
	if !strings.HasPrefix(text, "TCP 1 stream (-P1) repeat 1 FAILED: iperf3 run tcp-p1:") {
		t.Errorf("line text = %q (want it without its timestamp)", text)
	}
	// A line before since does not count, however well it matches.
	if _, _, ok := FirstLogLine(string(raw), fault, `TCP 1 stream \(-P1\), repeat 1/1: 40s`); ok {
		t.Error("the progress line of 16:03:40 was found after 16:04:08")
	}
	if at, _, ok := FirstLogLine(string(raw), time.Time{}, `TCP 1 stream \(-P1\), repeat 1/1: 40s`); !ok || at.Format("15:04:05.000") != "16:03:40.080" {
		t.Errorf("progress line at %s, %v", at, ok)
	}
	if _, text, _ := FirstLogLine(string(raw), fault, `^after the window:`); !strings.Contains(text, "(1017238c-6443-498e-9ef6-86ea3ea98830) no longer exists") {
		t.Errorf("after-the-window line = %q", text)
	}
	if _, _, ok := FirstLogLine("no stamp FAILED\n2026-12-02T16:04:50Z", time.Time{}, `FAILED`); ok {
		t.Error("a line without a timestamp (or a stamp without text) matched")
	}
}

// The deleted port's own delete in teardown is done (404), not a failure;
// testdata/harness-teardown-sigterm.log holds the teardown lines of the
// signal/teardown-SIGTERM row (lab, 2026-12-02), one delete cut short.
func TestTeardownFailuresRecorded(t *testing.T) {
	raw, err := os.ReadFile("testdata/harness-port-deleted.log")
	if err != nil {
		t.Fatal(err)
	}
	if got := TeardownFailures(string(raw)); len(got) != 0 {
		t.Errorf("teardown of the port-deleted run has failures %q", got)
	}
	raw, err = os.ReadFile("testdata/harness-teardown-sigterm.log")
	if err != nil {
		t.Fatal(err)
	}
	got := TeardownFailures(string(raw))
	if len(got) != 1 || !strings.Contains(got[0], "delete server asap2e2e-20261202t151421-c410-vm0 (3ebdeb2b-88c7-469f-83a9-98c7ae2a31ba): delete server") {
		t.Errorf("TeardownFailures = %q, want the one cut-short server delete", got)
	}
}

// testdata/ss-root-harness-pid440.txt and ss-hv1-frozen-row.txt were saved
// by the hypervisor/ssh-frozen-in-checks row on the lab (2026-12-02):
// `ss -tnp state established` in the root namespace, where perf.test pid
// 440 (this row's harness) and pid 666 (another row's) ran, and inside
// asap2lab-hv1 (compute1, 198.18.0.11), where sshd pid 877 served pid 440.
func TestSSHDServingRecorded(t *testing.T) {
	root, err := os.ReadFile("testdata/ss-root-harness-pid440.txt")
	if err != nil {
		t.Fatal(err)
	}
	hv, err := os.ReadFile("testdata/ss-hv1-frozen-row.txt")
	if err != nil {
		t.Fatal(err)
	}
	pids, conns := SSHDServing(string(root), string(hv), 440, "198.18.0.11")
	if !reflect.DeepEqual(pids, []int{877}) || !reflect.DeepEqual(conns, []string{"198.18.0.1:58582"}) {
		t.Errorf("SSHDServing = %v %v, want [877] [198.18.0.1:58582]", pids, conns)
	}
	// Another harness, or another hypervisor's address: nothing to stop.
	if pids, _ := SSHDServing(string(root), string(hv), 666, "198.18.0.11"); len(pids) != 0 {
		t.Errorf("pid 666's sessions on compute1 gave %v", pids)
	}
	if pids, _ := SSHDServing(string(root), string(hv), 440, "198.18.0.12"); len(pids) != 0 {
		t.Errorf("pid 440's compute2 connection matched sshd %v of compute1", pids)
	}
	socks := ParseSS(string(hv))
	if len(socks) != 20 {
		t.Errorf("parsed %d sockets of compute1, want 20 (header skipped)", len(socks))
	}
}

// Other forms of `ss -tnp` output: the header and first two lines were
// recorded in asap2lab-hv1 without a state filter (State column), while an
// ssh client of this machine held a session (2026-12-02); the last two are
// written by hand: two sshd processes sharing one socket (a privilege-
// separated session) and IPv4-mapped IPv6 addresses without processes.
func TestParseSSForms(t *testing.T) {
	out := "State Recv-Q Send-Q Local Address:Port  Peer Address:Port Process\n" +
		"ESTAB 0      0        198.18.0.11:22      198.18.0.1:42690 users:((\"sshd\",pid=28084,fd=4))\n" +
		"ESTAB 0      0          127.0.0.1:6633     127.0.0.1:40634 users:((\"neutron-openvsw\",pid=21214,fd=17))\n" +
		"ESTAB 0      0        198.18.0.11:22      198.18.0.1:42700 users:((\"sshd\",pid=3001,fd=4),(\"sshd\",pid=3002,fd=4))\n" +
		"ESTAB 0      0      [::ffff:198.18.0.11]:22 [::ffff:198.18.0.1]:42710\n"
	got := ParseSS(out)
	want := []SockLine{
		{Local: "198.18.0.11:22", Peer: "198.18.0.1:42690", PIDs: []int{28084}, Comms: []string{"sshd"}},
		{Local: "127.0.0.1:6633", Peer: "127.0.0.1:40634", PIDs: []int{21214}, Comms: []string{"neutron-openvsw"}},
		{Local: "198.18.0.11:22", Peer: "198.18.0.1:42700", PIDs: []int{3001, 3002}, Comms: []string{"sshd", "sshd"}},
		{Local: "[::ffff:198.18.0.11]:22", Peer: "[::ffff:198.18.0.1]:42710"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ParseSS =\n%+v\nwant\n%+v", got, want)
	}
	root := "0 0 198.18.0.1:42700 198.18.0.11:22 users:((\"perf.test\",pid=9,fd=7))\n"
	if pids, _ := SSHDServing(root, out, 9, "198.18.0.11"); !reflect.DeepEqual(pids, []int{3001, 3002}) {
		t.Errorf("both sshd of one connection: got %v", pids)
	}
}

// testdata/commands-hypervisor-frozen.jsonl: the entries of the
// hypervisor/ssh-frozen-in-checks row's commands.jsonl (lab, 2026-12-02)
// for compute1, whose sshd was stopped at 16:05:44.710, and two of
// compute2's; stdout and stderr cut to 200 bytes each.
func TestFailedCommandsRecorded(t *testing.T) {
	raw, err := os.ReadFile("testdata/commands-hypervisor-frozen.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	freeze := time.Date(2026, 12, 2, 16, 5, 44, 710_000_000, time.UTC)
	got := FailedCommands(raw, "hypervisor compute1 ", freeze)
	if len(got) != 7 {
		t.Fatalf("%d failed commands on compute1, want 7 (3 kills, 4 checks' commands)", len(got))
	}
	for i := 1; i < len(got); i++ {
		if got[i].End.Before(got[i-1].End) {
			t.Errorf("not ordered by end: %s after %s", got[i].End, got[i-1].End)
		}
	}
	if !strings.HasPrefix(got[0].Cmd, "kill -s TERM -- -1028") || got[0].End.Sub(freeze).Round(time.Millisecond) != 14511*time.Millisecond {
		t.Errorf("first = %q at +%s", got[0].Cmd, got[0].End.Sub(freeze))
	}
	last := got[len(got)-1]
	if !strings.HasPrefix(last.Cmd, "timeout -s INT 5s tcpdump") || last.End.Sub(freeze).Round(100*time.Millisecond) != 68600*time.Millisecond {
		t.Errorf("last = %q at +%s", last.Cmd, last.End.Sub(freeze))
	}
	if n := len(FailedCommands(raw, "hypervisor compute2 ", time.Time{})); n != 0 {
		t.Errorf("compute2 answered every command, got %d failed", n)
	}
	if n := len(FailedCommands(raw, "hypervisor compute1 ", last.End.Add(time.Millisecond))); n != 0 {
		t.Errorf("%d failed after the last one ended", n)
	}
}

func TestFirstMatchAndExplanationRecorded(t *testing.T) {
	raw, err := os.ReadFile("testdata/harness-port-deleted.log")
	if err != nil {
		t.Fatal(err)
	}
	want := `"iperf3 -c 198.18.10.13 -p 5201 -J --get-server-output -t 40 …" did not finish within 1m10s (iperf3 -t 40s + -O 0s + the iperf_server interval 30s)`
	if got := FirstMatch(string(raw), ReBoundSaid); got != want {
		t.Errorf("FirstMatch = %q\nwant %q", got, want)
	}
	// A long command (recorded in the hypervisor row's console) is cut;
	// an escaped quote inside it does not end it.
	long := `"timeout -s INT 5s tcpdump -nn -e -tt -l -i rep8502cfde-31 -c 10000 '((ether src fa:16:3e:03:6c:24 and ether dst fa:16:3e:af:b6:f8))'" did not finish within 20s (offload.capture_window + intervals.command) and was killed`
	if got := FirstMatch(long, ReBoundSaid); got != `"timeout -s INT 5s tcpdump -nn -e -tt -l -i rep8502cfde-31 -c…" did not finish within 20s (offload.capture_window + intervals.command)` {
		t.Errorf("long command: %q", got)
	}
	if got := FirstMatch(`x: "sh -c \"sleep 9\"" did not finish within 2s (intervals.command) and`, ReBoundSaid); got != `"sh -c \"sleep 9\"" did not finish within 2s (intervals.command)` {
		t.Errorf("escaped quotes: %q", got)
	}
	if got := FirstMatch("nothing here", ReBoundSaid); got != "" {
		t.Errorf("no match gave %q", got)
	}
	if got := Explanation(string(raw), "window"); got != "after the window: data port …-vm0-data (1017238c-6443-498e-9ef6-86ea3ea98830) no longer exists; iperf3 client on …-vm1 stopped receiving at 16:04:08" {
		t.Errorf("Explanation = %q", got)
	}
	if got := Explanation("2026-12-02T16:04:50Z TCP FAILED\n", "window"); got != "" {
		t.Errorf("no explanation gave %q", got)
	}
}

// testdata/harness-concurrent-a.log is the harness.log of one run of the
// concurrent/two-runs row (lab, 2026-12-02): evidence flows from 16:08:51,
// the tcp-p1 window's result at 16:09:46.
func TestTrafficSpanRecorded(t *testing.T) {
	for _, c := range []struct {
		file     string
		from, to string
	}{
		{"testdata/harness-concurrent-a.log", "16:08:51.963", "16:09:46.732"},
		{"testdata/harness-port-deleted.log", "16:03:40.080", "16:04:50.239"}, // a window only, ending in FAILED
	} {
		raw, err := os.ReadFile(c.file)
		if err != nil {
			t.Fatal(err)
		}
		from, to, ok := TrafficSpan(string(raw))
		if !ok || from.Format("15:04:05.000") != c.from || to.Format("15:04:05.000") != c.to {
			t.Errorf("%s: TrafficSpan = %s–%s (%v), want %s–%s", c.file, from.Format("15:04:05.000"), to.Format("15:04:05.000"), ok, c.from, c.to)
		}
	}
	if _, _, ok := TrafficSpan("2026-12-02T16:04:50Z waiting for SSH on guest x\n"); ok {
		t.Error("a log without traffic has a span")
	}
}

// testdata/harness-network-cut.log is the harness.log of the
// datapath/network-cut row on the lab (2026-12-02, after the harness gave
// iperf3 its own guards): the cut at 16:29:59, iperf3's own error 5 s later.
func TestGuardFailureRecordedNetworkCut(t *testing.T) {
	raw, err := os.ReadFile("testdata/harness-network-cut.log")
	if err != nil {
		t.Fatal(err)
	}
	why := FirstMatch(string(raw), `iperf3 reported: [^;\n]*|`+ReBoundSaid)
	if why != "iperf3 reported: unable to write to stream socket: Connection timed out" {
		t.Errorf("why = %q", why)
	}
	at, _, ok := FirstLogLine(string(raw), time.Date(2026, 12, 2, 16, 29, 59, 0, time.UTC), `FAILED`)
	if !ok || at.Format("15:04:05.000") != "16:30:04.493" {
		t.Errorf("FAILED at %s (%v)", at.Format("15:04:05.000"), ok)
	}
	if got := Explanation(string(raw), "window"); got != "after the window: servers ACTIVE on their hosts, ports ACTIVE and bound, both guests answer SSH; iperf3 client on …-vm1 stopped receiving at 16:29:59" {
		t.Errorf("Explanation = %q", got)
	}
}

// testdata/harness-guest-stopped.log and console-guest-stopped-failed.txt
// (the [FAILED] line of its console) are from the guest/dies-in-ssh-wait
// row on the lab (2026-12-02): guest 1 stopped while the harness waited
// up to 1m for its SSH.
func TestSSHWaitFailureRecorded(t *testing.T) {
	raw, err := os.ReadFile("testdata/harness-guest-stopped.log")
	if err != nil {
		t.Fatal(err)
	}
	want := "after the wait: server …-vm1 (259250c2-a6d7-48fb-b686-02df4dab1394) is SHUTOFF; guest …-vm1 does not answer on its management address 198.19.128.163:22: dial tcp 198.19.128.163:22: connect: no route to host"
	if got := Explanation(string(raw), "wait"); got != want {
		t.Errorf("Explanation = %q\nwant %q", got, want)
	}
	if got := Explanation(string(raw), "window"); got != "" {
		t.Errorf("a run without a window has a window explanation %q", got)
	}
	console, err := os.ReadFile("testdata/console-guest-stopped-failed.txt")
	if err != nil {
		t.Fatal(err)
	}
	got := FirstMatch(string(console), `not reachable within \S+ \([^)]*\)(: [^;]*)?`)
	if got != "not reachable within 1m0s (8 attempts, every 2s): connecting to 198.19.128.163:22: dial tcp 198.19.128.163:22: i/o timeout" {
		t.Errorf("FirstMatch = %q", got)
	}
}

// OpenSSH 10.0 (the Epoxy lab's Debian 13 root) serves each connection in
// "sshd-session" processes: recorded by the fault matrix's
// hypervisor/ssh-frozen-in-checks row on LAB_RELEASE=epoxy (2026-12-03),
// `ss -tnp state established` on the host, where the row's harness was pid
// 16575, and inside asap2lab-hv1. The row failed there with "no sshd in
// asap2lab-hv1 serves the harness" while the rule knew only "sshd".
func TestSSHDServingOpenSSH10(t *testing.T) {
	root, err := os.ReadFile("testdata/ss-root-epoxy-harness-pid16575.txt")
	if err != nil {
		t.Fatal(err)
	}
	hv, err := os.ReadFile("testdata/ss-hv1-epoxy-openssh10.txt")
	if err != nil {
		t.Fatal(err)
	}
	pids, conns := SSHDServing(string(root), string(hv), 16575, "198.18.0.11")
	if !reflect.DeepEqual(pids, []int{17438, 17442}) || !reflect.DeepEqual(conns, []string{"198.18.0.1:34964"}) {
		t.Errorf("SSHDServing = %v %v, want [17438 17442] [198.18.0.1:34964]", pids, conns)
	}
	// The other rows' harnesses (pids 15124, 15129) have sessions there too: not this one's.
	if pids, _ := SSHDServing(string(root), string(hv), 15124, "198.18.0.11"); !reflect.DeepEqual(pids, []int{15718, 15722}) {
		t.Errorf("pid 15124's sessions: %v, want [15718 15722]", pids)
	}
}

// api.log as e2e/cloud's LogTransport writes it (a line when the answer
// came, with how long it took): a subnet create held across a 25 s freeze,
// a request answered before it, one after it, an error that waited through
// it, and another service's request.
func TestInFlight(t *testing.T) {
	log := `2026-12-05T10:00:01.000Z cloud: POST http://198.18.0.1:9696/v2.0/networks body {"network":{}} -> 201 Created in 300ms
2026-12-05T10:00:27.400Z cloud: POST http://198.18.0.1:9696/v2.0/subnets body {"subnet":{"name":"a -> b"}} -> 201 Created in 26.2s
2026-12-05T10:00:00.900Z cloud: GET http://198.18.0.1:8774/v2.1/servers/abc X-Openstack-Nova-Api-Version: 2.74 -> 200 OK in 1.1s
2026-12-05T10:00:29.000Z cloud: GET http://198.18.0.1:9696/v2.0/ports?name=x -> error after 27s: read tcp 198.18.0.1:40000->198.18.0.1:9696: connection reset by peer
2026-12-05T10:00:40.000Z cloud: POST http://198.18.0.1:9696/v2.0/ports -> 201 Created in 200ms
not a stamped line
`
	from := time.Date(2026, 12, 5, 10, 0, 1, 500e6, time.UTC)
	until := from.Add(25 * time.Second)
	got := InFlight(log, EndpointNeutron, from, until)
	if len(got) != 2 {
		t.Fatalf("InFlight = %+v, want the subnet create and the port list", got)
	}
	if got[0].Request != "POST http://198.18.0.1:9696/v2.0/subnets" || got[0].Outcome != "201 Created" ||
		!got[0].Start.Equal(time.Date(2026, 12, 5, 10, 0, 1, 200e6, time.UTC)) {
		t.Errorf("InFlight[0] = %+v", got[0])
	}
	if got[1].Request != "GET http://198.18.0.1:9696/v2.0/ports?name=x" || !strings.HasPrefix(got[1].Outcome, "error: read tcp") {
		t.Errorf("InFlight[1] = %+v", got[1])
	}
	if l := Longest(got); l != "GET http://198.18.0.1:9696/v2.0/ports?name=x -> error: read tcp 198.18.0.1:40000->198.18.0.1:9696: connection reset by peer in 27s" {
		t.Errorf("Longest = %q", l)
	}
	if n := InFlight(log, EndpointNova, from, until); len(n) != 0 {
		t.Errorf("Nova's request answered before the freeze counts: %+v", n)
	}
	if Longest(nil) != "" {
		t.Errorf("Longest(nil) is not empty")
	}
}
