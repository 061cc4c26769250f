// Command sweeper lists, and with --delete removes, what harness runs left
// in a cloud: by run id, by age, or every harness resource. Only resources
// whose name starts with "<prefix>-" are ever considered.
//
//	go run ./tools/sweeper --config lab/harness.yaml --run-id 20261202-0915 [--delete]
//	go run ./tools/sweeper --cloud asap2lab --older-than 6h --delete
//	go run ./tools/sweeper --cloud asap2lab --all
//	go run ./tools/sweeper --config lab/harness-fleet.yaml --group ci-4711 [--delete]
//
// --group selects every shard of a sharded fleet run (fleet.run_group):
// the resources tagged group=<G> and the tagless ones (flavors, keypairs,
// server groups) of the run ids they carry; with kubernetes, the debug
// pods of those run ids.
//
// With a --config whose hypervisors.access is kubernetes, the node debug
// pods of harness runs (labelled with the run id and the prefix, see
// e2e/remote/kube) are selected the same way in hypervisors.kubernetes'
// namespace, through its kubeconfig, and listed as kind "kubernetes pod".
//
// The OpenStack and Kubernetes sides are swept apart: when one cannot be
// reached (or has no credentials), the other is still swept and reported.
//
// The JSON report goes to stdout, one line per action to stderr. Exit code:
// 0 nothing selected is left, 1 something is left (a dry run that found
// resources, or a delete that failed), 2 usage, config or API error (on
// either side).
//
// It is fixtures.Sweep (ages by fixtures.RunIDTime) and, with kubernetes,
// kube.SweepDebugPods in the same report; it imports fixtures, cloud, config,
// remote/kube and remote/kubeaccess, not the harness.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"github.com/mosk-qa/asap2-e2e/tools/internal/cli"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/cloud"
	"github.com/mosk-qa/asap2-e2e/e2e/config"
	"github.com/mosk-qa/asap2-e2e/e2e/remote/kube"
	"github.com/mosk-qa/asap2-e2e/e2e/remote/kubeaccess"
	"github.com/mosk-qa/asap2-e2e/e2e/wait"
	"github.com/mosk-qa/asap2-e2e/fixtures"
)

// debugPodSweeper finds (and deletes) the node debug pods of harness runs.
type debugPodSweeper interface {
	SweepDebugPods(ctx context.Context, in kubeaccess.SweepInput) ([]kubeaccess.SweptPod, error)
}

// newKube builds the Kubernetes client of hypervisors.kubernetes (tests
// replace it).
var newKube = func(k config.Kubernetes, api config.Interval) (debugPodSweeper, error) {
	return kube.NewCluster(k, kubeaccess.Options{API: api})
}

// selector names the selection as fixtures.Sweep's report does, for a
// report the OpenStack sweep did not write.
func selector(runID, group string, olderThan time.Duration) string {
	switch {
	case runID != "":
		return "run_id=" + runID
	case group != "":
		return "group=" + group
	case olderThan > 0:
		return "older_than=" + olderThan.String()
	}
	return "all"
}

// defaultPrefix is run.name_prefix's default (one definition, in config).
const defaultPrefix = config.DefaultNamePrefix

// clientsFunc builds the fixtures clients for the clouds.yaml entries and
// returns the Redactor that knows their secrets (tests replace it).
type clientsFunc func(ctx context.Context, c config.Cloud, retry wait.Interval, logf func(string, ...any)) (fixtures.Clients, *cloud.Redactor, error)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr, newClients))
}

