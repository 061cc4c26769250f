// Package layers is the one statement of the tree's import rules: the layers of docs/DESIGN.md
// ("Import layers") as data. Its tests hold the code to them (`go list -json ./...`: an import this
// data does not allow fails, and so does an allowance no code uses) and DESIGN.md to them (the
// section between the markers is Render's text; `go test ./internal/layers -update` rewrites it).
// Nothing imports this package.
package layers

import (
	"fmt"
	"strings"
)

// Package is one package of the module and the project packages its non-test code imports.
type Package struct {
	Path    string   // relative to the module root: "e2e/config", "fixtures"
	Imports []string // exactly the project packages its non-test files import, each on a lower layer
	Note    string   // DESIGN.md's words after the imports: why, or what it must not import
	// OnlyImportedBy, when set, names every package that may import it (their tests included).
	OnlyImportedBy []string
	// OnlyTests: no non-test file imports it (a fake or a test helper).
	OnlyTests bool
}

// Layer is one step of the import order, bottom first.
type Layer struct {
	Packages []Package
	Note     string // said of the whole layer
}

// Module restricts which packages import an outside module (by import path prefix; the longest
// prefix that matches a path decides).
type Module struct {
	Prefix  string
	By      []string // the packages whose non-test files may import it
	TestsBy []string // the packages whose tests may import it (By's own tests included)
	Note    string
}

