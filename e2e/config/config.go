// Package config holds the harness configuration: one YAML file per target
// cloud, decoded strictly (unknown keys are errors) and validated as a whole
// (every problem is reported at once, with its key path and value).
//
// No secret lives here: credentials come from clouds.yaml / secure.yaml /
// the OS_* environment through gophercloud's clouds package.
//
// Where things are: the types (config.go); the strict load with its
// environment overrides (a renamed key is refused naming its new one,
// renamedKeys; JOB_COMPLETION_INDEX, 0-based, with ASAP2E2E_FLEET_SHARDS:
// ShardFromIndex; ASAP2E2E_RUN_GROUP, required when sharded); the validation,
// every problem at once as "file: key.path: message, got VALUE"; the defaults;
// the named intervals (config.Interval is wait.Interval, named for the file's
// types). Each measurement family's section (its type, defaults, checks and
// its threshold metrics' profile check) is in its own file, registered in
// sections (sections.go), which applyDefaults and validate range over.
package config

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/results"
	"github.com/mosk-qa/asap2-e2e/e2e/wait"
)

// Config is the whole harness configuration for one target.
type Config struct {
	// File is the path the config was loaded from (not a YAML key).
	File string `yaml:"-"`

	Run         Run                     `yaml:"run"`
	Cloud       Cloud                   `yaml:"cloud"`
	Image       Image                   `yaml:"image"`
	Flavor      Flavor                  `yaml:"flavor"`
	Network     Network                 `yaml:"network"`
	DataPort    DataPort                `yaml:"data_port"`
	Placement   Placement               `yaml:"placement"`
	GuestAccess GuestAccess             `yaml:"guest_access"`
	SSH         SSH                     `yaml:"ssh"`
	Hypervisors Hypervisors             `yaml:"hypervisors"`
	Traffic     Traffic                 `yaml:"traffic"`
	Offload     Offload                 `yaml:"offload"`
	Intervals   map[string]Interval     `yaml:"intervals"`
	Thresholds  []results.ThresholdRule `yaml:"thresholds"`
	PPS         PPS                     `yaml:"pps"` // small packets and the zero-loss search (pps.go)
	Latency     Latency                 `yaml:"latency"`
	// Fleet, when present, sweeps many compute nodes in pairs (fleet.go);
	// absent, the run is the one pair of placement.
	Fleet       *Fleet      `yaml:"fleet"`
	Connections Connections `yaml:"connections"` // connection scale (connections.go)
	RuleScale   RuleScale   `yaml:"rule_scale"`  // rule scale and insertion rate (hold.go)
	Churn       Churn       `yaml:"churn"`       // the long window without churn (hold.go)
	Aging       Aging       `yaml:"aging"`       // aging and re-offload (aging.go)
	Fragments   Fragments   `yaml:"fragments"`   // fragmented UDP, labelled (aging.go)
	Failover    Failover    `yaml:"failover"`    // bond / VF-LAG failover (failover.go)

	// bad holds key paths that failed to decode: validation says nothing
	// more about them (their zero value is not what the file says).
	bad map[string]bool
	// env maps a key path to the environment variable that set it.
	env map[string]string
	// set holds every key path present in the file (defaults fill only
	// absent keys, so an explicit 0 is validated, never replaced).
	set map[string]bool
}

// Run holds knobs of one run.
type Run struct {
	NamePrefix   string       `yaml:"name_prefix"`   // every resource name starts with <prefix>-<run id>-; default "asap2e2e"
	BuildLabel   string       `yaml:"build_label"`   // free text recorded in the report, e.g. "MOSK 25.2 rc3"
	BuildID      string       `yaml:"build_id"`      // optional id of the build under test (a CI pipeline, a release tag), one word; recorded in results and the history
	ExpectedPath results.Path `yaml:"expected_path"` // asap2 | baseline
	OutputDir    string       `yaml:"output_dir"`    // artifacts root; each run writes <output_dir>/<run id>/
	KeepTopology bool         `yaml:"keep_topology"` // skip teardown (debugging); prints how to sweep later
}

