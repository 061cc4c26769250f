package kube

import (
	"context"
	"fmt"
	"strings"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mosk-qa/asap2-e2e/e2e/config"
	"github.com/mosk-qa/asap2-e2e/e2e/remote/kubeaccess"
)

// Access is one permission a run needs: verb on resource (and
// subresource) in the namespace (the debug pods' when Debug), and why.
type Access struct {
	Verb, Resource, Subresource string
	Why                         string
	Debug                       bool
}

func (a Access) String() string {
	r := a.Resource
	if a.Subresource != "" {
		r += "/" + a.Subresource
	}
	return a.Verb + " " + r
}

// RequiredAccess is every permission a run needs in the namespace: listing
// the OVS pods and exec in them; with a debug pod, creating, reading and
// deleting it and listing its events. docs/kubernetes-rbac.yaml grants
// exactly these (a test holds the two together).
func RequiredAccess(debugPod bool) []Access {
	out := []Access{
		{Verb: "list", Resource: "pods", Why: "finding each node's OVS pod"},
		{Verb: "create", Resource: "pods", Subresource: "exec", Why: "running the hypervisor commands"},
		// The WebSocket exec is a GET, authorized as get (and from 1.30,
		// AuthorizePodWebsocketUpgradeCreatePermission, also as create);
		// the SPDY fallback is a POST, authorized as create.
		{Verb: "get", Resource: "pods", Subresource: "exec", Why: "running the hypervisor commands over WebSocket"},
	}
	if debugPod {
		out = append(out,
			Access{Verb: "create", Resource: "pods", Why: "the node debug pod (hypervisors.kubernetes.debug_image)", Debug: true},
			Access{Verb: "get", Resource: "pods", Why: "waiting for the node debug pod", Debug: true},
			Access{Verb: "delete", Resource: "pods", Why: "deleting the node debug pod", Debug: true},
			Access{Verb: "list", Resource: "events", Why: "saying why a node debug pod does not run", Debug: true},
			Access{Verb: "create", Resource: "pods", Subresource: "exec", Why: "running host tools in the node debug pod", Debug: true},
			Access{Verb: "get", Resource: "pods", Subresource: "exec", Why: "running host tools in the node debug pod over WebSocket", Debug: true},
		)
	}
	return out
}

