// Package results is the vocabulary every layer of the harness shares: the
// results schema types (a versioned JSON document, SCHEMA.md in e2e/report),
// the expected paths, the offload check names and their verdicts, the timing
// phase names, the threshold metrics and rules, and the statistics stored in
// the schema (a profile's summary over repeats, interval statistics).
// With the words, the rules applied to them: the results file's writer
// (atomic rewrite after every change) and strict loader, threshold
// evaluation, and how the numbers are written (FormatBps, FormatLoss, ...),
// shared by the harness's log lines and the report's cells.
//
// Each word is defined here once. The package imports nothing of the
// project: config, offload, harness and the report all speak it, so none of
// them needs another to agree on a string.
//
// The words by name: the schema's types (Results, ProfileResult, Run,
// CheckResult, ...; SchemaVersion 2, and files of version 1 read too); the
// fleet section (fleet.go: Fleet with its nodes, pairs, compact per-pair
// rates, per-node checks, rates, drift and the checks' rounds — FleetRound:
// pairs, each flow's window, start skew, against SkewGoal —; MarkDrift against
// the fleet's majority; JudgeFleet, the fleet verdict naming nodes); expected
// paths (Path); check names (Check*, AllChecks); verdicts (Verdict); phase
// names (Phase*); the seed's 14 profile shapes (SeedShapes); threshold metrics
// and rules (ThresholdRule, ValidateRule); the tenant network types and
// Neutron's arithmetic on them (network.go: Network*, EncapOverhead — Geneve
// 58 bytes over IPv4 —, SegmentationRange); the statistics (Summarize, StatOf,
// IntervalStatsOf).
//
// The families: Registry, the ordered table of measurement families each
// layer keeps (family.go), and Families, their results here.
//
// The rules by name: Writer (an OutputGuard is told of a failed write and can
// stop later ones), Load and Decode (strict, versioned, every problem at
// once), WriteFileAtomic; EvaluateThresholds over one or more files;
// FormatBps, FormatLoss, FormatGain, FormatPercent, UDPCell and Dash for log
// lines, threshold reasons and report cells.
package results

import "time"

// SchemaVersion is the version of the results JSON the harness writes and
// the report reads. Version 2 added the optional fleet section; version 1
// files (every file without it) still load.
const SchemaVersion = 2

// MinSchemaVersion is the oldest version Load reads.
const MinSchemaVersion = 1

// FleetSchemaVersion is the first version that may hold a fleet section.
const FleetSchemaVersion = 2

// Results is one results file: one run of the harness against one cloud.
type Results struct {
	SchemaVersion int       `json:"schema_version"`
	RunID         string    `json:"run_id"`
	StartedAt     time.Time `json:"started_at"`
	// FinishedAt is nil while the run is in progress (or was killed).
	FinishedAt  *time.Time        `json:"finished_at,omitempty"`
	Config      ConfigSummary     `json:"config"`
	Environment Environment       `json:"environment"`
	Profiles    []ProfileResult   `json:"profiles"`
	Offload     []CheckResult     `json:"offload"`
	Timings     []Timing          `json:"timings"`
	Thresholds  []ThresholdResult `json:"thresholds"`
	Errors      []string          `json:"errors"`
	// Searches are the zero-loss / partial-drop searches (pps.go); absent
	// in files written before them.
	Searches []SearchResult `json:"searches,omitempty"`
	// Latency holds the latency profiles (sockperf, first packets); absent
	// in files written before they existed.
	Latency []LatencyResult `json:"latency,omitempty"`
	// Fleet is the fleet sweep's section (fleet.go); absent in a
	// single-pair run and in every file of schema version 1.
	Fleet *Fleet `json:"fleet,omitempty"`
	// Connections are the connection-scale profile's results
	// (connections.go), one per N; absent in files written before it.
	Connections []ConnectionResult `json:"connections,omitempty"`
	// RuleScale and Churn are issue 38's rule-scale profile and long
	// window (hold.go); absent in files written before them.
	RuleScale []RuleScaleResult `json:"rule_scale,omitempty"`
	Churn     []ChurnResult     `json:"churn,omitempty"`
	// Aging and Fragments are issue 38's aging and fragment profiles
	// (aging.go); absent when not run.
	Aging     *AgingResult    `json:"aging,omitempty"`
	Fragments *FragmentResult `json:"fragments,omitempty"`
	// Failover is the bond failover profile's result (failover.go), one
	// per path; absent in files written before it.
	Failover []FailoverResult `json:"failover,omitempty"`
}

