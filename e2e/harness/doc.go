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
//   - issue 38's evidence windows, which read the hypervisors during
//     them: rulescale.go (RunRuleScale, with flowgen.go's guest sender and
//     receiver), churn.go (RunChurn); hold.go: their hypervisors and reads;
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
// What the files hold beyond the map (the run id is fixtures.NewRunID's):
//
//   - identity.go, the run's identity (issue 37): the harness build from
//     e2e/buildinfo and run.build_id with the file; RecordServiceVersions once
//     the clients exist; the Kubernetes server's version once the cluster is
//     open (kubeaccess.Versioned); each NIC's firmware running and stored by
//     devlink dev info with the other host facts, a flash not activated warned
//     of. results.KeepIdentity keeps them through the environment's rewrites
//     of one pair and of a fleet. CollectEnvironment takes the network backend
//     from fixtures' agent list and each hypervisor's ovn-controller.
//   - preflight.go: Preflight runs before the first create, in Start for a
//     single pair and in PlanFleet for a fleet: fixtures.CheckQuota for the
//     run's pairs, and PreflightTools (over SSH each hypervisor the run may
//     use reached and probed, its connection kept for Connect; over Kubernetes
//     kubeaccess.PreflightTools on one OVS pod per image, a fleet's every
//     node's pod looked up); every problem at once, nothing created.
//   - kubehost.go (access kubernetes): each OVS container's host tools probed,
//     the node debug pod created for the missing required ones (ethtool alone
//     needs none), the commands routed; the leak check's debug pods.
//     podmoves.go: the cluster's Options.Replaced; each move to a replacement
//     OVS pod goes into results.json at once and into every later environment,
//     a fleet pair's into the fleet's run.
//   - the measurements: RunProfile (with packet rates on UDP repeats);
//     RunSearch (pps.go: one iperf3 run per e2e/ndr trial, the result into the
//     results file); RunLatency (latency.go: idle, under load, first packet;
//     results latency[], raw outputs under latency/); RunConnections
//     (connections.go: N TCP streams over ceil(N/128) iperf3 processes, with
//     port security each hypervisor's conntrack table read by
//     e2e/conntrack.Sampler in iperf3's omit period only, the per-hypervisor
//     share and the time until offloaded; results connections[], the samples
//     and the last table under connections/); RunOffloadChecks (builds the
//     run's evidence.Window: its pair, the representor and data-interface
//     lookups, artifacts dir, results file, log, the look after a failed flow;
//     times the phase). drops.go: OVS's drop coverage counters on the pair's
//     hypervisors just before and just after every window (beside the CPU
//     readings, outside the window and the fleet's barriers), their growth in
//     each repeat's ovs_drops and at the end of a failed window's error.
//   - outdir.go: CheckOutputDir at Start, run.output_dir writable with room
//     for plan.ArtifactsEstimate. The first failed write into the run
//     directory (harness.log, api.log, commands.jsonl through
//     CommandLog.SetGuard, artifacts, the results file through its
//     OutputGuard) is OutputLost: every running step's context ends with that
//     sentence (provisioning excepted: a create is never cut between request
//     and answer), later steps refuse at once, teardown and the leak check
//     write nothing else. The harness writes results and never renders them.
//   - fleet.go (issue 21): PlanFleet resolves the nodes
//     (fixtures.ResolveFleet) and plans the pairs (fleet.Plan, the shard).
//     Provision (fixtures.ProvisionFleet, VerifyFleet) makes one Pair per
//     planned pair that shares the run's clients, dialer and command log,
//     hypervisor connections, cleaner, log and output state and keeps its own
//     topology (servers reversed: the sender's guest runs the iperf3 clients).
//     Connect goes pair by pair (an unreachable pair is Broken, fatal only
//     when every pair is); CollectEnvironment runs once per node
//     (hypervisorFacts, shared with the single pair;
//     offload.ParseOtherConfig's hw-offload and tc-policy; fleetlinks.go:
//     eswitch mode, the MTUs of the representors, uplink and bond, the bond's
//     state, from one ip -j -d link show, one devlink and one
//     /proc/net/bonding read) with the drift. RunProfile is isolated or
//     concurrent (atOnce: the pairs in goroutines behind one Gate); the fleet
//     section is judged again (fleet.Rejudge) and rewritten after every pair's
//     step, with a progress line per pair; Verdict and CheckVerdict by
//     results.JudgeFleet.
//   - fleet_checks.go: RunOffloadChecks in both modes, in rounds of pairs that
//     share no node (fleet.Rounds), one round after the other, the pairs of a
//     round at once (atOnce), each flow's window opened and closed for all of
//     them by one Gate (gateBarrier, a pair's evidence.Barrier: a flow is a
//     gate round); a pair that stopped early Quits; each verdict goes on the
//     node it was taken on, and each round's pairs, windows and start skew
//     (Window.Skew against results.SkewGoal) into the fleet section after the
//     round.
//   - gate.go: a round (a profile's repeat, a checks round's flow) opens when
//     every pair is at Start (servers listening, clients built) or has left,
//     and closes when every pair is at Done (clients returned) or has left.
//     Leave returns once the round is over, so a pair's look after a failed
//     repeat or flow never falls in another pair's window; Quit: a pair takes
//     part in no further round, and returns once the rounds under way are
//     over. Each window records when each pair was let go (Window.Starts,
//     Skew). RunProfile reads the CPU before Start and after Done, and applies
//     no UDP setup retry under a gate.
//
// This package never imports Ginkgo or Gomega.
package harness