// Preflight checks, before anything is built, what a run will need from
// the cluster, and reports every problem at once: that a credential that
// must be renewed during the run (an oidc refresh-token, an exec plugin)
// can be obtained afresh now (checkRefresh), that the credentials
// work and are allowed each of RequiredAccess (SelfSubjectAccessReview),
// that the OVS pods are there with the container, that each known
// hypervisor maps to a node with a Running OVS pod, and that admission
// accepts the debug pod (a server-side dry-run create). Each problem names
// the credentials' source, the namespace, verb or node and the key to
// change. A bearer token that expires before in.RunBudget is over is a
// warning (tokenWarning).
func (c *Cluster) Preflight(ctx context.Context, in kubeaccess.PreflightInput) kubeaccess.PreflightReport {
	r := kubeaccess.PreflightReport{Source: c.Source()}
	add := func(what, problem string) {
		r.Checks = append(r.Checks, kubeaccess.Check{What: what, Problem: problem})
	}
	if w := tokenWarning(c.Source(), c.cred, in.RunBudget, time.Now()); w != "" {
		r.Warnings = append(r.Warnings, w)
	}
	if c.cred.refreshes {
		what, problem := c.checkRefresh(ctx)
		add(what, problem)
		if problem != "" {
			return r
		}
	}
	auth := true
	for _, a := range RequiredAccess(in.DebugPod != nil) {
		ns, key := c.namespace, "hypervisors.kubernetes.namespace"
		if a.Debug {
			ns, key = c.debugNS, "hypervisors.kubernetes.debug_namespace"
		}
		if a.Debug && a.Subresource != "" && ns == c.namespace {
			continue // asked already for the OVS pods
		}
		what := fmt.Sprintf("%s in namespace %s (%s)", a, ns, a.Why)
		allowed, reason, err := c.review(ctx, ns, a)
		switch {
		case err != nil:
			add(what, fmt.Sprintf("the access review for %s failed: %v (are the credentials of %s valid? hypervisors.kubernetes.kubeconfig, context)", a, err, c.Source()))
			auth = false
		case !allowed:
			msg := fmt.Sprintf("%s may not %s in namespace %s, needed for %s", c.Source(), a, ns, a.Why)
			if reason != "" {
				msg += " (" + reason + ")"
			}
			add(what, msg+"; grant it (docs/kubernetes-rbac.yaml) or change "+key)
		default:
			add(what, "")
		}
		if !auth {
			// Credentials refused: every further call fails the same way.
			return r
		}
	}
	pods, err := c.ovsPods(ctx)
	what := fmt.Sprintf("OVS pods (namespace %s, selector %q, container %s)", c.namespace, c.selector, c.container)
	if err != nil {
		add(what, err.Error())
		return r
	}
	add(what, c.podsProblem(pods))
	for _, n := range nodesOf(pods) {
		if pod, err := c.pickPod(pods, n); err == nil {
			r.Pods = append(r.Pods, pod)
		}
	}
	var node string
	for _, t := range in.Hypervisors {
		what := t.String() + " → its node's OVS pod"
		m, err := c.matchNode(ctx, t, pods)
		if err == nil {
			var pod kubeaccess.Pod
			pod, err = c.pickPod(pods, m.Node)
			if err == nil {
				add(fmt.Sprintf("%s: node %s (%s), %s", what, m.Node, m.How, pod), "")
				if node == "" {
					node = m.Node
				}
				continue
			}
			err = fmt.Errorf("%s → node %s (%s): %w", t, m.Node, m.How, err)
		}
		add(what, err.Error())
	}
	if in.DebugPod != nil {
		if node == "" {
			if nodes := nodesOf(pods); len(nodes) > 0 {
				node = nodes[0]
			}
		}
		image := in.DebugPod.Image
		if node == "" {
			add(fmt.Sprintf("debug pod accepted by admission (dry run, namespace %s, image %s)", c.debugNS, image), "no node runs an OVS pod to try the debug pod on")
		} else {
			dp := *in.DebugPod
			dp.Node = node
			problem := ""
			if dp.Image == config.DebugImageAuto {
				pod, err := c.pickPod(pods, node)
				if err == nil {
					dp, err = autoImage(dp, pod)
				}
				if err != nil {
					problem = err.Error()
				} else {
					image = "auto → " + dp.Image + ", the host's / at " + dp.HostRoot
				}
			}
			if problem == "" {
				problem = c.dryRunDebugPod(ctx, dp, node)
			}
			what := fmt.Sprintf("debug pod accepted by admission (dry run, namespace %s, image %s)", c.debugNS, image)
			add(what+" on node "+node, problem)
		}
	}
	return r
}

// checkRefresh makes the client obtain its credential afresh, with one
// call (GET /version): an oidc auth-provider's copy holds no id-token
// (privateCopy), so the call refreshes it with the refresh-token; an exec
// plugin runs on a client's first call. A refresh-token that has expired
// or was revoked, or a plugin that needs a login, is refused now, before
// anything is built, instead of when the id-token expires mid-run.
func (c *Cluster) checkRefresh(ctx context.Context) (what, problem string) {
	what = fmt.Sprintf("credentials of %s obtained afresh (%s)", c.Source(), c.cred.what)
	if _, err := c.ServerVersion(ctx); err != nil {
		return what, fmt.Sprintf("the credentials of %s could not be obtained afresh (%s): %v; log in again and renew the kubeconfig, or use a service-account token (hypervisors.kubernetes.kubeconfig, context)",
			c.Source(), c.cred.what, err)
	}
	return what, ""
}

// review asks the API server whether the credentials may do a
// (SelfSubjectAccessReview: any authenticated user may ask about itself).
func (c *Cluster) review(ctx context.Context, ns string, a Access) (allowed bool, reason string, err error) {
	ssar := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
		ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: ns, Verb: a.Verb, Resource: a.Resource, Subresource: a.Subresource},
	}}
	cctx, cancel := c.apiCall(ctx)
	defer cancel()
	res, err := c.client.AuthorizationV1().SelfSubjectAccessReviews().Create(cctx, ssar, metav1.CreateOptions{})
	if err != nil {
		return false, "", c.apiError("access review of "+a.String(), err)
	}
	reason = res.Status.Reason
	if res.Status.EvaluationError != "" {
		reason = strings.TrimSpace(reason + " " + res.Status.EvaluationError)
	}
	return res.Status.Allowed && !res.Status.Denied, reason, nil
}

