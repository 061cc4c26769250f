package kubeaccess

import (
	"context"
	"fmt"
	"strings"

	"github.com/mosk-qa/asap2-e2e/e2e/remote"
)

// DebugImageAdvice is what to do when an OVS container lacks a host tool
// the run needs and no debug image is set.
const DebugImageAdvice = "set hypervisors.kubernetes.debug_image to an image that has them, or to auto (the host's own tools, through the OVS pod's image), and the harness runs them in a node debug pod"

// ProbedTools is what a tools probe found where it ran (offload.ToolsProbe,
// which this package does not import): the tools missing, those of them a
// run cannot go on without, and what each lacks.
type ProbedTools interface {
	Missing() []string
	MissingRequired() []string
	Why(tools []string) string
}

// ToolsProbeFunc probes the host tools where r runs (offload.ProbeTools).
type ToolsProbeFunc func(ctx context.Context, r remote.Runner) (ProbedTools, error)

// PodRunners gives a runner in a pod (the Cluster's RunnerIn).
type PodRunners interface {
	RunnerIn(hv string, pod Pod) (PodRunner, error)
}

// PreflightTools probes the host tools in one of pods per distinct image
// (every OVS pod of one image has the same programs) before anything is
// built, one Check per image. A required tool missing with no debugImage
// is a problem naming the node, the pod, the image, the other nodes that
// run it and the tools; with a debug image the check passes and says the
// tools run in the node debug pod; an optional tool missing is said.
func PreflightTools(ctx context.Context, c PodRunners, pods []Pod, debugImage string, probe ToolsProbeFunc) []Check {
	var images []string
	byImage := map[string][]Pod{}
	for _, p := range pods {
		if _, ok := byImage[p.Image]; !ok {
			images = append(images, p.Image)
		}
		byImage[p.Image] = append(byImage[p.Image], p)
	}
	var out []Check
	for _, image := range images {
		group := byImage[image]
		p := group[0]
		where := fmt.Sprintf("node %s (%s, image %s", p.Node, p, image)
		if len(group) > 1 {
			var others []string
			for _, o := range group[1:] {
				others = append(others, o.Node)
			}
			where += fmt.Sprintf(", as on nodes %s", strings.Join(others, ", "))
		}
		where += ")"
		what := "host tools in the OVS container on " + where
		r, err := c.RunnerIn(p.Node, p)
		var found ProbedTools
		if err == nil {
			found, err = probe(ctx, r)
		}
		if err != nil {
			out = append(out, Check{What: what, Problem: fmt.Sprintf("%s: %v", where, err)})
			continue
		}
		missing, required := found.Missing(), found.MissingRequired()
		switch {
		case len(required) > 0 && debugImage == "":
			out = append(out, Check{What: what, Problem: fmt.Sprintf("%s: the OVS container lacks %s; %s", where, found.Why(required), DebugImageAdvice)})
		case len(required) > 0:
			out = append(out, Check{What: fmt.Sprintf("%s: lacks %s, run in the node debug pod (debug_image %s)", what, strings.Join(missing, ", "), debugImage)})
		case len(missing) > 0:
			out = append(out, Check{What: fmt.Sprintf("%s: no %s (optional: the NIC facts are recorded as unknown)", what, strings.Join(missing, ", "))})
		default:
			out = append(out, Check{What: what + ": all there"})
		}
	}
	return out
}