// Cloud names clouds.yaml entries.
type Cloud struct {
	Tenant string `yaml:"tenant"` // clouds.yaml entry used for everything a tenant can do
	Admin  string `yaml:"admin"`  // optional; needed for host pinning, hypervisor names, provider attributes, binding:profile
	Region string `yaml:"region"` // optional region override
}

// Image is the guest image.
type Image struct {
	Name string `yaml:"name"` // existing Glance image name (or ID)
}

// Flavor is reused by name, or created when Create is true.
type Flavor struct {
	Name       string            `yaml:"name"`
	Create     bool              `yaml:"create"`
	VCPUs      int               `yaml:"vcpus"`
	RAMMB      int               `yaml:"ram_mb"`
	DiskGB     int               `yaml:"disk_gb"`
	ExtraSpecs map[string]string `yaml:"extra_specs"`
}

// Network is the VXLAN tenant network the harness creates for the data ports.
type Network struct {
	CIDR string `yaml:"cidr"`
	MTU  int    `yaml:"mtu"`  // 0 = let Neutron choose; otherwise requested and verified
	Type string `yaml:"type"` // expected provider:network_type, verified with admin credentials; default "vxlan"
}

// BindingProfile says how the switchdev capability reaches the data port.
type BindingProfile string

const (
	// ProfileSet sets binding:profile {"capabilities":["switchdev"]} explicitly (needs admin policy).
	ProfileSet BindingProfile = "set"
	// ProfileNova leaves binding:profile to Nova (recent Nova fills it from the VF's capabilities).
	ProfileNova BindingProfile = "nova"
)

// DataPort describes the two ports the measured traffic crosses.
type DataPort struct {
	VNICType       string         `yaml:"vnic_type"`       // default "direct"
	BindingProfile BindingProfile `yaml:"binding_profile"` // set | nova
	// PortSecurity is the run's mode: false (default) = data ports without
	// port security, as the methodology measured; true = data ports with
	// port security and a security group the harness creates for the run
	// (the OVS firewall driver then sends every packet through conntrack).
	// Recorded in results.json as config.port_security.
	PortSecurity bool `yaml:"port_security"`
}

// IperfPorts is how many consecutive ports from traffic.port the iperf3
// servers of a run may listen on (one per process of a profile): the data
// security group of a port_security run admits these, and latency.port
// must lie outside them. 80: the connection-scale profile's 10000
// connections take 79 processes of iperf3's 128 streams (MaxConnections).
const IperfPorts = 80

// IperfPortRange is the first and last iperf3 server port of the run.
func (t Traffic) IperfPortRange() (first, last int) {
	return t.Port, t.Port + IperfPorts - 1
}

// Placement puts the two servers on two different compute nodes.
type Placement struct {
	Policy           string   `yaml:"policy"`            // server group policy; default "anti-affinity"
	Hosts            []string `yaml:"hosts"`             // optional exact pair of hypervisor names (needs admin)
	AvailabilityZone string   `yaml:"availability_zone"` // optional
}

// GuestAccessMode is how the harness reaches the guests over SSH.
type GuestAccessMode string

const (
	// AccessManagementNetwork: each guest gets a normal port on an existing
	// network that the harness can route to; SSH goes to that fixed IP.
	AccessManagementNetwork GuestAccessMode = "management_network"
	// AccessFloatingIP: as management_network, plus a floating IP from FloatingNetwork.
	AccessFloatingIP GuestAccessMode = "floating_ip"
	// AccessJump: SSH through a jump host to the guest's management fixed IP.
	AccessJump GuestAccessMode = "jump"
)

// GuestAccess says how guests are reached.
type GuestAccess struct {
	Mode              GuestAccessMode `yaml:"mode"`
	ManagementNetwork string          `yaml:"management_network"` // existing network name or ID
	FloatingNetwork   string          `yaml:"floating_network"`   // external network, for mode floating_ip
	Jump              *SSHEndpoint    `yaml:"jump"`               // for mode jump
	User              string          `yaml:"user"`               // guest login user, e.g. "ubuntu"
	Keypair           string          `yaml:"keypair"`            // existing Nova keypair; empty = the harness creates one from ssh.public_key
}

