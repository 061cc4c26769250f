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
package evidence