// podsProblem says what is wrong with the OVS pods as a whole: none at all,
// or pods without the configured container.
func (c *Cluster) podsProblem(pods []corev1.Pod) string {
	if len(pods) == 0 {
		return fmt.Sprintf("no pod in namespace %s matches selector %q: on MOSK with OVN the OVS runs in the ovn-controller pods (hypervisors.kubernetes.preset: ovn); else set hypervisors.kubernetes.namespace / pod_selector", c.namespace, c.selector)
	}
	var without []string
	var theirs string
	for _, p := range pods {
		has := false
		var names []string
		for _, ct := range p.Spec.Containers {
			names = append(names, ct.Name)
			has = has || ct.Name == c.container
		}
		if !has {
			without = append(without, p.Name+" (node "+p.Spec.NodeName+")")
			theirs = strings.Join(names, ", ")
		}
	}
	if len(without) == 0 {
		return ""
	}
	return fmt.Sprintf("%d of %d OVS pods have no container %s: %s; their containers: %s (hypervisors.kubernetes.container, or preset)",
		len(without), len(pods), c.container, strings.Join(without, ", "), theirs)
}

// dryRunDebugPod sends the debug pod's create with DryRun All: the API
// server runs validation and admission (PodSecurity, MKE's own) and
// stores nothing.
func (c *Cluster) dryRunDebugPod(ctx context.Context, in kubeaccess.DebugPodInput, node string) string {
	in.Node = node
	cctx, cancel := c.apiCall(ctx)
	defer cancel()
	_, err := c.client.CoreV1().Pods(c.debugNS).Create(cctx, DebugPodSpec(c.debugNS, in), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err == nil {
		return ""
	}
	kind := "host network, privileged"
	attrs := "privileged and hostNetwork"
	if in.HostRoot != "" {
		kind += ", the host's / mounted read-only"
		attrs = "privileged, hostNetwork and hostBindMounts"
	}
	err = c.apiError(fmt.Sprintf("the debug pod (%s, image %s) on node %s in namespace %s was refused", kind, in.Image, node, c.debugNS), err)
	return err.Error() + "; " + AdmissionAdvice(c.debugNS, attrs)
}

// AdmissionAdvice is what lets the node debug pod (privileged attributes
// attrs) past admission, per kind of cluster. MKE 3 has no namespace
// exemption: it grants privileged attributes selectively to non-admin user
// and service accounts ("Use admission controllers for access",
// https://docs.mirantis.com/mke/3.8/ops/deploy-apps-k8s/admission-controllers-for-access.html:
// hostIPC, hostNetwork, hostPID, hostBindMounts, privileged,
// kernelCapabilities; set in the web UI's Admin Settings > Privileges,
// https://docs.mirantis.com/msr/current/install/prepare-mke-for-msr-install.html).
// MKE 4's mke4-ucpauthz exempts users and namespaces (api.ucpauthz
// exemptUsers, exemptNamespace:
// https://docs.mirantis.com/mke4k/4.1.3/configuration/policycontroller/admission-controllers/),
// and PodSecurity exempts namespaces by their labels.
func AdmissionAdvice(ns, attrs string) string {
	return fmt.Sprintf("on MKE 3, which has no namespace exemption, an MKE admin grants the kubeconfig's user or service account the privileged attributes %s "+
		"(a selective grant: Admin Settings > Privileges, user account or service account privileges; the account must not be an admin or bound to cluster-admin); "+
		"on MKE 4, add that user (api.ucpauthz.exemptUsers) or namespace %s (api.ucpauthz.exemptNamespace) to the exemptions; "+
		"under PodSecurity, label namespace %s pod-security.kubernetes.io/enforce=privileged or put the debug pods in one that is (hypervisors.kubernetes.debug_namespace); "+
		"or leave hypervisors.kubernetes.debug_image empty if the OVS container has the host tools", attrs, ns, ns)
}
