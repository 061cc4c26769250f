// Package faults is the fault matrix of issues 4 and 14, run against the
// local lab: the compiled smoke and perf suites are started as
// subprocesses, hurt at a chosen phase (SIGINT/SIGTERM, SIGKILL, API faults
// through e2e/faultproxy, an unreachable guest, a dropped SSH connection, a
// busy iperf3 peer; and, vanish_test.go, a data port deleted or the peer's
// network cut mid-window, a hypervisor's sshd frozen during the checks, a
// guest stopped during the SSH wait, two runs at once; and, services_test.go,
// neutron-server or nova-api stopped for 25 s, a hypervisor's ovs-vswitchd
// killed mid-window, an output directory with no room), and every row ends
// with a listing by the run id from the `openstack` CLI (not from the
// harness) that must be empty, a scan for orphan iperf3/tcpdump processes,
// and a search of every file the run wrote for the credentials it was
// given. A row's fault waits for state it can observe (the harness's
// iperf3 client, a harness.log line, a held API call), never for time
// alone, so no row can lose a race with the harness it hurts.
//
// The rows are Go tests here; the driver they are written over (harness
// runs, waits, lab faults, parsers, the matrix table) is lab/faultlab, whose
// pure parts are unit-tested there. The lab's addresses and names come from
// its files (lab/harness.yaml, $LAB_STATE/clouds.yaml, $LAB_STATE/layout.yaml).
//
// The rows need the lab and take minutes, so they run only when asked:
//
//	ASAP2E2E_FAULTS=lab go test -v -timeout 40m -parallel 64 ./suites/faults
//	ASAP2E2E_FAULTS=lab go test -v -run 'TestFaults/signal' ./suites/faults
//
// or `bash suites/faults/run.sh` (writes matrix.md/matrix.json). A parallel
// row names its load (faultlab.Light or Traffic) and waits for a
// slot of that kind (lab/faultlab/slots.go): at most two traffic rows at
// once, and two light rows beside them (ASAP2E2E_FAULTS_TRAFFIC_ROWS,
// ASAP2E2E_FAULTS_LIGHT_ROWS); -parallel only has to exceed their sum. Without
// ASAP2E2E_FAULTS=lab, or when the lab does not answer, they skip and say
// why, so `go test ./...` stays lab-free.
//
// The matrix has 22 rows (issues 4, 14, 32), each a fault, a phase and what
// must follow, as subtests TestFaults/<row>; one runs alone, not in parallel:
// nova/compute-frozen stops a nova-compute that every build would meet
// (lab/faultlab's nova.go: FreezeNovaCompute stops a lab service's process
// group from its pid file, checked to be the lab's; WaitServiceUp).
package faults