// SSHEndpoint is one SSH server.
type SSHEndpoint struct {
	Address string       `yaml:"address"` // host or IP
	Port    int          `yaml:"port"`    // default 22
	User    string       `yaml:"user"`
	Jump    *SSHEndpoint `yaml:"jump"` // optional further jump
}

// SSH holds client settings shared by every connection.
type SSH struct {
	PrivateKey string `yaml:"private_key"` // path; empty = use the SSH agent (SSH_AUTH_SOCK)
	PublicKey  string `yaml:"public_key"`  // path; used when the harness creates the keypair; default <private_key>.pub
	UseAgent   bool   `yaml:"use_agent"`
	// KnownHosts is a known_hosts file; empty = trust on first use, with every
	// key recorded in the run's artifacts.
	KnownHosts string `yaml:"known_hosts"`
	// InsecureIgnoreHostKey accepts any host key. Explicit, logged opt-in; recorded in the report.
	InsecureIgnoreHostKey bool `yaml:"insecure_ignore_host_key"`
}

// Hypervisors says how to reach compute nodes by their hypervisor name.
type Hypervisors struct {
	// Access is how commands reach the hypervisors: AccessSSH (default, the
	// hosts below) or AccessKubernetes (exec in the node's OVS pod, the
	// Kubernetes block).
	Access     string     `yaml:"access"`
	Kubernetes Kubernetes `yaml:"kubernetes"`

	User  string                 `yaml:"user"` // default "root"
	Sudo  bool                   `yaml:"sudo"` // prefix privileged commands with sudo -n
	Port  int                    `yaml:"port"` // default 22
	Jump  *SSHEndpoint           `yaml:"jump"`
	Hosts map[string]SSHEndpoint `yaml:"hosts"` // hypervisor name (as Nova reports it) -> endpoint
	// OVSCommandPrefix is shell text put before every OVS command
	// (ovs-vsctl, ovs-appctl, ovs-dpctl, ovs-ofctl) the harness runs on a
	// hypervisor, for hosts whose OVS runs in a container, e.g. "crictl exec
	// -i $(crictl ps -q --name openvswitch-vswitchd)": the command then runs
	// as `<prefix> sh -c '<command>'` (offload.OVSCommand). Default "": as is.
	OVSCommandPrefix string `yaml:"ovs_command_prefix"`
}

// Hypervisor access modes (hypervisors.access).
const (
	HypervisorAccessSSH        = "ssh"
	HypervisorAccessKubernetes = "kubernetes"
)

// Kubernetes is hypervisors.kubernetes: commands for a hypervisor run in the
// OVS pod on its node (MOSK runs ovs-vswitchd as a DaemonSet), through the
// API server's pods/exec, with the credentials of a kubeconfig file (exec
// credential plugins included, as for kubectl).
type Kubernetes struct {
	// Kubeconfig is the kubeconfig file; "" = $KUBECONFIG, then ~/.kube/config.
	Kubeconfig string `yaml:"kubeconfig"`
	// Context in the kubeconfig; "" = its current-context.
	Context string `yaml:"context"`
	// Namespace of the OVS pods; default "openstack".
	Namespace string `yaml:"namespace"`
	// Preset is MOSK's Neutron backend, which decides where ovs-vswitchd
	// runs: KubePresetOVS (default) or KubePresetOVN; it gives PodSelector
	// and Container their defaults (KubePresets).
	Preset string `yaml:"preset"`
	// PodSelector is the label selector of the OVS pods; default the
	// preset's.
	PodSelector string `yaml:"pod_selector"`
	// Container in the pod the commands run in; default the preset's.
	Container string `yaml:"container"`
	// NodeNames maps a hypervisor name (as Nova reports it) or a compute
	// service host to its Kubernetes node name; a hypervisor not listed is
	// mapped by e2e/remote/kube's Resolve (service host, hypervisor name,
	// short name, kubernetes.io/hostname label).
	NodeNames map[string]string `yaml:"node_names"`
	// DebugImage is the image of the node debug pod the harness creates on
	// a hypervisor's node when the OVS container lacks host tools (tc,
	// tcpdump, ethtool, ip); "" (default) = no debug pod: a missing tool
	// (ethtool is optional) is an error naming the node and the tools. DebugImageAuto = the image
	// of the node's own OVS pod (already on the node, nothing to mirror),
	// with the host's / mounted read-only and the host's own tools run in
	// it through chroot.
	DebugImage string `yaml:"debug_image"`
	// DebugNamespace is where the node debug pods are created; "" (default)
	// = Namespace. A namespace of their own can be exempted from an
	// admission that refuses privileged, host-network pods (PodSecurity,
	// MKE 4's exemptNamespace) without exempting the OpenStack namespace;
	// MKE 3 has no namespace exemption (it grants the attributes to a user
	// or service account: kube.AdmissionAdvice).
	DebugNamespace string `yaml:"debug_namespace"`
}