// ConfigSummary is what of the configuration explains the numbers.
type ConfigSummary struct {
	Cloud      string `json:"cloud"`
	BuildLabel string `json:"build_label"`
	// BuildID is run.build_id: the user's id of the build under test (a
	// CI pipeline, a release tag); empty when not given.
	BuildID         string   `json:"build_id,omitempty"`
	ExpectedPath    Path     `json:"expected_path"`
	Profiles        []string `json:"profiles"`
	DurationSeconds float64  `json:"duration_seconds"`
	Repeats         int      `json:"repeats"`
	// Checks are the offload checks the run was configured to do (tc,
	// representor, dpctl); a configured check without a result is shown as
	// missing, never hidden.
	Checks []string `json:"checks"`
	// PartialProof records the run's explicit opt-in (offload.partial_proof)
	// to accept fewer than all AllChecks: its evidence is then "partial
	// proof", never "offload proven".
	PartialProof bool `json:"partial_proof,omitempty"`
	// CVLimitPercent marks a profile unstable when the coefficient of
	// variation of its delivered rate over repeats exceeds it; 0 = no limit.
	CVLimitPercent float64 `json:"cv_limit_percent,omitempty"`
	// LineRateBps is the physical line rate (e.g. 25e9); optional, used to
	// say "near line rate" beside a gain.
	LineRateBps float64 `json:"line_rate_bps,omitempty"`
	// VNICType and BindingProfile are how the data ports were asked for
	// (data_port.vnic_type, data_port.binding_profile: "set" by the harness
	// or left for Nova to fill, "nova"); empty in files written before they
	// were recorded.
	VNICType       string `json:"vnic_type,omitempty"`
	BindingProfile string `json:"binding_profile,omitempty"`
	// PortSecurity is the run's mode (data_port.port_security): true =
	// the data ports had port security and the run's security group, so
	// the pair's packets crossed conntrack; false = neither. The harness
	// writes it on every run, false included; nil only in files written
	// before it was recorded (ModeUnrecorded).
	PortSecurity *bool `json:"port_security,omitempty"`
}

// RunKey is the id a run is known by across its files: the run group of
// a fleet shard that has one (every shard and their merge share it; each
// shard's own run id names its resources), else the run id.
func (r *Results) RunKey() string {
	if r.Fleet != nil && r.Fleet.RunGroup != "" {
		return r.Fleet.RunGroup
	}
	return r.RunID
}

// The modes a run's data ports were measured in (ConfigSummary.Mode).
const (
	ModeSecurityGroupsOn  = "security groups on"
	ModeSecurityGroupsOff = "security groups off"
	ModeUnrecorded        = "mode not recorded"
)

// Mode names the run's port-security mode for reports and the compare
// gate: ModeSecurityGroupsOn, ModeSecurityGroupsOff or ModeUnrecorded.
func (c ConfigSummary) Mode() string {
	switch {
	case c.PortSecurity == nil:
		return ModeUnrecorded
	case *c.PortSecurity:
		return ModeSecurityGroupsOn
	}
	return ModeSecurityGroupsOff
}