func newClients(ctx context.Context, c config.Cloud, retry wait.Interval, logf func(string, ...any)) (fixtures.Clients, *cloud.Redactor, error) {
	cc, err := cloud.NewClients(ctx, c, cloud.WithRetry(retry), cloud.WithLogf(logf))
	if err != nil {
		return fixtures.Clients{}, nil, err
	}
	return fixtures.ClientsOf(cc), cc.Redactor, nil
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer, mk clientsFunc) int {
	fs := flag.NewFlagSet("sweeper", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		cfgPath   = fs.String("config", "", "harness config file: cloud entries, run.name_prefix and the delete interval come from it")
		tenant    = fs.String("cloud", "", "clouds.yaml entry of the tenant (overrides cloud.tenant; default $OS_CLOUD)")
		admin     = fs.String("admin-cloud", "", "clouds.yaml entry of the admin (overrides cloud.admin); used to delete flavors")
		region    = fs.String("region", "", "region (overrides cloud.region)")
		prefix    = fs.String("prefix", "", "resource name prefix (overrides run.name_prefix; default "+defaultPrefix+")")
		runID     = fs.String("run-id", "", "select the resources of this run")
		group     = fs.String("group", "", "select the resources of every shard of this run group (fleet.run_group)")
		olderThan = fs.Duration("older-than", 0, "select harness resources created longer ago than this (e.g. 6h)")
		all       = fs.Bool("all", false, "select every harness resource (name starts with <prefix>-)")
		del       = fs.Bool("delete", false, "delete what is selected (default: dry run)")
	)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: sweeper [--config FILE] [--cloud NAME] (--run-id ID | --group G | --older-than DURATION | --all) [--delete]")
		fs.PrintDefaults()
	}
	if done, code := cli.Parse(fs, args, stdout, stderr); done {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "sweeper: unexpected arguments %q\n", fs.Args())
		return 2
	}
	// Every line and the JSON report go through the Redactor of the clients
	// (the credentials and tokens they know, and credential-shaped text):
	// an API error can echo what was sent. Until the clients exist the
	// patterns alone apply (a nil Redactor).
	var red *cloud.Redactor
	logf := func(format string, a ...any) { fmt.Fprintln(stderr, red.Redact(fmt.Sprintf(format, a...))) }

	cfg := &config.Config{Run: config.Run{NamePrefix: defaultPrefix}}
	if *cfgPath != "" {
		data, err := os.ReadFile(*cfgPath)
		if err != nil {
			fmt.Fprintf(stderr, "sweeper: --config: %v\n", err)
			return 2
		}
		// Parse, not Load: a sweep must work even when files the run needs
		// (SSH keys, known_hosts) are gone.
		if cfg, err = config.Parse(*cfgPath, data); err != nil {
			fmt.Fprintf(stderr, "sweeper: %v\n", err)
			return 2
		}
	}
	if *tenant != "" {
		cfg.Cloud.Tenant = *tenant
	}
	if cfg.Cloud.Tenant == "" {
		cfg.Cloud.Tenant = os.Getenv(config.EnvCloud)
	}
	if *admin != "" {
		cfg.Cloud.Admin = *admin
	}
	if *region != "" {
		cfg.Cloud.Region = *region
	}
	if *prefix != "" {
		cfg.Run.NamePrefix = *prefix
	}
	if cfg.Run.NamePrefix == "" {
		cfg.Run.NamePrefix = defaultPrefix
	}
	// The two sides are swept apart: an OpenStack that cannot be reached
	// (or no tenant cloud at all) still leaves the node debug pods to find,
	// and the other way round. Either failure makes the exit code 2, after
	// the report of what the other side found.
	kubeSide := cfg.Hypervisors.Access == config.HypervisorAccessKubernetes
	failed := false
	rep := &fixtures.SweepReport{Prefix: cfg.Run.NamePrefix, DryRun: !*del, Resources: []fixtures.SweptResource{}, Selector: selector(*runID, *group, *olderThan)}
	if cfg.Cloud.Tenant == "" {
		if !kubeSide {
			fmt.Fprintln(stderr, "sweeper: no tenant cloud: give --cloud, --config with cloud.tenant, or set OS_CLOUD")
			return 2
		}
		logf("sweeper: OpenStack not swept: no tenant cloud (--cloud, cloud.tenant or OS_CLOUD)")
		failed = true
	} else if clients, r, err := mk(ctx, cfg.Cloud, cfg.Interval(config.IntervalAPIRetry), logf); err != nil {
		logf("sweeper: OpenStack not swept: %v", err)
		failed = true
	} else {
		red = r
		osRep, err := fixtures.Sweep(ctx, fixtures.SweepInput{
			Clients:   clients,
			Prefix:    cfg.Run.NamePrefix,
			RunID:     *runID,
			Group:     *group,
			OlderThan: *olderThan,
			All:       *all,
			Delete:    *del,
			Interval:  cfg.Interval(config.IntervalDelete),
			Now:       time.Now,
			RunIDTime: fixtures.RunIDTime,
			Logf:      logf,
		})
		if err != nil {
			logf("sweeper: OpenStack: %v", err)
			failed = true
		} else {
			rep = osRep
		}
	}
	if kubeSide {
		kc, err := newKube(cfg.Hypervisors.Kubernetes, cfg.Interval(config.IntervalKubeAPI))
		if cl, ok := kc.(io.Closer); ok && err == nil {
			defer cl.Close() // the copy of the kubeconfig
		}
		// The debug pods carry run ids, not the group: a group's are
		// those of the run ids its OpenStack resources carry.
		runIDs := []string{*runID}
		if *group != "" {
			runIDs = rep.Runs
			if failed {
				err = errors.Join(err, fmt.Errorf("--group %s: the run ids of the group come from OpenStack, which was not swept; sweep the pods --run-id by --run-id", *group))
			}
		}
		for _, id := range runIDs {
			if err != nil {
				break
			}
			var pods []kubeaccess.SweptPod
			pods, err = kc.SweepDebugPods(ctx, kubeaccess.SweepInput{Prefix: cfg.Run.NamePrefix, RunID: id, OlderThan: *olderThan, All: *all,
				Delete: *del, Interval: cfg.Interval(config.IntervalDebugPod), Logf: logf})
			for _, p := range pods {
				rep.Resources = append(rep.Resources, fixtures.SweptResource(p))
				if p.Action != "deleted" {
					rep.Left++
				}
			}
		}
		if err != nil {
			logf("sweeper: node debug pods (hypervisors.kubernetes): %v", err)
			failed = true
		}
	}
	data, err := json.MarshalIndent(rep, "", "  ")
	if err == nil {
		_, err = fmt.Fprintln(stdout, red.Redact(string(data)))
	}
	if err != nil {
		logf("sweeper: write report: %v", err)
		return 2
	}
	switch {
	case failed:
		logf("sweeper: a side could not be swept (above); the report holds what the other found")
		return 2
	case !rep.AnythingLeft():
		logf("sweeper: nothing left (%s, prefix %s)", rep.Selector, rep.Prefix)
		return 0
	case rep.DryRun:
		logf("sweeper: dry run: %d resources selected; add --delete to remove them", rep.Left)
	default:
		logf("sweeper: %d resources could not be deleted; see the report", rep.Left)
	}
	if errors.Is(ctx.Err(), context.Canceled) {
		logf("sweeper: interrupted; run the same command again to finish")
	}
	return 1
}