// Layers of the module, bottom to top: a package imports only packages of the layers below it.
var Layers = []Layer{
	{Note: "no project imports", Packages: []Package{
		{Path: "e2e/results"},
		{Path: "e2e/envinfo"},
		{Path: "e2e/conntrack"},
		{Path: "e2e/ndr"},
		{Path: "e2e/wait", Note: "the one poll, over an Interval, the type of config's named waits"},
		{Path: "e2e/internal/lateness", OnlyTests: true,
			Note: "how late the process's own timers fire: the allowance of a test that bounds an elapsed time"},
		{Path: "fixtures/fakecloud", OnlyTests: true},
		{Path: "tools/internal/cli"},
		{Path: "tools/internal/cli/clitest", OnlyTests: true},
		{Path: "internal/layers", Note: "these rules"},
	}},
	{Packages: []Package{
		{Path: "e2e/fleet", Imports: []string{"e2e/results"},
			Note: "the fleet sweep's pure logic: nodes, pairs, shards, per-node rates and outliers; no cloud, no host"},
		{Path: "e2e/buildinfo", Imports: []string{"e2e/results"},
			Note: "the harness's own version and commit (VCS stamp or -ldflags override) as the results file records it"},
	}},
	{Packages: []Package{
		{Path: "e2e/config", Imports: []string{"e2e/fleet", "e2e/results", "e2e/wait"}},
		{Path: "e2e/hostcpu", Imports: []string{"e2e/results"}, Note: "its Delta is the results file's CPU usage"},
		{Path: "e2e/history", Imports: []string{"e2e/results"}, Note: "the nightly series and change points; pure"},
	}},
	{Packages: []Package{
		{Path: "e2e/history/store", Imports: []string{"e2e/history"}, Note: "the history in SQLite (modernc.org/sqlite) or PostgreSQL (pgx)"},
		{Path: "e2e/history/store/pgtest", OnlyTests: true, Note: "a throwaway PostgreSQL server from Debian's package"},
	}},
	{Packages: []Package{
		{Path: "e2e/cloud", Imports: []string{"e2e/config", "e2e/wait"}},
		{Path: "e2e/remote", Imports: []string{"e2e/config", "e2e/wait"}},
		{Path: "e2e/faultproxy", Imports: []string{"e2e/wait"}},
	}},
	{Packages: []Package{
		{Path: "e2e/remote/kubeaccess", Imports: []string{"e2e/config", "e2e/remote", "e2e/wait"},
			Note: "what a run asks of the Kubernetes cluster (targets, pods, debug pod, preflight, sweep) and the Cluster interface remote/kube implements; no client-go"},
		{Path: "fixtures", Imports: []string{"e2e/cloud", "e2e/config", "e2e/fleet", "e2e/results", "e2e/wait"}},
		{Path: "e2e/iperf3", Imports: []string{"e2e/remote", "e2e/results", "e2e/wait"}},
		{Path: "e2e/sockperf", Imports: []string{"e2e/remote", "e2e/wait"}},
		{Path: "e2e/offload", Imports: []string{"e2e/conntrack", "e2e/remote", "e2e/results", "e2e/wait"}},
	}},
	{Packages: []Package{
		{Path: "e2e/evidence", Imports: []string{"e2e/config", "e2e/conntrack", "e2e/iperf3", "e2e/offload", "e2e/remote", "e2e/results", "e2e/wait"},
			Note: "the evidence window; not the harness, fixtures or cloud — its tests also read fixtures and fakeremote"},
		{Path: "e2e/internal/fakeremote", Imports: []string{"e2e/remote", "e2e/results", "fixtures"}, OnlyTests: true},
		{Path: "e2e/remote/kube", Imports: []string{"e2e/config", "e2e/remote", "e2e/remote/kubeaccess", "e2e/wait"},
			Note:           "client-go: kube.Open is the kubeaccess.Open the suites hand the harness",
			OnlyImportedBy: []string{"suites/perf", "suites/smoke", "suites/fleet", "tools/sweeper", "tools/kubecheck"}},
	}},
	{Packages: []Package{
		{Path: "e2e/plan", Imports: []string{"e2e/config", "e2e/evidence", "e2e/fleet", "e2e/iperf3", "e2e/results", "e2e/sockperf"},
			Note: "what a run does under a config, before anything is built: the profiles it selects, its wall-time budget, its artifacts' size; pure, so tools/budget needs no harness"},
	}},
	{Packages: []Package{
		{Path: "e2e/harness", Imports: []string{"e2e/buildinfo", "e2e/cloud", "e2e/config", "e2e/conntrack", "e2e/envinfo", "e2e/evidence", "e2e/fleet", "e2e/hostcpu",
			"e2e/iperf3", "e2e/ndr", "e2e/offload", "e2e/plan", "e2e/remote", "e2e/remote/kubeaccess", "e2e/results", "e2e/sockperf", "e2e/wait", "fixtures"},
			Note: "it writes the results file and evaluates a profile's thresholds with `results`; never the report; the fleet run (`fleet.go`, `gate.go`) plans, judges and stores with `fleet`"},
	}},
	{Packages: []Package{
		{Path: "e2e/report", Imports: []string{"e2e/fleet", "e2e/results"},
			Note:           "the renderers, here so that nothing below may import them",
			OnlyImportedBy: []string{"e2e/framework", "tools/report", "e2e/internal/families"}},
	}},
	{Packages: []Package{
		{Path: "e2e/framework", Imports: []string{"e2e/config", "e2e/harness", "e2e/iperf3", "e2e/remote/kubeaccess", "e2e/report", "fixtures"},
			Note: "it renders the reports as the run's last final step"},
		{Path: "tools/report", Imports: []string{"e2e/fleet", "e2e/report", "e2e/results", "tools/internal/cli"}},
		{Path: "tools/checkrun", Imports: []string{"e2e/offload", "e2e/remote", "e2e/results", "tools/internal/cli"}},
		{Path: "tools/history", Imports: []string{"e2e/history", "e2e/history/store", "e2e/results", "tools/internal/cli"}},
		{Path: "tools/plugcompare", Imports: []string{"e2e/results", "tools/internal/cli"}},
		{Path: "tools/evidence", Imports: []string{"e2e/config", "e2e/conntrack", "e2e/iperf3", "e2e/offload", "e2e/results", "tools/internal/cli"}},
		{Path: "tools/budget", Imports: []string{"e2e/config", "e2e/plan", "tools/internal/cli"}},
		{Path: "tools/kubecheck", Imports: []string{"e2e/config", "e2e/offload", "e2e/plan", "e2e/remote", "e2e/remote/kube", "e2e/remote/kubeaccess", "tools/internal/cli"},
			Note: "the Kubernetes preflight alone, before anything is built, with the tools probe"},
		{Path: "tools/sweeper", Imports: []string{"e2e/cloud", "e2e/config", "e2e/remote/kube", "e2e/remote/kubeaccess", "e2e/wait", "fixtures", "tools/internal/cli"},
			Note: "the node debug pods through remote/kube; no harness"},
		{Path: "tools/asap2-e2e", Imports: []string{"e2e/config", "e2e/fleet", "e2e/plan", "tools/internal/cli"},
			Note: "dist's launcher: a suite's test binary or a tool by name, execve'd"},
		{Path: "tools/image", Imports: []string{"tools/internal/cli"},
			Note: "dist/ as an OCI image, no container daemon (go-containerregistry)"},
		{Path: "lab/faultlab", Imports: []string{"e2e/faultproxy", "e2e/remote"},
			Note:           "the commands.jsonl schema from remote; lab only",
			OnlyImportedBy: []string{"suites/faults"}},
		{Path: "lab/oidc", Note: "the lab's OpenID Connect identity provider, standard library only; lab only"},
		{Path: "lab/oidc/plainclient", Note: "client-go with a kubeconfig used in place, no private copy: lab/kube/job.sh's negative; lab only"},
	}},
	{Note: "test files only: framework, harness, fixtures, ...", Packages: []Package{
		{Path: "suites/smoke"},
		{Path: "suites/perf"},
		{Path: "suites/fleet"},
		{Path: "suites/faults"},
		{Path: "e2e/internal/families", Note: "every measurement family registered in every layer (results, config, plan, history, report)"},
		{Path: "deploy", Note: "the Kubernetes manifests, decoded by its test"},
	}},
}

