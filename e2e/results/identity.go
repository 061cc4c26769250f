package results

import "strings"

// The identity of a run: what it measured, read from the cloud and the
// hypervisors and recorded in every results file (issue 37).

// Unknown is the value of a build fact nothing could read (a test binary
// without VCS stamping and no -ldflags override).
const Unknown = "unknown"

// NoDevlink is a hypervisor's firmware fact where there is no devlink to
// ask (exit 127), as offload.NoEthtool is for ethtool.
const NoDevlink = "unknown (no devlink)"

// FirmwareNotActivated is the warning for a hypervisor whose NIC flash
// holds another firmware than the one it runs: flashed, but the device
// was not reset (mlxfwreset) or rebooted since.
const FirmwareNotActivated = "firmware flashed but not activated"

// HarnessBuild is the build of the harness that wrote the file
// (e2e/buildinfo.Read): the main module's version and the VCS commit it
// was built from, by the Go toolchain's stamping or an -ldflags -X
// override; Revision is Unknown when neither was there.
type HarnessBuild struct {
	// Version is the main module's version ("v1.4.0", "(devel)" for a
	// build of a checkout), or Unknown.
	Version string `json:"version"`
	// Revision is the commit ("1d40259…"), or Unknown.
	Revision string `json:"revision"`
	// Time is the commit's time (RFC 3339), when known.
	Time string `json:"time,omitempty"`
	// Modified is true when the tree had uncommitted changes.
	Modified bool `json:"modified,omitempty"`
	// Source says where Revision came from: "vcs" (the toolchain's
	// vcs.revision), "ldflags" (the -X override) or "none".
	Source string `json:"source"`
}

// String is the build in one cell: "(devel) 1d40259abcde (modified,
// 2026-05-01T10:00:00Z)", "unknown revision (no VCS stamp)".
func (h HarnessBuild) String() string {
	rev := h.Revision
	if len(rev) > 12 {
		rev = rev[:12]
	}
	var b strings.Builder
	b.WriteString(h.Version)
	switch {
	case rev == "" || rev == Unknown:
		b.WriteString(", commit unknown (no VCS stamp and no -ldflags override)")
	default:
		b.WriteString(" " + rev)
	}
	var notes []string
	if h.Modified {
		notes = append(notes, "modified")
	}
	if h.Time != "" {
		notes = append(notes, h.Time)
	}
	if len(notes) > 0 {
		b.WriteString(" (" + strings.Join(notes, ", ") + ")")
	}
	return b.String()
}

// FirmwarePending says whether h's NIC holds a firmware it does not run
// yet (FirmwareNotActivated): both versions read by devlink and differing.
func (h Hypervisor) FirmwarePending() bool {
	r, s := h.NICFirmwareRunning, h.NICFirmwareStored
	return r != "" && s != "" && r != NoDevlink && s != NoDevlink && r != s
}

// KeepIdentity copies into env, a freshly gathered environment, what of
// the run's identity was recorded before it (at the session's start: the
// cloud, the build, the services' versions, the Kubernetes server) and
// the facts of the data network known since provisioning: the two places
// that rewrite the environment (one pair, a fleet) keep the same facts.
func KeepIdentity(env *Environment, old Environment) {
	env.Cloud, env.BuildLabel, env.BuildID = old.Cloud, old.BuildLabel, old.BuildID
	env.Harness = old.Harness
	env.MTU, env.InsecureHostKeys = old.MTU, old.InsecureHostKeys
	env.NetworkType, env.SegmentationID = old.NetworkType, old.SegmentationID
	env.ComputeMinMicroversion, env.ComputeMaxMicroversion = old.ComputeMinMicroversion, old.ComputeMaxMicroversion
	env.NetworkAPIVersions, env.IdentityAPIVersion = old.NetworkAPIVersions, old.IdentityAPIVersion
	env.KubernetesServerVersion = old.KubernetesServerVersion
	env.APILatency = old.APILatency
}

// The sources of HarnessBuild.Revision.
const (
	HarnessSourceVCS     = "vcs"
	HarnessSourceLDFlags = "ldflags"
	HarnessSourceNone    = "none"
)

func validateHarness(h *HarnessBuild, add func(string, ...any)) {
	if h == nil {
		return
	}
	if h.Version == "" {
		add("environment.harness.version: must be set (%q when not known)", Unknown)
	}
	if h.Revision == "" {
		add("environment.harness.revision: must be set (%q when not known)", Unknown)
	}
	switch h.Source {
	case HarnessSourceVCS, HarnessSourceLDFlags, HarnessSourceNone:
	default:
		add("environment.harness.source: must be %s, %s or %s, got %q", HarnessSourceVCS, HarnessSourceLDFlags, HarnessSourceNone, h.Source)
	}
}
