package harness

import (
	"slices"

	"github.com/mosk-qa/asap2-e2e/e2e/remote/kubeaccess"
	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// podReplaced is the cluster's kubeaccess.Options.Replaced: hypervisor
// rp.Hypervisor's commands moved from the OVS pod that vanished to its
// replacement. The move joins the run's history and, once the environment
// is recorded, results.json (environment.hypervisors[].pod_replacements),
// so that the file names every pod the commands ran in, not only the one
// found at connect. The moves are the run's: a fleet's pairs share its
// hypervisors, and its results file holds the environment.
func (run *Run) podReplaced(rp kubeaccess.PodReplacement) {
	run.podMu.Lock()
	if run.podMoves == nil {
		run.podMoves = map[string][]results.PodReplacement{}
	}
	run.podMoves[rp.Hypervisor] = append(run.podMoves[rp.Hypervisor], results.PodReplacement{
		From: podRef(rp.Old), To: podRef(rp.New), Node: rp.Old.Node, At: rp.At.UTC(), Reason: "pod vanished: " + rp.How,
	})
	run.podMu.Unlock()
	if run.Results == nil {
		return
	}
	if err := run.Results.Update(run.recordPodMoves); err != nil {
		run.Logf("WARNING: %s: the move from pod %s to %s is not in %s: %v", rp.Hypervisor, podRef(rp.Old), podRef(rp.New), ResultsFile, err)
	}
}

// recordPodMoves puts every move so far into the pod_replacements of r's
// hypervisors that are recorded. It runs in each update of the
// environment, so that a move told before the environment was collected,
// or while it was, is not lost.
func (run *Run) recordPodMoves(r *results.Results) {
	run.podMu.Lock()
	defer run.podMu.Unlock()
	for i := range r.Environment.Hypervisors {
		h := &r.Environment.Hypervisors[i]
		if moves := run.podMoves[h.Name]; len(moves) > 0 {
			h.PodReplacements = slices.Clone(moves)
		}
	}
}

// podRef is "<namespace>/<pod>", how results.json names a pod.
func podRef(p kubeaccess.Pod) string { return p.Namespace + "/" + p.Name }