// Modules: who may import the heavy or framework-bound outside modules.
var Modules = []Module{
	{Prefix: "k8s.io/", By: []string{"e2e/remote/kube", "lab/oidc/plainclient"}, TestsBy: []string{"tools/sweeper", "deploy"},
		Note: "client-go and its API types: the Kubernetes transport alone (and the lab's plainclient, client-go without it); the sweeper's tests use client-go's fake clientset, deploy's its scheme"},
	{Prefix: "k8s.io/cri-streaming/", TestsBy: []string{"e2e/remote/kube"},
		Note: "the CRI streaming server that speaks the real exec protocol in process, in remote/kube's tests only"},
	{Prefix: "k8s.io/cri-api/", TestsBy: []string{"e2e/remote/kube"}, Note: "with cri-streaming"},
	{Prefix: "github.com/onsi/", By: []string{"e2e/framework"}, TestsBy: []string{"suites/perf", "suites/smoke", "suites/fleet"},
		Note: "Ginkgo and Gomega: the glue and the suites; fixtures and parsers never"},
	{Prefix: "github.com/gophercloud/", By: []string{"e2e/cloud", "fixtures", "fixtures/fakecloud"},
		TestsBy: []string{"e2e/cloud", "fixtures"},
		Note:    "the OpenStack calls: clients, the topology (the one owner of every resource call), its fake"},
	{Prefix: "modernc.org/", By: []string{"e2e/history/store"}, Note: "the pure-Go SQLite of the history's default store"},
	{Prefix: "github.com/jackc/", By: []string{"e2e/history/store"}, Note: "pgx: the history's PostgreSQL store"},
	{Prefix: "github.com/google/go-containerregistry/", By: []string{"tools/image"}, TestsBy: []string{"deploy"},
		Note: "the OCI image of dist/, built without a daemon; deploy's test parses the manifests' image references with it"},
}

// Linked restricts which builds contain an outside module at all, directly or through any chain
// of imports: a package's own build and its test binary (`go list -deps -test`). A library of
// hundreds of packages kept out of the packages most tests build keeps the cold `make test`
// short: each test binary that contains it links all of them.
type Linked struct {
	Prefix string
	By     []Linker // every package whose build or test binary may contain it, with the reason
	Note   string
}