// Environment is what the run ran on.
type Environment struct {
	Cloud      string `json:"cloud"`
	BuildLabel string `json:"build_label"`
	// BuildID is run.build_id (ConfigSummary.BuildID); empty when not
	// given and in files written before it was recorded.
	BuildID string `json:"build_id,omitempty"`
	// Harness is the build of the harness that wrote the file
	// (identity.go); nil in files written before it was recorded.
	Harness *HarnessBuild `json:"harness,omitempty"`
	// Hypervisors are the two compute nodes: the iperf3 server's first.
	Hypervisors []Hypervisor `json:"hypervisors"`
	Guests      []Guest      `json:"guests"`
	// MTU is the data network's MTU as Neutron reports it.
	MTU int `json:"mtu"`
	// NetworkType and SegmentationID are the data network's
	// provider:network_type (vxlan, geneve, ...) and
	// provider:segmentation_id as Neutron's admin view shows them; empty
	// without admin credentials and in files written before they were
	// recorded. With ML2/OVN the Geneve VNI on the wire is OVN's datapath
	// tunnel key, not this segmentation id.
	NetworkType    string `json:"network_type,omitempty"`
	SegmentationID string `json:"segmentation_id,omitempty"`
	// NetworkBackend is the ML2 backend Neutron's agent list showed:
	// "ml2/ovn", "ml2/ovs", both joined by "+", "" when not known (no admin
	// credentials, the list failed, or files written before it was
	// recorded); NetworkAgents the agents by type ("OVN Controller agent:
	// 2", "Open vSwitch agent: 2 (1 not alive)").
	NetworkBackend string   `json:"network_backend,omitempty"`
	NetworkAgents  []string `json:"network_agents,omitempty"`
	GuestKernel    string   `json:"guest_kernel,omitempty"`
	// InsecureHostKeys is true when SSH host keys were not verified (explicit opt-in).
	InsecureHostKeys bool `json:"insecure_host_keys"`
	// ComputeMaxMicroversion is the highest compute API microversion Nova
	// announced: the OpenStack release in one number (2.93 on the lab's Zed,
	// 2.100 on its Epoxy). Empty in files written before it was recorded.
	ComputeMaxMicroversion string `json:"compute_max_microversion,omitempty"`
	// ComputeMinMicroversion is the lowest one Nova announced (its version
	// document's min_version); empty in files written before it was
	// recorded.
	ComputeMinMicroversion string `json:"compute_min_microversion,omitempty"`
	// NetworkAPIVersions are the versions Neutron's version document (GET
	// on its endpoint's root) lists, each "<id> <status>" ("v2.0
	// CURRENT"); empty when it was not read and in older files.
	NetworkAPIVersions []string `json:"network_api_versions,omitempty"`
	// IdentityAPIVersion is Keystone's version document's id and status
	// at the auth URL ("v3.14 stable"); optional.
	IdentityAPIVersion string `json:"identity_api_version,omitempty"`
	// KubernetesServerVersion is the cluster's version (discovery's
	// ServerVersion: "v1.29.4") with hypervisors.access kubernetes; read
	// once per run, empty otherwise.
	KubernetesServerVersion string `json:"kubernetes_server_version,omitempty"`
	// APILatency is the tenant APIs' round trip the preflight measured
	// before the first create (fixtures.APILatency); absent when no
	// preflight ran and in older files.
	APILatency []APILatency `json:"api_latency,omitempty"`
}

// APILatency is one service's measured round trip.
type APILatency struct {
	Service  string  `json:"service"`   // "compute", "network"
	MedianMS float64 `json:"median_ms"` // the median of the calls that answered
	Calls    int     `json:"calls"`     // the calls that answered
	Error    string  `json:"error,omitempty"`
}

