// Package deploy holds the Kubernetes manifests that run the harness
// beside MOSK's Tempest (docs/DEPLOY.md); this test decodes every one of
// them strictly with client-go's scheme and holds them to what the harness,
// tools/image and docs/kubernetes-rbac.yaml say.
//
// The manifests: the Job, the CronJob, the Indexed Job of a sharded fleet and
// the results claim. The test holds them to plan.AfterSIGTERM (the pods'
// grace), config.ShardFromIndex (the shard of a completion index),
// docs/kubernetes-rbac.yaml and tools/image's names.
package deploy

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/mosk-qa/asap2-e2e/e2e/config"
	"github.com/mosk-qa/asap2-e2e/e2e/fleet"
	"github.com/mosk-qa/asap2-e2e/e2e/plan"
)

// strict decodes with client-go's scheme; an unknown or repeated field is
// an error, as kubectl apply --validate=strict makes it.
var strict = serializer.NewCodecFactory(scheme.Scheme, serializer.EnableStrict).UniversalDeserializer()

// decodeFile is every object of a YAML file (documents split at ---).
func decodeFile(path string) ([]runtime.Object, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var objs []runtime.Object
	for i, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(data), -1) {
		if strings.TrimSpace(regexp.MustCompile(`(?m)^\s*#.*$`).ReplaceAllString(doc, "")) == "" {
			continue
		}
		obj, _, err := strict.Decode([]byte(doc), nil, nil)
		if err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", path, i+1, err)
		}
		objs = append(objs, obj)
	}
	return objs, nil
}

// imageConsts are tools/image's constants (read from its source: it is a
// command, which no test can import).
func imageConsts(t *testing.T) map[string]string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "../tools/image/build.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	consts := map[string]string{}
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, s := range g.Specs {
			vs := s.(*ast.ValueSpec)
			for i, n := range vs.Names {
				if lit, ok := vs.Values[i].(*ast.BasicLit); ok {
					consts[n.Name] = strings.Trim(lit.Value, `"`)
				}
			}
		}
	}
	for _, k := range []string{"Repository", "UID", "Home"} {
		if consts[k] == "" {
			t.Fatalf("tools/image/build.go has no constant %s", k)
		}
	}
	return consts
}

// rbac is what docs/kubernetes-rbac.yaml grants: its ServiceAccount, and
// the Role its RoleBinding gives that account.
type rbac struct {
	account   corev1.ServiceAccount
	bound     bool // a RoleBinding gives the account the Role
	roleRules int
}

func readRBAC(t *testing.T) rbac {
	t.Helper()
	objs, err := decodeFile("../docs/kubernetes-rbac.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var r rbac
	roles := map[string]*rbacv1.Role{}
	var bindings []*rbacv1.RoleBinding
	for _, o := range objs {
		switch o := o.(type) {
		case *corev1.ServiceAccount:
			r.account = *o
		case *rbacv1.Role:
			roles[o.Namespace+"/"+o.Name] = o
		case *rbacv1.RoleBinding:
			bindings = append(bindings, o)
		}
	}
	for _, b := range bindings {
		role := roles[b.Namespace+"/"+b.RoleRef.Name]
		if b.RoleRef.Kind != "Role" || role == nil {
			continue
		}
		for _, s := range b.Subjects {
			if s.Kind == rbacv1.ServiceAccountKind && s.Name == r.account.Name && s.Namespace == r.account.Namespace {
				r.bound, r.roleRules = true, len(role.Rules)
			}
		}
	}
	if r.account.Name == "" || !r.bound || r.roleRules == 0 {
		t.Fatalf("docs/kubernetes-rbac.yaml: no ServiceAccount bound to a Role with rules (%+v)", r)
	}
	return r
}

// workload is one pod template of the manifests, with where it came from.
type workload struct {
	file, kind, namespace string
	job                   *batchv1.JobSpec
	pod                   corev1.PodSpec
}

// manifests decodes every YAML file of deploy/ strictly.
func manifests(t *testing.T) (loads []workload, pvcs map[string]*corev1.PersistentVolumeClaim) {
	t.Helper()
	files, err := filepath.Glob("*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests in deploy/: %v", err)
	}
	pvcs = map[string]*corev1.PersistentVolumeClaim{}
	for _, f := range files {
		objs, err := decodeFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if len(objs) == 0 {
			t.Errorf("%s holds no object", f)
		}
		for _, o := range objs {
			switch o := o.(type) {
			case *batchv1.Job:
				loads = append(loads, workload{f, "Job", o.Namespace, &o.Spec, o.Spec.Template.Spec})
			case *batchv1.CronJob:
				js := o.Spec.JobTemplate.Spec
				loads = append(loads, workload{f, "CronJob", o.Namespace, &js, js.Template.Spec})
				if o.Spec.ConcurrencyPolicy != batchv1.ForbidConcurrent {
					t.Errorf("%s: concurrencyPolicy %q: two nightly runs at once would share the cloud's quota and the hypervisors", f, o.Spec.ConcurrencyPolicy)
				}
			case *corev1.PersistentVolumeClaim:
				pvcs[o.Name] = o
			default:
				t.Errorf("%s: a %T, which this test does not check", f, o)
			}
		}
	}
	return loads, pvcs
}

