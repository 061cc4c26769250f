// Package harness is the run itself, without Ginkgo: it ties configuration,
// cloud clients, the topology, SSH runners, iperf3, the offload checks and the
// results file together so that suites stay thin and tools can reuse it.
//
// A run is a Run and its Pairs. The Run holds what all its pairs share;
// a Pair holds what is its own and reaches the rest through its run:
//
//	Run  (run.go)   config, run id, directory, cloud clients, results file,
//	                timings, hypervisor connections (SSH dialer or the
//	                Kubernetes cluster), log, output guard, cleaner, Pairs
//	Pair (pair.go)  topology, guests, directory, results file, timings,
//	                damage; a fleet's pair also its nodes, id and Broken
//	Fleet (fleet.go) a Run plus its plan: nodes, shard, planned pairs,
//	                topology and the fleet section of the results file
//
// The single-pair suites run a Run with one Pair (Start, then
// Run.ProvisionPair); the fleet suite a Fleet (Start, Run.PlanFleet, then
// Fleet.Provision: one Pair per planned pair, under pairs/pNN/).
//
// Where things are:
//   - run.go: Start (config, directory, results file, preflight), Logf,
//     ProvisionPair, Close (every pair's results file, then the run's);
//     access.go: the run's SSH dialer, Kubernetes cluster and hypervisor
//     dialling, opened once for every pair;
//     outdir.go: CheckOutputDir and the output guard (OutputLost, Failed,
//     guard: the first failed write stops every step); timing.go: Timings;
//   - preflight.go: Preflight before the first create (quotas, host tools);
//     kubehost.go: hypervisors over Kubernetes (PreflightKube, host tools,
//     the node debug pod); podmoves.go: a vanished OVS pod's replacement;
//     identity.go: the run's identity (service, cluster, firmware versions);
//   - pair.go: Pair, its Logf and artifacts; connect.go: Connect (guests,
//     data path, hypervisors), CollectEnvironment, CheckDataPath;
//     datapath.go: the data path's wait; evidence.go: the cloud's answers
//     about the pair's servers and ports before teardown;
//   - a pair's measurements: traffic.go (RunProfile; at a Gate when a
//     concurrent fleet runs it), pps.go (RunSearch), latency.go
//     (RunLatency), connections.go (RunConnections), failover.go
//     (RunFailover: the bond failover profile), checks.go
//     (RunOffloadChecks: the evidence window's input); cpu.go and drops.go
//     read the hypervisors around each window;
//   - stall.go, stall_cloud.go: the look after a failed window, and the
//     damage that refuses later ones;
//   - finish.go: ThresholdsFor (a pair's) and LeakCheck (the run's);
//   - fleet.go: PlanFleet, the fleet's Provision, Connect,
//     CollectEnvironment and RunProfile, its section and verdicts;
//     fleet_checks.go: the checks in rounds of pairs that share no node;
//     fleetlinks.go: each node's link drift; gate.go: Gate, the start
//     barrier of a concurrent fleet's windows, passed to the windows of
//     the pairs it holds together.
//
// This package never imports Ginkgo or Gomega.
package harness