// Hypervisor is one compute node and its uplink NIC.
type Hypervisor struct {
	Name             string `json:"name"`
	NIC              string `json:"nic,omitempty"`                // interface ethtool was asked about
	NICDriver        string `json:"nic_driver"`                   // ethtool -i "driver"
	NICDriverVersion string `json:"nic_driver_version,omitempty"` // ethtool -i "version"
	NICFirmware      string `json:"nic_firmware"`                 // ethtool -i "firmware-version"
	NICBusInfo       string `json:"nic_bus_info,omitempty"`       // ethtool -i "bus-info"
	// NICFirmwareRunning and NICFirmwareStored are the NIC's firmware as
	// `devlink dev info pci/<bus-info>` reports it running and in its
	// flash (envinfo.ParseDevlinkInfo); NoDevlink where there is no
	// devlink; empty when not read and in older files. Differing, the
	// report says FirmwareNotActivated.
	NICFirmwareRunning string `json:"nic_firmware_running,omitempty"`
	NICFirmwareStored  string `json:"nic_firmware_stored,omitempty"`
	OVSVersion         string `json:"ovs_version"`
	// OVNControllerVersion is the hypervisor's ovn-controller
	// (envinfo.OVNVersion.String: "23.03.1 (OVS library 3.1.0, SB schema
	// 20.27.0)"); empty where there is none to ask (ML2/OVS) and in files
	// written before it was recorded.
	OVNControllerVersion string `json:"ovn_controller_version,omitempty"`
	Kernel               string `json:"kernel"`
	// OVSCommandPrefix is how OVS was reached: hypervisors.ovs_command_prefix,
	// put before every OVS command run there ("" = the tools ran as they are).
	OVSCommandPrefix string `json:"ovs_command_prefix,omitempty"`
	// Transport is how the hypervisor's commands ran: "ssh" or
	// "kubernetes"; empty in files written before it was recorded (ssh).
	Transport string `json:"transport,omitempty"`
	// Pod is "<namespace>/<pod>" and Container the container the commands
	// ran in, with transport kubernetes: the pod found at connect.
	Pod       string `json:"pod,omitempty"`
	Container string `json:"container,omitempty"`
	// PodReplacements are the moves of the hypervisor's commands from a
	// pod that vanished under the run to its replacement, in order: the
	// first from Pod, each next from the last one's To (transport
	// kubernetes). Absent when Pod served the whole run, and in files
	// written before they were recorded.
	PodReplacements []PodReplacement `json:"pod_replacements,omitempty"`
	// TCVersion is the iproute2 build of the tc the checks ran (`tc -V`,
	// envinfo.TCVersion.String: "iproute2-6.1.0, libbpf 1.3.0").
	TCVersion string `json:"tc_version,omitempty"`
	// HostToolsPod is "<namespace>/<pod>" of the node debug pod the host
	// tools ran in with transport kubernetes ("" = none: they ran where
	// the OVS commands ran); HostToolsContainer its container.
	HostToolsPod       string `json:"host_tools_pod,omitempty"`
	HostToolsContainer string `json:"host_tools_container,omitempty"`
	// OVSContainerTools are the host tools found in the OVS container by
	// the probe (transport kubernetes): the ones missing ran in the debug pod.
	OVSContainerTools []string `json:"ovs_container_tools,omitempty"`
}

// PodReplacement is one move of a hypervisor's commands: the pod From
// vanished (a DaemonSet rollout, a drain) and the later commands ran in To,
// the pod of the same selector on the same node.
type PodReplacement struct {
	From string    `json:"from"` // "<namespace>/<pod>"
	To   string    `json:"to"`   // "<namespace>/<pod>"
	Node string    `json:"node"`
	At   time.Time `json:"at"` // when the commands moved
	// Reason is how From vanished: "pod vanished: NotFound", "pod
	// vanished: being deleted", "pod vanished: created again under the
	// same name, uid A → B".
	Reason string `json:"reason"`
}

// Guest is one instance.
type Guest struct {
	Name          string `json:"name"`
	Role          string `json:"role"` // "server" or "client"
	Hypervisor    string `json:"hypervisor,omitempty"`
	Iperf3Version string `json:"iperf3_version"`
	Kernel        string `json:"kernel,omitempty"`
}

// ProfileResult is one iperf3 profile on one path, with every repeat.
type ProfileResult struct {
	ID       string `json:"id"`
	Name     string `json:"name"`
	Protocol string `json:"protocol"` // tcp | udp
	Streams  int    `json:"streams"`
	// BitrateBps is the per-stream target (-b); 0 = unlimited (-b0 or TCP default).
	BitrateBps float64 `json:"bitrate_bps"`
	// LengthBytes is the payload length (-l); 0 = iperf3's default.
	LengthBytes     int           `json:"length_bytes,omitempty"`
	Path            Path          `json:"path"`
	DurationSeconds float64       `json:"duration_seconds,omitempty"`
	Runs            []Run         `json:"runs"`
	Summary         Summary       `json:"summary"`
	Offload         []CheckResult `json:"offload"`
}