// show is *p, or "unset".
func show[T any](p *T) string {
	if p == nil {
		return "unset"
	}
	return fmt.Sprint(*p)
}

func envOf(c corev1.Container, name string) (corev1.EnvVar, bool) {
	i := slices.IndexFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == name })
	if i < 0 {
		return corev1.EnvVar{}, false
	}
	return c.Env[i], true
}

// checkPod is every problem of one workload's pod (the invariants below).
func checkPod(w workload, r rbac, img map[string]string, pvcs map[string]*corev1.PersistentVolumeClaim) []string {
	var probs []string
	bad := func(format string, args ...any) {
		probs = append(probs, fmt.Sprintf("%s (%s): ", w.file, w.kind)+fmt.Sprintf(format, args...))
	}
	p := w.pod
	if p.ServiceAccountName != r.account.Name || w.namespace != r.account.Namespace {
		bad("runs as %s/%s, but docs/kubernetes-rbac.yaml binds its Role to %s/%s", w.namespace, p.ServiceAccountName, r.account.Namespace, r.account.Name)
	}
	if !p.HostNetwork || p.DNSPolicy != corev1.DNSClusterFirstWithHostNet {
		bad("hostNetwork %v, dnsPolicy %q: the pod reaches the cloud's endpoints and the guests as openstack-tempest-run-tests does (hostNetwork, ClusterFirstWithHostNet)", p.HostNetwork, p.DNSPolicy)
	}
	if p.RestartPolicy != corev1.RestartPolicyNever {
		bad("restartPolicy %q: a run restarted in place makes a second topology", p.RestartPolicy)
	}
	need, rule := plan.AfterSIGTERM(&config.Config{})
	if p.TerminationGracePeriodSeconds == nil || *p.TerminationGracePeriodSeconds < int64(need.Seconds()) {
		bad("terminationGracePeriodSeconds %s is shorter than a SIGTERM's teardown, %s = %s", show(p.TerminationGracePeriodSeconds), rule, need)
	}
	sc := p.SecurityContext
	uid, _ := strconv.ParseInt(img["UID"], 10, 64)
	if sc == nil || sc.RunAsUser == nil || *sc.RunAsUser != uid || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.FSGroup == nil || *sc.FSGroup != uid {
		bad("the pod's securityContext %+v: runAsNonRoot, runAsUser and fsGroup %d (the image's user; fsGroup makes the secrets readable to it)", sc, uid)
	}
	if len(p.Containers) != 1 || len(p.InitContainers) != 0 {
		bad("%d containers, %d init containers: want the harness alone", len(p.Containers), len(p.InitContainers))
		return probs
	}
	c := p.Containers[0]
	if c.Name != "harness" {
		bad("the container is %q; docs/DEPLOY.md's kubectl set image names it harness", c.Name)
	}
	ref, err := name.ParseReference(c.Image)
	if err != nil {
		bad("image %q: %v", c.Image, err)
	} else if ref.Context().RepositoryStr() != "library/"+img["Repository"] || ref.Identifier() != "VERSION" {
		bad("image %q: want %s:VERSION, the repository tools/image tags (set to REGISTRY/%s:<version> at apply)", c.Image, img["Repository"], img["Repository"])
	}
	if c.SecurityContext == nil || c.SecurityContext.ReadOnlyRootFilesystem == nil || !*c.SecurityContext.ReadOnlyRootFilesystem ||
		c.SecurityContext.AllowPrivilegeEscalation == nil || *c.SecurityContext.AllowPrivilegeEscalation {
		bad("the container's securityContext %+v: a read-only root and no privilege escalation", c.SecurityContext)
	}
	if g, ok := envOf(c, "ASAP2E2E_TERMINATION_GRACE"); !ok || p.TerminationGracePeriodSeconds == nil || g.Value != fmt.Sprintf("%ds", *p.TerminationGracePeriodSeconds) {
		bad("ASAP2E2E_TERMINATION_GRACE %q is not terminationGracePeriodSeconds (the launcher checks the config's teardown against it)", g.Value)
	}

	volumes := map[string]corev1.Volume{}
	for _, v := range p.Volumes {
		volumes[v.Name] = v
	}
	mounts := map[string]corev1.VolumeMount{} // by path
	secretMounts := map[string]string{}       // secret name → mount path
	for _, m := range c.VolumeMounts {
		mounts[m.MountPath] = m
		v, ok := volumes[m.Name]
		if !ok {
			bad("mounts %s, which is no volume", m.Name)
			continue
		}
		switch {
		case v.Secret != nil:
			secretMounts[v.Secret.SecretName] = m.MountPath
			if !m.ReadOnly {
				bad("the secret %s is mounted read-write at %s", v.Secret.SecretName, m.MountPath)
			}
			if mode := v.Secret.DefaultMode; mode == nil || *mode&0o040 == 0 || *mode&0o227 != 0 {
				bad("the secret %s's defaultMode %s: readable by the group (fsGroup), never by others, never writable", v.Secret.SecretName, show(v.Secret.DefaultMode))
			}
		case v.PersistentVolumeClaim != nil:
			if pvcs[v.PersistentVolumeClaim.ClaimName] == nil {
				bad("claims %s, which no manifest of deploy/ creates", v.PersistentVolumeClaim.ClaimName)
			}
		}
	}
	for _, s := range []string{"asap2-e2e-config", "asap2-e2e-clouds"} {
		if secretMounts[s] == "" {
			bad("does not mount the secret %s", s)
		}
	}
	for _, dir := range []string{"/tmp", img["Home"]} {
		if m, ok := mounts[dir]; !ok || volumes[m.Name].EmptyDir == nil {
			bad("no emptyDir at %s: the root filesystem is read-only", dir)
		}
	}
	if e, _ := envOf(c, "OS_CLIENT_CONFIG_FILE"); !strings.HasPrefix(e.Value, secretMounts["asap2-e2e-clouds"]+"/") {
		bad("OS_CLIENT_CONFIG_FILE %q is not in the clouds secret's mount %s", e.Value, secretMounts["asap2-e2e-clouds"])
	}

	// args: run -config FILE -out DIR SUITE, FILE in the config secret,
	// DIR the results volume, SUITE one of suites/.
	a := c.Args
	if len(a) != 6 || a[0] != "run" || a[1] != "-config" || a[3] != "-out" {
		bad("args %q: want run -config FILE -out DIR SUITE", a)
		return probs
	}
	if !strings.HasPrefix(a[2], secretMounts["asap2-e2e-config"]+"/") {
		bad("-config %s is not in the config secret's mount %s", a[2], secretMounts["asap2-e2e-config"])
	}
	if m, ok := mounts[a[4]]; !ok || volumes[m.Name].PersistentVolumeClaim == nil || m.ReadOnly {
		bad("-out %s is not the results volume, mounted writable", a[4])
	}
	if st, err := os.Stat(filepath.Join("../suites", a[5])); err != nil || !st.IsDir() || a[5] == "faults" {
		bad("suite %q is none of suites/ that make dist builds", a[5])
	}
	return probs
}

