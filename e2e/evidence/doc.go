// Package evidence is the core of the proof: the evidence window. A flood
// ping between the data addresses, then a sustained TCP flow and a
// sustained UDP flow, during each of which every configured offload check
// runs on both hypervisors, the settle counted from iperf3's
// ClientsStarting; then the flow's confirmation (offload.ConfirmFlow), the
// "checks outlasted the flow" downgrade and the window run again after a UDP
// stream-setup failure. It works over remote.Runner alone: the harness
// builds a Window (config, guests, hypervisors, the lookups, the iperf3 run,
// where evidence files and verdicts go, the look after a failed flow; in a
// fleet's round of checks a Barrier, so each flow's window opens and
// closes with the other pairs' of the round and the look waits until it
// is over) and calls Run; its tests use fake runners and no harness
// Run or Pair.
//
// In detail: the sustained flows are Flows (tcp-p1, udp-b0-p1); runCheck runs
// the e2e/offload runners with their inputs. With data_port.port_security the
// window adds the conntrack check (each hypervisor's table read once with the
// checks, judged against the connections the flow's iperf3 processes opened)
// and the mode guard (offload.ModeFinding: Run's error when the pair's flows
// contradict the mode); a UDP stream-setup failure runs the window again up to
// traffic.udp_setup_retries.
//
// Window is Run's explicit input: the config, the two Guests, the hypervisor
// runners, and as funcs what belongs to the run: Representor, DataInterface,
// Iperf, NotRun, Explain, Record, Save, Logf. A Barrier has Start (before a
// flow's clients launch; the settle counted from its return), Done (once they
// returned) and Leave (before the look after a failed flow). FlowCheck;
// CheckResults (the results file's rows); Checks (for offload.ExpectPath);
// SaveIperf (raw iperf3 JSON as evidence files). The tests' fake runners are
// e2e/internal/fakeremote's.
package evidence