// Linker is a package allowed to contain a Linked module, and why it needs it.
type Linker struct {
	Path, Why string
}

// Heavy are the Linked rules.
var Heavy = []Linked{
	{Prefix: "k8s.io/", Note: "client-go with the API types and what they pull (about 290 packages in a build, 350 with the fake clientset); " +
		"the harness takes the transport as a kubeaccess.Open, so it and the packages above it contain none",
		By: []Linker{
			{Path: "e2e/remote/kube", Why: "the Kubernetes transport itself"},
			{Path: "suites/perf", Why: "hands the harness kube.Open for hypervisors.access: kubernetes"},
			{Path: "suites/smoke", Why: "hands the harness kube.Open for hypervisors.access: kubernetes"},
			{Path: "suites/fleet", Why: "hands the harness kube.Open for hypervisors.access: kubernetes"},
			{Path: "tools/kubecheck", Why: "the Kubernetes preflight against a real cluster"},
			{Path: "tools/sweeper", Why: "sweeps the node debug pods"},
			{Path: "deploy", Why: "its test decodes the manifests strictly with client-go's scheme"},
			{Path: "lab/oidc/plainclient", Why: "the lab's negative: client-go with the read-only kubeconfig in place, no private copy"},
		}},
	{Prefix: "modernc.org/", Note: "SQLite translated to Go (modernc.org/libc and sqlite: a long first compile); the history alone",
		By: []Linker{
			{Path: "e2e/history/store", Why: "the history's default store"},
			{Path: "tools/history", Why: "the history's command"},
		}},
}

// Short is a path as DESIGN.md writes it among imports: without the "e2e/".
func Short(path string) string { return strings.TrimPrefix(path, "e2e/") }

// Render is DESIGN.md's layer list: one numbered line per layer, then the modules.
func Render() string {
	var b strings.Builder
	for i, l := range Layers {
		parts := make([]string, len(l.Packages))
		for j, p := range l.Packages {
			var in []string
			for _, imp := range p.Imports {
				in = append(in, Short(imp))
			}
			words := strings.Join(in, ", ")
			extra := []string{}
			if p.Note != "" {
				extra = append(extra, p.Note)
			}
			if len(p.OnlyImportedBy) > 0 {
				extra = append(extra, "imported only by "+quoteAll(p.OnlyImportedBy))
			}
			if p.OnlyTests {
				extra = append(extra, "imported only by tests")
			}
			if len(extra) > 0 {
				if words != "" {
					words += ": "
				}
				words += strings.Join(extra, "; ")
			}
			parts[j] = "`" + p.Path + "`"
			if words != "" {
				parts[j] += " (" + words + ")"
			}
		}
		line := fmt.Sprintf("%d. %s", i+1, strings.Join(parts, ", "))
		if l.Note != "" {
			line += " — " + l.Note
		}
		b.WriteString(line + "\n")
	}
	b.WriteString("\nOutside modules (the longest prefix decides):\n")
	for _, m := range Modules {
		by := "imported by no package's code"
		if len(m.By) > 0 {
			by = "imported by " + quoteAll(m.By)
		}
		tests := ""
		if len(m.TestsBy) > 0 {
			tests = "; in tests also by " + quoteAll(m.TestsBy)
		}
		fmt.Fprintf(&b, "- `%s`: %s%s — %s\n", m.Prefix, by, tests, m.Note)
	}
	b.WriteString("\nOutside modules in a build at all (directly or through imports; test binaries included):\n")
	for _, h := range Heavy {
		why := make([]string, len(h.By))
		for i, l := range h.By {
			why[i] = "`" + l.Path + "` (" + l.Why + ")"
		}
		fmt.Fprintf(&b, "- `%s`: only in %s — %s\n", h.Prefix, strings.Join(why, ", "), h.Note)
	}
	return b.String()
}

func quoteAll(paths []string) string {
	q := make([]string, len(paths))
	for i, p := range paths {
		q[i] = "`" + p + "`"
	}
	return strings.Join(q, ", ")
}