// checkShards is every problem of the fleet's Indexed Job: completions =
// parallelism = $ASAP2E2E_FLEET_SHARDS, the shard from the completion
// index (each index its own shard, every shard once), one run group per Job.
func checkShards(w workload) []string {
	var probs []string
	bad := func(format string, args ...any) {
		probs = append(probs, fmt.Sprintf("%s: ", w.file)+fmt.Sprintf(format, args...))
	}
	j, c := w.job, w.pod.Containers[0]
	if j.CompletionMode == nil || *j.CompletionMode != batchv1.IndexedCompletion || j.Completions == nil || j.Parallelism == nil {
		bad("not an Indexed Job with completions and parallelism")
		return probs
	}
	shards, _ := envOf(c, config.EnvFleetShards)
	n, err := strconv.Atoi(shards.Value)
	if err != nil || int(*j.Completions) != n || int(*j.Parallelism) != n {
		bad("completions %s, parallelism %s, $%s %q: each shard its own pod, all at once", show(j.Completions), show(j.Parallelism), config.EnvFleetShards, shards.Value)
	}
	idx, ok := envOf(c, config.EnvJobIndex)
	if !ok || idx.ValueFrom == nil || idx.ValueFrom.FieldRef == nil || idx.ValueFrom.FieldRef.FieldPath != "metadata.annotations['"+batchv1.JobCompletionIndexAnnotation+"']" {
		bad("$%s is not the pod's completion index (%+v)", config.EnvJobIndex, idx)
	}
	if _, ok := envOf(c, config.EnvFleetShard); ok {
		bad("$%s is set: it conflicts with the index's shard", config.EnvFleetShard)
	}
	seen := map[fleet.Shard]bool{}
	for k := range n {
		sh, err := config.ShardFromIndex(strconv.Itoa(k), shards.Value)
		if err != nil || sh.Index != k+1 || sh.Count != n || seen[sh] {
			bad("index %d is shard %v (%v), want %d/%d", k, sh, err, k+1, n)
		}
		seen[sh] = true
	}
	group, _ := envOf(c, config.EnvRunGroup)
	if group.ValueFrom == nil || group.ValueFrom.FieldRef == nil || group.ValueFrom.FieldRef.FieldPath != "metadata.labels['"+batchv1.ControllerUidLabel+"']" {
		bad("$%s is not the Job's uid (one group per Job, shared by its shards): %+v", config.EnvRunGroup, group)
	}
	if c.Args[len(c.Args)-1] != "fleet" {
		bad("runs suite %s, not fleet", c.Args[len(c.Args)-1])
	}
	return probs
}