// DebugImageAuto is hypervisors.kubernetes.debug_image's value for "the
// OVS pod's own image, running the host's tools".
const DebugImageAuto = "auto"

// Presets of hypervisors.kubernetes.preset.
const (
	KubePresetOVS = "ovs"
	KubePresetOVN = "ovn"
)

// KubePreset is where a Neutron backend runs ovs-vswitchd on MOSK.
type KubePreset struct{ PodSelector, Container string }

// KubePresets are MOSK's backends (Mirantis/rockoon, charts/infra/
// openvswitch): ML2/OVS runs the DaemonSet openvswitch-vswitchd; with
// ML2/OVN (GA since MOSK 25.1) that DaemonSet is off and ovs-vswitchd runs
// in container vswitchd of the ovn-controller DaemonSet's pods
// (templates/daemonset-ovn-controller.yaml).
var KubePresets = map[string]KubePreset{
	KubePresetOVS: {PodSelector: DefaultKubePodSelector, Container: DefaultKubeContainer},
	KubePresetOVN: {PodSelector: "application=openvswitch_ovn,component=controller", Container: "vswitchd"},
}

// Traffic selects the iperf3 profiles and how they run.
type Traffic struct {
	Profiles []string      `yaml:"profiles"` // profile IDs (see iperf3.Catalogue); empty = all
	Duration time.Duration `yaml:"duration"` // per run; default 30s
	Omit     time.Duration `yaml:"omit"`     // iperf3 -O; default 0
	Repeats  int           `yaml:"repeats"`  // default 1
	Port     int           `yaml:"port"`     // first iperf3 server port; default 5201
	// MaxStreamsPerProcess splits a profile's streams over several iperf3
	// processes on consecutive ports. 0 = automatic (split only for
	// single-threaded iperf3 < 3.16 when streams exceed the guest's vCPUs).
	MaxStreamsPerProcess int `yaml:"max_streams_per_process"`
	// CVLimitPercent marks a profile unstable in the report when the
	// coefficient of variation of its delivered rate over the repeats
	// exceeds it; default 10; 0 = never.
	CVLimitPercent float64 `yaml:"cv_limit_percent"`
	// LineRateBps is the physical line rate of the data path (e.g. 25e9 for
	// the methodology's 25 GbE); optional, the report then says when a
	// figure is near line rate; 0 = unknown.
	LineRateBps float64 `yaml:"line_rate_bps"`
	// StallTimeout is iperf3's own guard against a silent peer: the server
	// gets --rcv-timeout, and both sides of a TCP profile --snd-timeout, of
	// this many milliseconds (where their iperf3 has the flag), so a dead
	// peer ends the run with iperf3's own error. 0 = no such guard. Must be
	// shorter than intervals.iperf_server.timeout (the harness's bound on a
	// client is -t + -O + that timeout). Default 5s.
	StallTimeout time.Duration `yaml:"stall_timeout"`
	// UDPSetupRetries is how many times a UDP run that failed at stream
	// setup (iperf3's one unacknowledged datagram each way was lost,
	// esnet/iperf#862) is run again; 0 = never. Default 2.
	UDPSetupRetries int `yaml:"udp_setup_retries"`
	// UDPSetupBackoff is the wait before such a retry. Default 2s.
	UDPSetupBackoff time.Duration `yaml:"udp_setup_backoff"`
	// HostCPU reads both hypervisors' CPU counters just before and just
	// after every measured window (never during it). Default true.
	HostCPU bool `yaml:"host_cpu"`
}

