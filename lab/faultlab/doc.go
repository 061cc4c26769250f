// Package faultlab is the driver of the fault matrix (suites/faults): it
// starts the compiled smoke and perf suites as subprocesses against the local
// lab, waits for what they log and do (harness.log lines, their iperf3
// processes, topology.json, results.json), hurts them through the lab (signals,
// the fault proxy, OpenFlow drops in the hypervisors' integration bridge, a
// stopped sshd) and reads what they left (commands.jsonl, harness.log, the
// openstack CLI's listing by run id, orphan processes, secrets in their
// files); it keeps the matrix's rows and writes matrix.md and matrix.json.
//
// It lives under lab/ because it is the lab's tooling, like lab/lib/hv-exec
// that it calls: everything it knows of the lab comes from the files the lab
// publishes (Load: lab/harness.yaml, $LAB_STATE/clouds.yaml and
// $LAB_STATE/layout.yaml, both written by lab/up.sh), and nothing of the
// harness imports it. The rows themselves stay Go tests in suites/faults, so
// `go test -run 'TestFaults/<row>'` and suites/faults/run.sh select them;
// the pure parts here (parsers of the harness's and tools' output, the lab's
// configuration, the matrix table) are unit-tested in `make test` with no lab.
//
// Functions that take a testing.TB fail the row that called them.
//
// Where things are:
//
//   - Load reads lab/harness.yaml, $LAB_STATE/clouds.yaml for Keystone and
//     $LAB_STATE/layout.yaml for the hypervisor namespaces, hv-exec numbers,
//     bridge, guest namespaces and the release's command prefix, through which
//     its ovs-ofctl, openstack CLI and stray iperf3 run; every problem with
//     file and key.
//   - harness runs as subprocesses: Env.Start, then Run.WaitLog,
//     WaitIperfClient, MidWindow and Wait. Each process it starts leads its
//     own process group and is recorded in Started (children.go):
//     HandleInterrupts, called first by suites/faults' TestMain, answers
//     SIGINT or SIGTERM with the signal to each group, waits up to
//     InterruptGrace for the harness's teardown (a second Ctrl-C is
//     forwarded), then sends SIGKILL to the groups left and removes the
//     generated credentials.
//   - lab faults: AddFlows and GatePort (OpenFlow drops), FreezeHypervisorSSH,
//     Occupy, FreezeService (a lab service by its pid file), KillVswitchd and
//     its Restart through lab/lib/ovs-vswitchd.sh with WaitVswitchdRecovered,
//     SmallFS.
//   - the end of every row: Ending (the openstack CLI's listing, orphans,
//     secrets), EndingRefused for a run refused before its first request; the
//     matrix: Matrix, RenderMatrix.
//   - pure parsers of harness.log, api.log (InFlight), commands.jsonl, ss
//     -tnp, the ovs-vsctl and ovs-ofctl listings and the CLI's batch output,
//     tested with recorded samples in testdata/; every wait's bound is a named
//     constant (bounds.go).
package faultlab