func TestManifests(t *testing.T) {
	r, img := readRBAC(t), imageConsts(t)
	loads, pvcs := manifests(t)
	kinds := map[string]int{}
	for _, w := range loads {
		for _, p := range checkPod(w, r, img, pvcs) {
			t.Error(p)
		}
		sharded := w.job.CompletionMode != nil && *w.job.CompletionMode == batchv1.IndexedCompletion
		switch {
		case sharded:
			kinds["indexed"]++
			for _, p := range checkShards(w) {
				t.Error(p)
			}
		default:
			kinds[w.kind]++
			for _, e := range []string{config.EnvFleetShards, config.EnvFleetShard, config.EnvRunGroup} {
				if _, ok := envOf(w.pod.Containers[0], e); ok {
					t.Errorf("%s: a single run sets $%s", w.file, e)
				}
			}
			if w.job.BackoffLimit == nil || *w.job.BackoffLimit != 0 {
				t.Errorf("%s: backoffLimit %s: a failed run is read, not run again", w.file, show(w.job.BackoffLimit))
			}
		}
	}
	if kinds["Job"] != 1 || kinds["CronJob"] != 1 || kinds["indexed"] != 1 || len(pvcs) != 1 {
		t.Errorf("deploy/ has %v and %d claims: want one Job, one CronJob, one Indexed Job, one claim", kinds, len(pvcs))
	}
}