// Run is one repeat of a profile.
type Run struct {
	Repeat       int       `json:"repeat"` // 1-based
	StartedAt    time.Time `json:"started_at,omitzero"`
	OfferedBps   float64   `json:"offered_bps"`   // sender rate
	DeliveredBps float64   `json:"delivered_bps"` // receiver rate
	LossPercent  float64   `json:"loss_percent"`  // UDP: share that did not arrive, 0..100
	Retransmits  int64     `json:"retransmits"`   // TCP
	// Intervals is iperf3's per-interval series (receiver side where known).
	Intervals     []Interval     `json:"intervals"`
	IntervalStats *IntervalStats `json:"interval_stats,omitempty"`
	Iperf3Version string         `json:"iperf3_version,omitempty"`
	EvidenceFile  string         `json:"evidence_file,omitempty"` // the raw iperf3 -J output(s)
	// Iperf3Guards are iperf3's own dead-peer timeouts this repeat's
	// commands carried, e.g. "client --connect-timeout 30000 --snd-timeout
	// 5000; server --rcv-timeout 5000 --snd-timeout 5000", and any the
	// guests' iperf3 was too old for ("without ...").
	Iperf3Guards string `json:"iperf3_guards,omitempty"`
	// SetupRetries are the UDP attempts of this repeat that failed at
	// stream setup (before any traffic) and were run again, in order.
	SetupRetries []Retry `json:"setup_retries,omitempty"`
	// Error is set when this repeat failed; it is excluded from statistics.
	Error string `json:"error,omitempty"`
	// HostCPU is the hypervisors' CPU over this repeat's window
	// (traffic.host_cpu), GuestCPU iperf3's own CPU figures (cpu.go).
	HostCPU  *HostCPURun `json:"host_cpu,omitempty"`
	GuestCPU *GuestCPU   `json:"guest_cpu,omitempty"`
	// OVSDrops is what each hypervisor's ovs-vswitchd counted as dropped
	// during this repeat's window (ovsdrops.go); absent when not read.
	OVSDrops []OVSDrops `json:"ovs_drops,omitempty"`
	// Packets are the UDP repeat's datagram counts and rates (pps.go).
	Packets *PacketRates `json:"packets,omitempty"`
}

// Retry is one attempt given up and run again: when, and iperf3's reason.
type Retry struct {
	At     time.Time `json:"at"`
	Reason string    `json:"reason"`
}

// Interval is one iperf3 reporting interval.
type Interval struct {
	Start float64 `json:"start"` // seconds since the test start
	End   float64 `json:"end"`
	Bps   float64 `json:"bps"`
}

// IntervalStats summarises a per-interval series: how much the average hides.
type IntervalStats struct {
	Count     int      `json:"count"`
	MinBps    float64  `json:"min_bps"`
	MedianBps float64  `json:"median_bps"`
	MaxBps    float64  `json:"max_bps"`
	Worst     Interval `json:"worst"` // the interval with the lowest rate
}

// Stat is a statistic over the successful repeats of a profile.
type Stat struct {
	N         int     `json:"n"`
	Median    float64 `json:"median"`
	Min       float64 `json:"min"`
	Max       float64 `json:"max"`
	Mean      float64 `json:"mean"`
	CVPercent float64 `json:"cv_percent"` // sample standard deviation / mean * 100; 0 when N < 2
}

// Summary is computed from Runs by Summarize.
type Summary struct {
	Runs        int  `json:"runs"`   // successful repeats
	Failed      int  `json:"failed"` // repeats with an error
	Delivered   Stat `json:"delivered_bps"`
	Offered     Stat `json:"offered_bps"`
	Loss        Stat `json:"loss_percent"`
	Retransmits Stat `json:"retransmits"`
	// Intervals pools every interval of every successful repeat.
	Intervals      *IntervalStats `json:"intervals,omitempty"`
	Unstable       bool           `json:"unstable"`
	UnstableReason string         `json:"unstable_reason,omitempty"`
	// CPU is the hosts' and guests' CPU over the repeats (cpu.go).
	CPU *CPUSummary `json:"cpu,omitempty"`
	// Packets summarises the repeats' packet rates (UDP; pps.go).
	Packets *PacketSummary `json:"packets,omitempty"`
}

// CheckResult is the verdict of one complementary offload check.
type CheckResult struct {
	Name    string  `json:"name"`           // tc | representor | dpctl
	Flow    string  `json:"flow,omitempty"` // what traffic it observed: flood_ping, tcp, udp
	Verdict Verdict `json:"verdict"`        // offloaded | software | inconclusive
	Reason  string  `json:"reason"`
	// Basis is what a judged verdict looked at (tc, dpctl): one line per
	// hypervisor, device and direction naming the stages of each pipeline
	// and the samples. Absent in older files and for the other checks.
	Basis         []string `json:"basis,omitempty"`
	EvidenceFiles []string `json:"evidence_files,omitempty"`
}

// Timing is the wall-clock time of one phase.
type Timing struct {
	Phase   string  `json:"phase"`
	Seconds float64 `json:"seconds"`
}