// Offload configures the complementary checks.
type Offload struct {
	Checks []string `yaml:"checks"` // subset of tc, representor, dpctl, counters; default all four
	// PartialProof accepts a non-empty subset of the checks for an asap2 run
	// (tc always among them); the results record it and the report says
	// "partial proof: tc only" instead of "offload proven".
	PartialProof bool          `yaml:"partial_proof"`
	FloodPings   int           `yaml:"flood_pings"`   // ping -f count before the checks; default 1000
	FlowDuration time.Duration `yaml:"flow_duration"` // sustained flow the checks observe; default 20s
	// FlowBitrate caps each sustained flow the checks observe (iperf3 -b,
	// bit/s); 0, the default, runs them as their profiles do: TCP
	// unlimited, UDP -b 0. Where the data path is the CPU's (a lab, a
	// software baseline), an unlimited flow competes with the checks beside
	// it for the host's cycles; the checks need packets moving, not line
	// rate.
	FlowBitrate   int64         `yaml:"flow_bitrate"`
	CaptureWindow time.Duration `yaml:"capture_window"` // representor tcpdump window inside the flow; default 5s
	// CaptureFirstPackets is how many packets of a flow may reach the
	// representor before offload takes over; default 10.
	CaptureFirstPackets int `yaml:"capture_first_packets"`
	// CaptureMaxPackets bounds one representor capture (tcpdump -c); default 10000.
	CaptureMaxPackets int `yaml:"capture_max_packets"`
	// Settle is how long the sustained flow runs before the checks start
	// (OVS installs its flows, TC rules reach the NIC); default 3s.
	Settle time.Duration `yaml:"settle"`
	// TunnelDevice is the hypervisor's tunnel device whose ingress TC rules
	// carry the decap flows. Default "auto" (TunnelAuto): found on each
	// hypervisor from OVS's vxlan and geneve interfaces (options:dst_port,
	// 4789 / 6081 when unset) as vxlan_sys_<port> / genev_sys_<port>, and
	// checked to exist; a device name is used as it is; "" skips the decap
	// side. Read it with Offload.DecapDevice.
	TunnelDevice string `yaml:"tunnel_device"`
	// VXLANDevice is offload.vxlan_device, tunnel_device's name from
	// before Geneve: still read (DecapDevice), refused beside tunnel_device.
	VXLANDevice string `yaml:"vxlan_device"`
	// RepresentorMaxPackets: the counters check says "offloaded" only when
	// the representor moved fewer packets than this in its window; default 1000.
	RepresentorMaxPackets int `yaml:"representor_max_packets"`
	// CountersMinFlowPackets: the guest's data interface must move at least
	// this many packets in the counters window, or it proves nothing; default 10000.
	CountersMinFlowPackets int `yaml:"counters_min_flow_packets"`
}

// Interval is a named wait (under `intervals:`): wait.Interval, the type
// every poll takes, named here for the file's types and DefaultIntervals.
type Interval = wait.Interval

