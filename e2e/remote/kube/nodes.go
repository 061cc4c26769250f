package kube

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mosk-qa/asap2-e2e/e2e/remote/kubeaccess"
)

// LabelHostname is the node label the kubelet sets to the host's name.
const LabelHostname = "kubernetes.io/hostname"

// candidates are the names a hypervisor's node may have, in the order
// MOSK makes them likely: the service host, the hypervisor name, then the
// short forms of both (up to the first dot).
func candidates(t kubeaccess.Target) []kubeaccess.NodeMatch {
	var out []kubeaccess.NodeMatch
	add := func(name, how string) {
		name = strings.ToLower(strings.TrimSpace(name))
		if name == "" || slices.ContainsFunc(out, func(m kubeaccess.NodeMatch) bool { return m.Node == name }) {
			return
		}
		out = append(out, kubeaccess.NodeMatch{Node: name, How: how})
	}
	add(t.ServiceHost, "service host")
	add(t.Hypervisor, "hypervisor name")
	add(short(t.Hypervisor), "short hypervisor name")
	add(short(t.ServiceHost), "short service host")
	return out
}

func short(name string) string {
	if i := strings.IndexByte(name, '.'); i > 0 {
		return name[:i]
	}
	return ""
}

// MatchNode maps t to a Kubernetes node: an entry of overrides
// (hypervisors.kubernetes.node_names, by hypervisor name or service host)
// first; else the first of t's candidates that is a node running an OVS pod
// (ovsNodes, any phase: a node whose pod is being replaced is still that
// node); else the node whose kubernetes.io/hostname label is one of the
// candidates (hostnames: node name → label; nil when the nodes could not
// be listed). ok is false when nothing matches.
func MatchNode(t kubeaccess.Target, overrides map[string]string, ovsNodes []string, hostnames map[string]string) (m kubeaccess.NodeMatch, ok bool) {
	for _, key := range []string{t.Hypervisor, t.ServiceHost} {
		if n, found := overrides[key]; found && key != "" {
			return kubeaccess.NodeMatch{Node: n, How: "hypervisors.kubernetes.node_names"}, true
		}
	}
	cands := candidates(t)
	for _, c := range cands {
		if slices.Contains(ovsNodes, c.Node) {
			return c, true
		}
	}
	// A label may match several nodes only if the cluster is odd; prefer one
	// that runs an OVS pod, then the first by name.
	var byLabel []string
	for node, label := range hostnames {
		l := strings.ToLower(label)
		if slices.ContainsFunc(cands, func(c kubeaccess.NodeMatch) bool { return c.Node == l }) {
			byLabel = append(byLabel, node)
		}
	}
	sort.Slice(byLabel, func(i, j int) bool {
		ai, aj := slices.Contains(ovsNodes, byLabel[i]), slices.Contains(ovsNodes, byLabel[j])
		if ai != aj {
			return ai
		}
		return byLabel[i] < byLabel[j]
	})
	if len(byLabel) > 0 {
		return kubeaccess.NodeMatch{Node: byLabel[0], How: LabelHostname + " label"}, true
	}
	return kubeaccess.NodeMatch{}, false
}

// ovsPods lists the OVS pods of every node (the selector, no node
// filter): one call answers the mapping and the pod choice of a node.
func (c *Cluster) ovsPods(ctx context.Context) ([]corev1.Pod, error) {
	var list *corev1.PodList
	err := c.read(ctx, fmt.Sprintf("listing the OVS pods (namespace %s, selector %q)", c.namespace, c.selector), func(ctx context.Context) (err error) {
		list, err = c.client.CoreV1().Pods(c.namespace).List(ctx, metav1.ListOptions{LabelSelector: c.selector})
		return err
	})
	if err != nil {
		return nil, err
	}
	return list.Items, nil
}

// nodesOf are the nodes the pods run on, sorted, each once.
func nodesOf(pods []corev1.Pod) []string {
	var out []string
	for _, p := range pods {
		if p.Spec.NodeName != "" && !slices.Contains(out, p.Spec.NodeName) {
			out = append(out, p.Spec.NodeName)
		}
	}
	sort.Strings(out)
	return out
}

// hostnameLabels maps each node to its kubernetes.io/hostname label. It
// needs list on nodes (cluster-wide); a refusal is returned for the
// caller to name, not fatal on its own.
func (c *Cluster) hostnameLabels(ctx context.Context) (map[string]string, error) {
	var list *corev1.NodeList
	err := c.read(ctx, "listing the nodes (for their "+LabelHostname+" labels)", func(ctx context.Context) (err error) {
		list, err = c.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: LabelHostname})
		return err
	})
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, n := range list.Items {
		if l, ok := n.Labels[LabelHostname]; ok {
			out[n.Name] = l
		}
	}
	return out, nil
}

// Resolve maps t to its node and finds the node's OVS pod there, from one
// listing of the OVS pods (and of the nodes, only when no node name
// matches). When no node matches, the error lists the nodes that do run
// an OVS pod and names hypervisors.kubernetes.node_names.
func (c *Cluster) Resolve(ctx context.Context, t kubeaccess.Target) (kubeaccess.Pod, kubeaccess.NodeMatch, error) {
	pods, err := c.ovsPods(ctx)
	if err != nil {
		return kubeaccess.Pod{}, kubeaccess.NodeMatch{}, fmt.Errorf("%s: %w", t, err)
	}
	m, err := c.matchNode(ctx, t, pods)
	if err != nil {
		return kubeaccess.Pod{}, m, err
	}
	pod, err := c.pickPod(pods, m.Node)
	if err != nil {
		return kubeaccess.Pod{}, m, fmt.Errorf("%s → node %s (%s): %w", t, m.Node, m.How, err)
	}
	return pod, m, nil
}

func (c *Cluster) matchNode(ctx context.Context, t kubeaccess.Target, pods []corev1.Pod) (kubeaccess.NodeMatch, error) {
	ovsNodes := nodesOf(pods)
	if m, ok := MatchNode(t, c.nodeNames, ovsNodes, nil); ok {
		return m, nil
	}
	labels, lerr := c.hostnameLabels(ctx)
	if m, ok := MatchNode(t, c.nodeNames, ovsNodes, labels); ok {
		return m, nil
	}
	var tried []string
	for _, cd := range candidates(t) {
		tried = append(tried, cd.Node)
	}
	how := "as node names and " + LabelHostname + " labels"
	if lerr != nil {
		how = fmt.Sprintf("as node names; the %s labels could not be read: %v", LabelHostname, lerr)
	}
	running := "none"
	if len(ovsNodes) > 0 {
		running = strings.Join(ovsNodes, ", ")
	}
	return kubeaccess.NodeMatch{}, fmt.Errorf("kubernetes: %s: no Kubernetes node matches (tried %s %s); the nodes that run an OVS pod (namespace %s, selector %q): %s; map it with hypervisors.kubernetes.node_names.%s: <node>",
		t, strings.Join(tried, ", "), how, c.namespace, c.selector, running, t.Hypervisor)
}
