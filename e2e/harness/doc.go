// Package harness is the run itself, without Ginkgo: it ties configuration,
// cloud clients, the topology, SSH runners, iperf3, the offload checks and the
// results file together so that suites stay thin and tools can reuse it.
package harness