// Names of every wait the harness does. Each has a default and may be
// overridden under `intervals:`; an unknown name there is an error.
const (
	IntervalServerActive  = "server_active"  // server reaches ACTIVE
	IntervalPortActive    = "port_active"    // port status ACTIVE after boot
	IntervalDelete        = "delete"         // a deleted resource is gone
	IntervalSSHReady      = "ssh_ready"      // a guest answers SSH after boot
	IntervalHypervisorSSH = "hypervisor_ssh" // a hypervisor (already up) answers SSH
	IntervalAPIRetry      = "api_retry"      // retries of safe API calls on 5xx / dropped connection
	// IntervalRateLimit: a request the cloud refused for its rate (429,
	// 413 with Retry-After) is tried again after Retry-After, cut to poll
	// (the longest single wait), until timeout of waiting for it.
	IntervalRateLimit   = "rate_limit"
	IntervalIperfServer = "iperf_server" // iperf3 server listening
	IntervalCommand     = "command"      // default bound of one remote command
	IntervalDebugPod    = "debug_pod"    // a node debug pod Running, and gone after its delete
	IntervalKubeAPI     = "kube_api"     // one Kubernetes API call answers; a read tried again after a transient error
	IntervalDataPath    = "data_path"    // each guest's ping of the other's data address answered, before any traffic
	// IntervalConntrackSample: the connection-scale profile reads each
	// hypervisor's conntrack table every poll during iperf3's omit period,
	// each read bounded by timeout.
	IntervalConntrackSample = "conntrack_sample"
	// IntervalRuleScaleSample: the rule-scale profile (hold.go) reads each
	// hypervisor every poll while the guest opens and holds its 5-tuples,
	// each read bounded by timeout.
	IntervalRuleScaleSample = "rule_scale_sample"
	// IntervalChurnSample: the churn window (hold.go) reads each
	// hypervisor every poll, each read bounded by timeout.
	IntervalChurnSample = "churn_sample"
	// IntervalAgingSample: after the aging profile's restart, each
	// hypervisor's datapath flows are dumped every poll until timeout.
	IntervalAgingSample = "aging_sample"
)

// DefaultIntervals are used for every name not given in the file.
var DefaultIntervals = map[string]Interval{
	IntervalServerActive:    {Timeout: 10 * time.Minute, Poll: 3 * time.Second},
	IntervalPortActive:      {Timeout: 2 * time.Minute, Poll: 2 * time.Second},
	IntervalDelete:          {Timeout: 5 * time.Minute, Poll: 2 * time.Second},
	IntervalSSHReady:        {Timeout: 10 * time.Minute, Poll: 5 * time.Second},
	IntervalHypervisorSSH:   {Timeout: time.Minute, Poll: 5 * time.Second},
	IntervalAPIRetry:        {Timeout: 2 * time.Minute, Poll: 2 * time.Second},
	IntervalRateLimit:       {Timeout: 10 * time.Minute, Poll: time.Minute},
	IntervalIperfServer:     {Timeout: 30 * time.Second, Poll: 500 * time.Millisecond},
	IntervalCommand:         {Timeout: 2 * time.Minute, Poll: time.Second},
	IntervalDebugPod:        {Timeout: 3 * time.Minute, Poll: 2 * time.Second},
	IntervalKubeAPI:         {Timeout: 30 * time.Second, Poll: 2 * time.Second},
	IntervalConntrackSample: {Timeout: 5 * time.Second, Poll: time.Second},
	IntervalRuleScaleSample: {Timeout: 10 * time.Second, Poll: time.Second},
	IntervalChurnSample:     {Timeout: 10 * time.Second, Poll: 10 * time.Second},
	IntervalDataPath:        {Timeout: time.Minute, Poll: time.Second},
	IntervalAgingSample:     {Timeout: 10 * time.Second, Poll: 200 * time.Millisecond},
}

// IntervalNames returns the known interval names, sorted.
func IntervalNames() []string {
	names := make([]string, 0, len(DefaultIntervals))
	for name := range DefaultIntervals {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// Interval returns the named interval: the file's value, else the default.
// An unknown name is a programming error and panics (names are the
// Interval* constants).
func (c *Config) Interval(name string) Interval {
	if iv, ok := c.Intervals[name]; ok {
		if _, known := DefaultIntervals[name]; known {
			return iv
		}
	}
	if iv, ok := DefaultIntervals[name]; ok {
		return iv
	}
	panic(fmt.Sprintf("config: unknown interval %q (known: %s)", name, strings.Join(IntervalNames(), ", ")))
}
