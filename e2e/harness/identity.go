package harness

import (
	"context"
	"fmt"
	"strings"

	"github.com/mosk-qa/asap2-e2e/e2e/buildinfo"
	"github.com/mosk-qa/asap2-e2e/e2e/cloud"
	"github.com/mosk-qa/asap2-e2e/e2e/envinfo"
	"github.com/mosk-qa/asap2-e2e/e2e/remote"
	"github.com/mosk-qa/asap2-e2e/e2e/remote/kubeaccess"
	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// The run's identity (issue 37): what it measured, read from the cloud,
// the cluster and the hypervisors and recorded in every results file,
// never typed. The harness's own build and the build id are written with
// the file; the services' versions once the clients exist; the Kubernetes
// server's once the cluster is open; each hypervisor's firmware with the
// other host facts (hypervisorFacts), before any measured window.

// harnessBuild is the running harness's build (buildinfo.Read).
func harnessBuild() *results.HarnessBuild {
	h := buildinfo.Read()
	return &h
}

// RecordServiceVersions records what the tenant's services say of
// themselves (cloud.ReadServiceVersions): Nova's microversion range,
// Neutron's versions, Keystone's. A document that cannot be read is an
// error of the environment in the results, never a failed run; Nova's
// maximum falls back on the one the clients' check read.
func (run *Run) RecordServiceVersions(ctx context.Context) {
	if run.Clients == nil || run.Clients.Tenant == nil {
		return
	}
	v, err := cloud.ReadServiceVersions(ctx, run.Clients.Tenant)
	if v.ComputeMax == "" {
		v.ComputeMax = run.Clients.Tenant.ComputeMaxMicroversion
	}
	if err != nil {
		run.Logf("environment: %v", err)
	}
	if uerr := run.Results.Update(func(r *results.Results) {
		e := &r.Environment
		e.ComputeMinMicroversion, e.ComputeMaxMicroversion = v.ComputeMin, v.ComputeMax
		e.NetworkAPIVersions, e.IdentityAPIVersion = v.Network, v.Identity
		if err != nil {
			r.Errors = append(r.Errors, "environment: "+err.Error())
		}
	}); uerr != nil {
		run.Logf("results: %v", uerr)
	}
}

// recordKubeVersion records the Kubernetes server's version once per run
// (hypervisors.access kubernetes), where the cluster says it
// (kubeaccess.Versioned); a failure is said, never fatal.
func (run *Run) recordKubeVersion(ctx context.Context, c kubeaccess.Cluster) {
	vc, ok := c.(kubeaccess.Versioned)
	if !ok {
		return
	}
	v, err := vc.ServerVersion(ctx)
	if uerr := run.Results.Update(func(r *results.Results) {
		r.Environment.KubernetesServerVersion = v
		if err != nil {
			r.Errors = append(r.Errors, "environment: "+err.Error())
		}
	}); uerr != nil {
		run.Logf("results: %v", uerr)
	}
	if err != nil {
		run.Logf("environment: %v", err)
		return
	}
	// Where the credentials came from (a kubeconfig and its context, or a
	// pod's in-cluster service account): the first thing to check when
	// a call is refused.
	if sc, ok := c.(interface{ Source() string }); ok {
		run.Logf("kubernetes: server %s, credentials from %s", v, sc.Source())
		return
	}
	run.Logf("kubernetes: server %s", v)
}

// nicFirmware is the firmware the NIC at PCI address bus runs and holds
// in its flash, by `devlink -j dev info` on hv (envinfo.InfoCommand):
// results.NoDevlink for both where there is no devlink (exit 127); a
// failure or an answer that is not the device's versions is a problem
// and leaves them empty. A flash not activated is said in the log.
func (pair *Pair) nicFirmware(ctx context.Context, hv remote.Runner, name, bus string, problems *[]string) (running, stored string) {
	cmd := envinfo.InfoCommand(bus)
	res, err := hv.Run(ctx, cmd)
	switch {
	case err != nil:
		*problems = append(*problems, err.Error())
		return "", ""
	case res.ExitCode == 127:
		return results.NoDevlink, results.NoDevlink
	case !res.OK():
		*problems = append(*problems, fmt.Sprintf("%s: %s: exit %d: %s", name, cmd, res.ExitCode, strings.TrimSpace(string(res.Stderr))))
		return "", ""
	}
	info, err := envinfo.ParseDevlinkInfo(res.Stdout)
	if err != nil {
		*problems = append(*problems, fmt.Sprintf("%s: %v", name, err))
		return "", ""
	}
	if info.PendingActivation() {
		pair.Logf("WARNING: %s: NIC %s: %s (running %s, stored %s): the run measures the running one", name, bus, results.FirmwareNotActivated, info.FirmwareRunning(), info.FirmwareStored())
	}
	return info.FirmwareRunning(), info.FirmwareStored()
}
