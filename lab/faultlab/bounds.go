package faultlab

import "time"

// The bounds of the matrix's waits. Every wait here ends on the state it
// waits for (a harness.log line, a process, a socket, a file, the harness's
// exit) and checks it at once; a bound only stops a row whose harness never
// gets there, so it is generous: rows run four at a time on a 2-core machine
// that also runs the whole OpenStack, and a run's own intervals
// (lab/harness.yaml: server_active 3m, port_active 1m, ssh_ready 2m, delete
// 2m per resource) come before most of the states waited for.
const (
	// ReachEarlyPhase bounds reaching the phase a signal row hurts (the first
	// network, the wait for ACTIVE, the SSH wait, or, in a perf run that
	// runs no traffic before them, the checks' start) or the first server
	// create.
	ReachEarlyPhase = 6 * time.Minute
	// ReachTraffic bounds reaching what follows boot and the SSH wait: the
	// traffic window or the checks (after the environment is collected), the
	// teardown of a run whose SSH wait failed, the SSH wait through API faults
	// of 3 s each or after a server create the row held.
	ReachTraffic = 8 * time.Minute
	// ReachTeardown bounds the teardown's first delete after a SIGINT.
	ReachTeardown = 3 * time.Minute
	// ReachFirstProfile bounds a perf run's first finished profile (after
	// the checks, each profile's window and its repeats).
	ReachFirstProfile = 10 * time.Minute

	// RunToEnd bounds a whole run that fails in provisioning or the SSH
	// wait, teardown included.
	RunToEnd = 8 * time.Minute
	// RunPairToEnd bounds each of two whole perf runs side by side (checks
	// with their evidence flows, a window, teardown) on the one lab.
	RunPairToEnd = 15 * time.Minute
	// ExitAfterSignal bounds the harness's exit after SIGINT/SIGTERM: its
	// teardown of up to 12 resources, each delete waited for.
	ExitAfterSignal = 5 * time.Minute
	// ExitAfterSignalSlowAPI is ExitAfterSignal through an API that answers
	// in 3 s and fails deletes the harness retries.
	ExitAfterSignalSlowAPI = 6 * time.Minute
	// ExitAfterFault bounds the harness's exit after a fault that fails its
	// window or wait: the bound of what was running, the look after it,
	// evidence, teardown.
	ExitAfterFault = 6 * time.Minute
	// ExitAfterFrozenHypervisor is ExitAfterFault for a frozen hypervisor:
	// every command there lasts its bound plus the SSH keepalive's 60 s.
	ExitAfterFrozenHypervisor = 8 * time.Minute
	// ExitAfterDeadVswitchd is ExitAfterFault for a hypervisor whose
	// ovs-vswitchd was killed: the teardown's server delete there waits for
	// the lab driver's ovs-vsctl del-port of each of the guest's ports, 30 s
	// each (lab/guest/guestctl.py OVS_TIMEOUT), as nothing applies them.
	ExitAfterDeadVswitchd = 8 * time.Minute
	// VswitchdRecovered bounds a restarted ovs-vswitchd's hypervisor
	// working again (WaitVswitchdRecovered): the OVS agent's next loop (2 s)
	// rebuilding its bridges and syncing its tunnels over RPC, or
	// ovn-controller's reconnect (back-off up to 8 s), on a loaded machine.
	VswitchdRecovered = 2 * time.Minute
	// ServiceFrozen is how long a frozen API service stays stopped in the
	// rows that freeze one: less than the harness's bounds on an API call
	// and its waits, so the run must ride it out. Part of what the rows
	// test, not a margin.
	ServiceFrozen = 25 * time.Second
	// ServiceBackUp bounds a lab service's return to "up" in Nova's service
	// list after the matrix continued it: its next heartbeat (10 s report
	// interval) on a loaded machine.
	ServiceBackUp = 90 * time.Second
	// ExitAfterKill bounds a SIGKILLed process's exit: nothing of it runs.
	ExitAfterKill = time.Minute
	// InterruptGrace is how long a row that failed waits for its harness's
	// teardown after a SIGINT before it kills the harness (ExitAfterSignal).
	InterruptGrace = ExitAfterSignal
	// SuiteTimeout is the harness subprocess's own -test.timeout: above
	// every bound a row gives a run (RunPairToEnd).
	SuiteTimeout = 20 * time.Minute

	// Connected bounds an iperf3 client's control connection and first
	// stream after its process appeared (a loaded machine once took more
	// than 5 s).
	Connected = 2 * time.Minute
	// FaultLead is how long the iperf3 client runs, connected, before a
	// mid-window fault: inside the window, with a few seconds of traffic
	// behind it. Part of what the rows test, not a margin.
	FaultLead = 5 * time.Second
	// GuestStopped bounds a stopped guest's sshd going away after `openstack
	// server stop` answered.
	GuestStopped = 2 * time.Minute
	// SSHWaitSlack is how far past intervals.ssh_ready the harness may give
	// up a guest's SSH wait (its last attempt's own timeout and the look).
	SSHWaitSlack = 10 * time.Second
	// ToolsGone bounds the harness's iperf3 processes in the guests ending
	// after the harness exited (their remote watchdog).
	ToolsGone = 30 * time.Second

	// OccupyWithin bounds attempts to occupy the harness's iperf3 server;
	// OccupyRetry spaces them (the server may not listen yet); a stray
	// client still running OccupyHeld after its start holds the server: it
	// is longer than the client's --connect-timeout (OccupyConnectMs) plus
	// its start, after which a client that did not connect has exited.
	OccupyWithin    = 30 * time.Second
	OccupyRetry     = 250 * time.Millisecond
	OccupyHeld      = 1500 * time.Millisecond
	OccupyConnectMs = 500

	// KeystoneDial bounds the connect that tells whether the lab is up.
	KeystoneDial = 3 * time.Second
	// CLITimeout bounds one openstack CLI process (a batch of listings, a
	// token, a port delete, a server stop) against the lab's slow APIs.
	CLITimeout = 2 * time.Minute
	// HVExecTimeout bounds one command inside a hypervisor (ovs-ofctl).
	HVExecTimeout = time.Minute
	// PollEvery is how often a wait looks at the state it waits for.
	PollEvery = 250 * time.Millisecond
)
