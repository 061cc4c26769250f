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
package faultlab