// The checks catch what they are for: a typo in a field, a grace shorter
// than the teardown, a secret mounted writable, a shard count that is not
// the parallelism, a shard not from the index, another service account.
func TestManifestChecksCatch(t *testing.T) {
	data, err := os.ReadFile("job.yaml")
	if err != nil {
		t.Fatal(err)
	}
	typo := strings.Replace(string(data), "terminationGracePeriodSeconds:", "terminationGracePeriodSecond:", 1)
	if _, _, err := strict.Decode([]byte(typo), nil, nil); err == nil || !strings.Contains(err.Error(), "terminationGracePeriodSecond") {
		t.Errorf("a misspelt field decoded: %v", err)
	}

	r, img := readRBAC(t), imageConsts(t)
	loads, pvcs := manifests(t)
	var single, sharded workload
	for _, w := range loads {
		if w.job.CompletionMode != nil && *w.job.CompletionMode == batchv1.IndexedCompletion {
			sharded = w
		} else if w.kind == "Job" {
			single = w
		}
	}
	if probs := checkPod(single, r, img, pvcs); len(probs) > 0 {
		t.Fatalf("job.yaml: %q", probs)
	}
	short := int64(300)
	for what, c := range map[string]struct {
		mutate func(p *corev1.PodSpec)
		want   string
	}{
		"grace":    {func(p *corev1.PodSpec) { p.TerminationGracePeriodSeconds = &short }, "shorter than a SIGTERM's teardown"},
		"writable": {func(p *corev1.PodSpec) { p.Containers[0].VolumeMounts[0].ReadOnly = false }, "mounted read-write"},
		"account":  {func(p *corev1.PodSpec) { p.ServiceAccountName = "default" }, "docs/kubernetes-rbac.yaml binds its Role"},
		"image":    {func(p *corev1.PodSpec) { p.Containers[0].Image = "tempest:VERSION" }, "the repository tools/image tags"},
		"suite":    {func(p *corev1.PodSpec) { p.Containers[0].Args[5] = "faults" }, "none of suites/"},
	} {
		w := single
		w.pod = *single.pod.DeepCopy()
		c.mutate(&w.pod)
		if probs := checkPod(w, r, img, pvcs); !slices.ContainsFunc(probs, func(p string) bool { return strings.Contains(p, c.want) }) {
			t.Errorf("%s: problems %q have none with %q", what, probs, c.want)
		}
	}

	if probs := checkShards(sharded); len(probs) > 0 {
		t.Fatalf("the Indexed Job: %q", probs)
	}
	three := int32(3)
	for what, c := range map[string]struct {
		mutate func(w *workload)
		want   string
	}{
		"parallelism": {func(w *workload) { w.job.Parallelism = &three }, "each shard its own pod"},
		"index": {func(w *workload) {
			w.pod.Containers[0].Env = slices.DeleteFunc(w.pod.Containers[0].Env, func(e corev1.EnvVar) bool { return e.Name == config.EnvJobIndex })
		}, "is not the pod's completion index"},
		"fixed shard": {func(w *workload) {
			w.pod.Containers[0].Env = append(w.pod.Containers[0].Env, corev1.EnvVar{Name: config.EnvFleetShard, Value: "1/4"})
		}, "conflicts with the index's shard"},
		"group": {func(w *workload) {
			for i, e := range w.pod.Containers[0].Env {
				if e.Name == config.EnvRunGroup {
					w.pod.Containers[0].Env[i] = corev1.EnvVar{Name: e.Name, Value: "nightly"}
				}
			}
		}, "is not the Job's uid"},
	} {
		w := sharded
		js := *sharded.job.DeepCopy()
		w.job, w.pod = &js, *sharded.pod.DeepCopy()
		c.mutate(&w)
		if probs := checkShards(w); !slices.ContainsFunc(probs, func(p string) bool { return strings.Contains(p, c.want) }) {
			t.Errorf("%s: problems %q have none with %q", what, probs, c.want)
		}
	}
}
