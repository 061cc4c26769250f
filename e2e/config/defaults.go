package config

import (
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// Defaults of keys the file may leave out. Each applies only when the key is
// absent from the file: an explicit value (even 0 or "") is kept and
// validated. docs/CONFIG.md lists them with their keys.
const (
	DefaultNamePrefix       = "asap2e2e"
	DefaultOutputDir        = "artifacts" // relative to the working directory
	DefaultFlavorVCPUs      = 16          // the seed's 16 vCPU / 32 GB flavor
	DefaultFlavorRAMMB      = 32768
	DefaultFlavorDiskGB     = 20
	DefaultNetworkType      = results.NetworkVXLAN
	DefaultVNICType         = "direct"
	DefaultBindingProfile   = ProfileNova
	DefaultPlacementPolicy  = "anti-affinity"
	DefaultGuestAccessMode  = AccessManagementNetwork
	DefaultSSHPort          = 22
	DefaultHypervisorUser   = "root"
	DefaultHypervisorAccess = HypervisorAccessSSH
	// MOSK's OVS DaemonSet (Mirantis/rockoon: osctl sosreport's collect_ovs_info).
	DefaultKubeNamespace       = "openstack"
	DefaultKubePreset          = KubePresetOVS
	DefaultKubePodSelector     = "application=openvswitch,component=openvswitch-vswitchd"
	DefaultKubeContainer       = "openvswitch-vswitchd"
	DefaultTrafficDuration     = 30 * time.Second // the seed's 30-second runs
	DefaultTrafficRepeats      = 1
	DefaultTrafficPort         = 5201
	DefaultCVLimitPercent      = 10.0
	DefaultStallTimeout        = 5 * time.Second
	DefaultUDPSetupRetries     = 2
	DefaultUDPSetupBackoff     = 2 * time.Second
	DefaultFloodPings          = 1000
	DefaultFlowDuration        = 20 * time.Second
	DefaultCaptureWindow       = 5 * time.Second
	DefaultCaptureFirstPackets = 10
	DefaultCaptureMaxPackets   = 10000
	DefaultSettle              = 3 * time.Second
	// TunnelAuto as offload.tunnel_device: find the device on each hypervisor.
	TunnelAuto          = "auto"
	DefaultTunnelDevice = TunnelAuto
	// VXLANAuto is TunnelAuto under the old key's name.
	VXLANAuto = TunnelAuto
	// The counters witness: the representor may move fewer than this many
	// packets during the window for "offloaded" (an upstream traffic-flow
	// test suite fails offload at >= 1000 packets through the representor),
	// and the guest's own interface must move at least
	// DefaultCountersMinFlowPackets for the window to prove anything.
	DefaultRepresentorMaxPackets  = 1000
	DefaultCountersMinFlowPackets = 10000
)

func (c *Config) has(path string) bool { return c.set[path] }

func (c *Config) applyDefaults() {
	if !c.has("run.name_prefix") {
		c.Run.NamePrefix = DefaultNamePrefix
	}
	if c.has("run.output_dir") {
		c.Run.OutputDir = resolvePath(c.File, c.Run.OutputDir)
	} else {
		c.Run.OutputDir = DefaultOutputDir
	}
	if c.Flavor.Create {
		if !c.has("flavor.vcpus") {
			c.Flavor.VCPUs = DefaultFlavorVCPUs
		}
		if !c.has("flavor.ram_mb") {
			c.Flavor.RAMMB = DefaultFlavorRAMMB
		}
		if !c.has("flavor.disk_gb") {
			c.Flavor.DiskGB = DefaultFlavorDiskGB
		}
	}
	if !c.has("network.type") {
		c.Network.Type = DefaultNetworkType
	}
	if !c.has("data_port.vnic_type") {
		c.DataPort.VNICType = DefaultVNICType
	}
	if !c.has("data_port.binding_profile") && c.DataPort.VNICType == "direct" {
		c.DataPort.BindingProfile = DefaultBindingProfile
	}
	if !c.has("placement.policy") {
		c.Placement.Policy = DefaultPlacementPolicy
	}
	if !c.has("guest_access.mode") {
		c.GuestAccess.Mode = DefaultGuestAccessMode
	}
	defaultEndpoint(c, "guest_access.jump", c.GuestAccess.Jump, DefaultSSHPort, "")

	c.SSH.PrivateKey = resolvePath(c.File, c.SSH.PrivateKey)
	c.SSH.KnownHosts = resolvePath(c.File, c.SSH.KnownHosts)
	if c.has("ssh.public_key") {
		c.SSH.PublicKey = resolvePath(c.File, c.SSH.PublicKey)
	} else if c.SSH.PrivateKey != "" {
		c.SSH.PublicKey = c.SSH.PrivateKey + ".pub"
	}

	if !c.has("hypervisors.access") {
		c.Hypervisors.Access = DefaultHypervisorAccess
	}
	if c.Hypervisors.Access == HypervisorAccessKubernetes {
		k := &c.Hypervisors.Kubernetes
		k.Kubeconfig = resolvePath(c.File, k.Kubeconfig)
		if !c.has("hypervisors.kubernetes.namespace") {
			k.Namespace = DefaultKubeNamespace
		}
		if !c.has("hypervisors.kubernetes.preset") {
			k.Preset = DefaultKubePreset
		}
		if p, ok := KubePresets[k.Preset]; ok {
			if !c.has("hypervisors.kubernetes.pod_selector") {
				k.PodSelector = p.PodSelector
			}
			if !c.has("hypervisors.kubernetes.container") {
				k.Container = p.Container
			}
		}
	}
	if !c.has("hypervisors.user") {
		c.Hypervisors.User = DefaultHypervisorUser
	}
	if !c.has("hypervisors.port") {
		c.Hypervisors.Port = DefaultSSHPort
	}
	defaultEndpoint(c, "hypervisors.jump", c.Hypervisors.Jump, DefaultSSHPort, "")
	for name, h := range c.Hypervisors.Hosts {
		p := joinMapKey("hypervisors.hosts", name)
		if !c.has(p + ".port") {
			h.Port = c.Hypervisors.Port
		}
		if !c.has(p + ".user") {
			h.User = c.Hypervisors.User
		}
		if h.Jump == nil {
			h.Jump = c.Hypervisors.Jump
		} else {
			defaultEndpoint(c, p+".jump", h.Jump, DefaultSSHPort, "")
		}
		c.Hypervisors.Hosts[name] = h
	}

	if !c.has("traffic.duration") {
		c.Traffic.Duration = DefaultTrafficDuration
	}
	if !c.has("traffic.repeats") {
		c.Traffic.Repeats = DefaultTrafficRepeats
	}
	if !c.has("traffic.port") {
		c.Traffic.Port = DefaultTrafficPort
	}
	if !c.has("traffic.cv_limit_percent") {
		c.Traffic.CVLimitPercent = DefaultCVLimitPercent
	}
	if !c.has("traffic.stall_timeout") {
		c.Traffic.StallTimeout = DefaultStallTimeout
	}
	if !c.has("traffic.udp_setup_retries") {
		c.Traffic.UDPSetupRetries = DefaultUDPSetupRetries
	}
	if !c.has("traffic.udp_setup_backoff") {
		c.Traffic.UDPSetupBackoff = DefaultUDPSetupBackoff
	}
	if !c.has("traffic.host_cpu") {
		c.Traffic.HostCPU = true
	}

	if !c.has("offload.checks") {
		c.Offload.Checks = append([]string(nil), results.AllChecks...)
	}
	if !c.has("offload.flood_pings") {
		c.Offload.FloodPings = DefaultFloodPings
	}
	if !c.has("offload.flow_duration") {
		c.Offload.FlowDuration = DefaultFlowDuration
	}
	if !c.has("offload.capture_window") {
		c.Offload.CaptureWindow = DefaultCaptureWindow
	}
	if !c.has("offload.capture_first_packets") {
		c.Offload.CaptureFirstPackets = DefaultCaptureFirstPackets
	}
	if !c.has("offload.capture_max_packets") {
		c.Offload.CaptureMaxPackets = DefaultCaptureMaxPackets
	}
	if !c.has("offload.settle") {
		c.Offload.Settle = DefaultSettle
	}
	if !c.has("offload.tunnel_device") && !c.has("offload.vxlan_device") {
		c.Offload.TunnelDevice = DefaultTunnelDevice
	}
	if !c.has("offload.representor_max_packets") {
		c.Offload.RepresentorMaxPackets = DefaultRepresentorMaxPackets
	}
	if !c.has("offload.counters_min_flow_packets") {
		c.Offload.CountersMinFlowPackets = DefaultCountersMinFlowPackets
	}

	c.applyFleetDefaults()

	// Intervals: every known name gets its default; a name in the file
	// keeps the fields it gives and takes the default for the others.
	merged := make(map[string]Interval, len(DefaultIntervals)+len(c.Intervals))
	for name, iv := range DefaultIntervals {
		merged[name] = iv
	}
	for name, iv := range c.Intervals {
		def, known := DefaultIntervals[name]
		p := joinMapKey("intervals", name)
		if known {
			if !c.has(p + ".timeout") {
				iv.Timeout = def.Timeout
			}
			if !c.has(p + ".poll") {
				iv.Poll = def.Poll
			}
		}
		merged[name] = iv
	}
	c.Intervals = merged
	// The families' sections (sections.go), in order.
	for _, s := range sections.All() {
		if s.Value.defaults != nil {
			s.Value.defaults(c)
		}
	}
}

// defaultEndpoint fills the port of an endpoint and of its jump chain.
func defaultEndpoint(c *Config, path string, e *SSHEndpoint, port int, user string) {
	for depth := 0; e != nil && depth < maxDepth; depth++ {
		if !c.has(path + ".port") {
			e.Port = port
		}
		if !c.has(path+".user") && user != "" {
			e.User = user
		}
		path += ".jump"
		e = e.Jump
	}
}
