package config

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math"
	"net/netip"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// maxKeyFileSize bounds the key and known_hosts files Validate reads.
const maxKeyFileSize = 1 << 20

// Enumerations accepted by Validate.
var (
	ExpectedPaths     = []string{string(results.PathASAP2), string(results.PathBaseline)}
	BindingProfiles   = []string{string(ProfileSet), string(ProfileNova)}
	GuestAccessModes  = []string{string(AccessManagementNetwork), string(AccessFloatingIP), string(AccessJump)}
	VNICTypes         = []string{"direct", "normal"}
	NetworkTypes      = []string{results.NetworkVXLAN, results.NetworkGeneve, results.NetworkGRE, results.NetworkVLAN, results.NetworkFlat}
	PlacementPolicies = []string{"anti-affinity", "soft-anti-affinity"}
	// ThresholdMetrics are exactly the metrics e2e/report evaluates.
	ThresholdMetrics = results.ThresholdMetrics()
	ThresholdOps     = []string{">=", "<="}
)

var namePrefixRE = regexp.MustCompile(`^[a-z][a-z0-9-]{0,19}$`)

// Validate checks the whole configuration and returns every problem at once
// as a Problems error (nil when the configuration is valid). It reads the SSH
// key and known_hosts files the configuration names, and $SSH_AUTH_SOCK when
// ssh.use_agent is true (or the WithGetenv replacement).
func (c *Config) Validate(opts ...Option) error {
	if probs := c.validate(newOptions(opts)); len(probs) > 0 {
		return probs
	}
	return nil
}

type validator struct {
	c     *Config
	o     options
	probs Problems
}

func (v *validator) suppressed(path string) bool {
	for b := range v.c.bad {
		if path == b || isUnder(path, b) || isUnder(b, path) {
			return true
		}
	}
	return false
}

func isUnder(path, parent string) bool {
	return parent != "" && (strings.HasPrefix(path, parent+".") || strings.HasPrefix(path, parent+"["))
}

func (v *validator) label(path string) string {
	if env, ok := v.c.env[path]; ok {
		return path + " (from $" + env + ")"
	}
	return path
}

// bad records a problem with the offending value.
func (v *validator) bad(path, msg string, value any) {
	if v.suppressed(path) {
		return
	}
	v.probs = append(v.probs, Problem{File: v.c.File, Path: v.label(path), Message: msg, Value: formatValue(value), HasValue: true})
}

// missing records a problem without a value (a required key is absent or empty).
func (v *validator) missing(path, msg string) {
	if v.suppressed(path) {
		return
	}
	v.probs = append(v.probs, Problem{File: v.c.File, Path: v.label(path), Message: msg})
}

func (v *validator) required(path, value, why string) bool {
	if strings.TrimSpace(value) == "" {
		msg := "is required"
		if why != "" {
			msg += " (" + why + ")"
		}
		v.missing(path, msg)
		return false
	}
	return true
}

func (v *validator) oneOf(path, value string, allowed []string) bool {
	for _, a := range allowed {
		if value == a {
			return true
		}
	}
	v.bad(path, "must be one of "+strings.Join(allowed, ", "), value)
	return false
}

func (v *validator) positive(path string, n int) {
	if n <= 0 {
		v.bad(path, "must be > 0", n)
	}
}

func (v *validator) positiveDuration(path string, d time.Duration) {
	if d <= 0 {
		v.bad(path, "must be > 0", d)
	}
}

func (v *validator) port(path string, p int) {
	if p < 1 || p > 65535 {
		v.bad(path, "must be between 1 and 65535", p)
	}
}

func (c *Config) validate(o options) Problems {
	v := &validator{c: c, o: o}
	// The families' sections (sections.go) run among these by their order.
	for _, s := range v.inOrder([]step{
		{10, v.run}, {20, v.cloud}, {30, v.image}, {40, v.flavor}, {50, v.network}, {60, v.dataPort},
		{70, v.placement}, {80, v.guestAccess}, {90, v.ssh}, {100, v.hypervisors}, {110, v.traffic},
		{120, v.offload}, {140, v.intervals}, {150, v.thresholds}, {170, v.fleet},
	}) {
		s.run()
	}
	return v.probs
}

func (v *validator) run() {
	r := v.c.Run
	if v.required("run.name_prefix", r.NamePrefix, "") && !namePrefixRE.MatchString(r.NamePrefix) {
		v.bad("run.name_prefix", "must be 1 to 20 characters of a-z, 0-9 and '-', starting with a letter", r.NamePrefix)
	}
	if v.required("run.expected_path", string(r.ExpectedPath), "asap2 or baseline; or set $"+EnvExpectedPath) {
		v.oneOf("run.expected_path", string(r.ExpectedPath), ExpectedPaths)
	}
	v.required("run.output_dir", r.OutputDir, "")
	if r.BuildID != "" && (len(r.BuildID) > MaxBuildIDLength || strings.IndexFunc(r.BuildID, func(c rune) bool { return unicode.IsSpace(c) || !unicode.IsPrint(c) }) >= 0) {
		v.bad("run.build_id", fmt.Sprintf("must be one word of at most %d printable characters (a CI pipeline id, a release tag); free text goes in run.build_label", MaxBuildIDLength), r.BuildID)
	}
}

// MaxBuildIDLength bounds run.build_id (it names the build in the history
// and in every report).
const MaxBuildIDLength = 128

func (v *validator) cloud() {
	v.required("cloud.tenant", v.c.Cloud.Tenant, "a clouds.yaml entry; $"+EnvCloud+" is used when the file leaves it out")
}

func (v *validator) image() {
	v.required("image.name", v.c.Image.Name, "an existing Glance image name or ID")
}

func (v *validator) flavor() {
	f := v.c.Flavor
	v.required("flavor.name", f.Name, "")
	if f.Create {
		if v.c.Cloud.Admin == "" {
			v.bad("flavor.create", "needs cloud.admin (creating a flavor is an admin operation)", true)
		}
		v.positive("flavor.vcpus", f.VCPUs)
		v.positive("flavor.ram_mb", f.RAMMB)
		v.positive("flavor.disk_gb", f.DiskGB)
		keys := make([]string, 0, len(f.ExtraSpecs))
		for k := range f.ExtraSpecs {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if strings.TrimSpace(k) == "" {
				v.bad("flavor.extra_specs", "has an empty key", k)
			}
		}
		return
	}
	for _, k := range []string{"vcpus", "ram_mb", "disk_gb", "extra_specs"} {
		if v.c.has("flavor." + k) {
			var val any
			switch k {
			case "vcpus":
				val = f.VCPUs
			case "ram_mb":
				val = f.RAMMB
			case "disk_gb":
				val = f.DiskGB
			default:
				val = f.ExtraSpecs
			}
			v.bad("flavor."+k, "only used with flavor.create: true (an existing flavor is reused as it is)", val)
		}
	}
}

func (v *validator) network() {
	n := v.c.Network
	if v.required("network.cidr", n.CIDR, "the tenant data subnet, e.g. 198.18.10.0/24") {
		prefix, err := netip.ParsePrefix(n.CIDR)
		switch {
		case err != nil:
			v.bad("network.cidr", "must be a CIDR such as 198.18.10.0/24", n.CIDR)
		case prefix.Masked() != prefix:
			v.bad("network.cidr", "has host bits set (the network is "+prefix.Masked().String()+")", n.CIDR)
		case prefix.Addr().Is4() && prefix.Bits() > 29, prefix.Addr().Is6() && prefix.Bits() > 125:
			v.bad("network.cidr", "is too small: needs room for the gateway, DHCP and two servers", n.CIDR)
		}
	}
	if n.MTU != 0 && (n.MTU < 68 || n.MTU > maxUnderlayMTU) {
		v.bad("network.mtu", fmt.Sprintf("must be 0 (Neutron chooses) or between 68 and %d", maxUnderlayMTU), n.MTU)
	}
	if v.oneOf("network.type", n.Type, NetworkTypes) {
		// Neutron takes the tunnel's headers off the underlay's MTU
		// (results.EncapOverhead): an MTU that leaves no room for them
		// under the largest underlay accepted here cannot be created.
		if oh := results.EncapOverhead(n.Type); oh > 0 && n.MTU > 0 && n.MTU+oh > maxUnderlayMTU {
			v.bad("network.mtu", fmt.Sprintf("leaves no room for %s's %d bytes of encapsulation over IPv4 under a %d-byte underlay: at most %d", n.Type, oh, maxUnderlayMTU, maxUnderlayMTU-oh), n.MTU)
		}
	}
}

// maxUnderlayMTU is the largest network.mtu accepted, and the largest
// underlay a tunnel network's MTU plus its encapsulation may need.
const maxUnderlayMTU = 9216

func (v *validator) dataPort() {
	d := v.c.DataPort
	vnicOK := v.oneOf("data_port.vnic_type", d.VNICType, VNICTypes)
	switch {
	case d.VNICType == "normal" && d.BindingProfile != "":
		v.bad("data_port.binding_profile", "only used with data_port.vnic_type direct", d.BindingProfile)
	case d.VNICType == "direct":
		if v.oneOf("data_port.binding_profile", string(d.BindingProfile), BindingProfiles) &&
			d.BindingProfile == ProfileSet && v.c.Cloud.Admin == "" {
			v.bad("data_port.binding_profile", `"set" needs cloud.admin (binding:profile is admin-only under the default policy; "nova" needs no admin)`, d.BindingProfile)
		}
	}
	if v.c.Run.ExpectedPath == results.PathASAP2 {
		if vnicOK && d.VNICType != "direct" {
			v.bad("data_port.vnic_type", `must be "direct" when run.expected_path is asap2`, d.VNICType)
		}
	}
	if d.PortSecurity {
		if first, last := v.c.Traffic.IperfPortRange(); first >= 1 && first <= 65535 && last > 65535 {
			v.bad("traffic.port", fmt.Sprintf("must leave room for the %d iperf3 ports the data security group admits (data_port.port_security true): at most %d", IperfPorts, 65535-IperfPorts+1), first)
		}
	}
}

func (v *validator) placement() {
	p := v.c.Placement
	v.oneOf("placement.policy", p.Policy, PlacementPolicies)
	if len(p.Hosts) == 0 {
		return
	}
	if len(p.Hosts) != 2 {
		v.bad("placement.hosts", "must name exactly 2 hypervisors", p.Hosts)
	} else if p.Hosts[0] == p.Hosts[1] {
		v.bad("placement.hosts", "must name 2 different hypervisors", p.Hosts)
	}
	for i, h := range p.Hosts {
		if strings.TrimSpace(h) == "" {
			v.missing(fmt.Sprintf("placement.hosts[%d]", i), "is empty")
		}
	}
	if v.c.Cloud.Admin == "" {
		v.bad("placement.hosts", "needs cloud.admin (creating a server on a named host is an admin operation)", p.Hosts)
	}
	if len(v.c.Offload.Checks) > 0 && len(v.c.Hypervisors.Hosts) > 0 {
		for i, h := range p.Hosts {
			if _, ok := v.c.Hypervisors.Hosts[h]; !ok && h != "" {
				v.bad(fmt.Sprintf("placement.hosts[%d]", i), "is not in hypervisors.hosts (the offload checks need SSH to it)", h)
			}
		}
	}
}

func (v *validator) guestAccess() {
	g := v.c.GuestAccess
	if v.oneOf("guest_access.mode", string(g.Mode), GuestAccessModes) {
		v.required("guest_access.management_network", g.ManagementNetwork, "an existing network the harness reaches, directly or through the jump host")
		if g.Mode == AccessFloatingIP {
			v.required("guest_access.floating_network", g.FloatingNetwork, "the external network of the floating IPs")
		} else if g.FloatingNetwork != "" {
			v.bad("guest_access.floating_network", "only used with guest_access.mode floating_ip", g.FloatingNetwork)
		}
		if g.Mode == AccessJump {
			if g.Jump == nil {
				v.missing("guest_access.jump", "is required with guest_access.mode jump")
			}
		} else if g.Jump != nil {
			v.bad("guest_access.jump", "only used with guest_access.mode jump", g.Jump.Address)
		}
	}
	v.endpoint("guest_access.jump", g.Jump, true)
	v.required("guest_access.user", g.User, "the guest image's login user, e.g. ubuntu")
}

// endpoint checks an SSH endpoint and its jump chain.
func (v *validator) endpoint(path string, e *SSHEndpoint, needUser bool) {
	for depth := 0; e != nil; depth++ {
		if depth >= 8 {
			v.missing(path, "jump chain longer than 8 hosts")
			return
		}
		v.required(path+".address", e.Address, "")
		v.port(path+".port", e.Port)
		if needUser {
			v.required(path+".user", e.User, "")
		}
		path += ".jump"
		e = e.Jump
		needUser = true
	}
}

func (v *validator) ssh() {
	s := v.c.SSH
	switch {
	case s.PrivateKey == "" && !s.UseAgent:
		v.missing("ssh.private_key", "is required unless ssh.use_agent is true")
	case s.PrivateKey != "":
		if data, ok := v.readFile("ssh.private_key", s.PrivateKey); ok {
			if _, err := ssh.ParseRawPrivateKey(data); err != nil {
				var pm *ssh.PassphraseMissingError
				if errors.As(err, &pm) {
					if !s.UseAgent {
						v.bad("ssh.private_key", "is protected by a passphrase: add it to ssh-agent and set ssh.use_agent: true (no passphrase belongs in this file)", s.PrivateKey)
					}
				} else {
					v.bad("ssh.private_key", "is not an SSH private key ("+err.Error()+")", s.PrivateKey)
				}
			}
		}
	}
	if s.UseAgent && v.o.getenv("SSH_AUTH_SOCK") == "" {
		v.bad("ssh.use_agent", "needs an agent but $SSH_AUTH_SOCK is not set", true)
	}
	if v.c.GuestAccess.Keypair == "" {
		if s.PublicKey == "" {
			v.missing("ssh.public_key", "is required when guest_access.keypair is empty (the harness creates the keypair from it)")
		} else if data, ok := v.readFile("ssh.public_key", s.PublicKey); ok {
			if _, _, _, _, err := ssh.ParseAuthorizedKey(data); err != nil {
				v.bad("ssh.public_key", "is not an SSH public key ("+err.Error()+")", s.PublicKey)
			}
		}
	}
	if s.KnownHosts != "" {
		if s.InsecureIgnoreHostKey {
			v.bad("ssh.insecure_ignore_host_key", "cannot be true together with ssh.known_hosts (choose one)", true)
		}
		if _, ok := v.readFile("ssh.known_hosts", s.KnownHosts); ok {
			if _, err := knownhosts.New(s.KnownHosts); err != nil {
				v.bad("ssh.known_hosts", "is not a known_hosts file ("+err.Error()+")", s.KnownHosts)
			}
		}
	}
}

// readFile reads a small regular file named by the config, recording why it
// cannot be read.
func (v *validator) readFile(path, name string) ([]byte, bool) {
	st, err := os.Stat(name)
	if err != nil {
		v.bad(path, "is not readable ("+describeFSError(err)+")", name)
		return nil, false
	}
	if !st.Mode().IsRegular() {
		v.bad(path, "is not a regular file", name)
		return nil, false
	}
	if st.Size() > maxKeyFileSize {
		v.bad(path, fmt.Sprintf("is larger than %d bytes", maxKeyFileSize), name)
		return nil, false
	}
	data, err := os.ReadFile(name)
	if err != nil {
		v.bad(path, "is not readable ("+describeFSError(err)+")", name)
		return nil, false
	}
	return data, true
}

func describeFSError(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

func (v *validator) hypervisors() {
	h := v.c.Hypervisors
	checks := len(v.c.Offload.Checks) > 0
	if strings.ContainsAny(h.OVSCommandPrefix, "\n\r\x00") {
		v.bad("hypervisors.ovs_command_prefix", "must be one line of shell text (no newline or NUL)", h.OVSCommandPrefix)
	}
	if !v.oneOf("hypervisors.access", h.Access, []string{HypervisorAccessSSH, HypervisorAccessKubernetes}) {
		return
	}
	if h.Access == HypervisorAccessKubernetes {
		v.kubernetes()
		for _, k := range []string{"hypervisors.hosts", "hypervisors.jump", "hypervisors.sudo", "hypervisors.ovs_command_prefix"} {
			if v.c.has(k) {
				v.missing(k, "is for hypervisors.access: ssh; with access: kubernetes commands run in the node's OVS pod (see hypervisors.kubernetes)")
			}
		}
		if checks && v.c.Cloud.Admin == "" {
			v.bad("offload.checks", "need cloud.admin (which hypervisor runs a server is admin-only; set offload.checks: [] to run without them)", v.c.Offload.Checks)
		}
		return
	}
	if v.c.has("hypervisors.kubernetes") {
		v.missing("hypervisors.kubernetes", "is only used with hypervisors.access: kubernetes")
	}
	v.required("hypervisors.user", h.User, "")
	v.port("hypervisors.port", h.Port)
	v.endpoint("hypervisors.jump", h.Jump, true)
	if checks && len(h.Hosts) == 0 {
		v.missing("hypervisors.hosts", "must map each compute node's hypervisor name to its SSH address when offload.checks is not empty (the checks run there)")
	}
	if checks && v.c.Cloud.Admin == "" {
		v.bad("offload.checks", "need cloud.admin (which hypervisor runs a server is admin-only; set offload.checks: [] to run without them)", v.c.Offload.Checks)
	}
	names := make([]string, 0, len(h.Hosts))
	for name := range h.Hosts {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		e := h.Hosts[name]
		p := joinMapKey("hypervisors.hosts", name)
		if strings.TrimSpace(name) == "" {
			v.bad("hypervisors.hosts", "has an empty hypervisor name", name)
		}
		v.required(p+".address", e.Address, "")
		v.port(p+".port", e.Port)
		v.required(p+".user", e.User, "")
		if v.c.has(p + ".jump") {
			v.endpoint(p+".jump", e.Jump, true)
		}
	}
}

// dnsLabel is a Kubernetes namespace or container name (RFC 1123 label);
// dnsSubdomain a node name (RFC 1123 subdomain).
var (
	dnsLabel     = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	dnsSubdomain = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
	// selectorTerm is one term of an equality-based label selector
	// (key=value, key==value, key!=value, key, !key); set-based terms
	// (key in (a,b)) are not needed to find a DaemonSet's pods.
	selectorTerm = regexp.MustCompile(`^!?([a-zA-Z0-9]([-a-zA-Z0-9_.]*[a-zA-Z0-9])?/)?[a-zA-Z0-9]([-a-zA-Z0-9_.]*[a-zA-Z0-9])?((==?|!=)([a-zA-Z0-9]([-a-zA-Z0-9_.]*[a-zA-Z0-9])?)?)?$`)
)

func (v *validator) kubernetes() {
	k := v.c.Hypervisors.Kubernetes
	if k.Kubeconfig != "" {
		if st, err := os.Stat(k.Kubeconfig); err != nil {
			v.bad("hypervisors.kubernetes.kubeconfig", "is not readable ("+describeFSError(err)+")", k.Kubeconfig)
		} else if !st.Mode().IsRegular() {
			v.bad("hypervisors.kubernetes.kubeconfig", "is not a regular file", k.Kubeconfig)
		}
	}
	// An unknown preset gives no selector or container: that is its one
	// problem, not three.
	preset := v.oneOf("hypervisors.kubernetes.preset", k.Preset, []string{KubePresetOVS, KubePresetOVN})
	if len(k.Namespace) > 63 || !dnsLabel.MatchString(k.Namespace) {
		v.bad("hypervisors.kubernetes.namespace", "must be a Kubernetes namespace name (1-63 of a-z0-9-, starting and ending with a letter or digit)", k.Namespace)
	}
	if (preset || v.c.has("hypervisors.kubernetes.container")) && (len(k.Container) > 63 || !dnsLabel.MatchString(k.Container)) {
		v.bad("hypervisors.kubernetes.container", "must be a container name (1-63 of a-z0-9-, starting and ending with a letter or digit)", k.Container)
	}
	switch {
	case !preset && !v.c.has("hypervisors.kubernetes.pod_selector"):
	case strings.TrimSpace(k.PodSelector) == "":
		v.bad("hypervisors.kubernetes.pod_selector", "must not be empty (every pod in the namespace is not one node's OVS pod)", k.PodSelector)
	default:
		for _, term := range strings.Split(k.PodSelector, ",") {
			if !selectorTerm.MatchString(strings.TrimSpace(term)) {
				v.bad("hypervisors.kubernetes.pod_selector", fmt.Sprintf("must be a label selector of key=value, key!=value, key or !key terms separated by commas; %q is none of these", strings.TrimSpace(term)), k.PodSelector)
				break
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(k.NodeNames)) {
		node := k.NodeNames[name]
		if strings.TrimSpace(name) == "" {
			v.bad("hypervisors.kubernetes.node_names", "has an empty hypervisor name", name)
			continue
		}
		if len(node) > 253 || !dnsSubdomain.MatchString(node) {
			v.bad(joinMapKey("hypervisors.kubernetes.node_names", name), "must be a Kubernetes node name (lower-case letters, digits, '-' and '.')", node)
		}
	}
	if k.DebugNamespace != "" && (len(k.DebugNamespace) > 63 || !dnsLabel.MatchString(k.DebugNamespace)) {
		v.bad("hypervisors.kubernetes.debug_namespace", "must be a Kubernetes namespace name (1-63 of a-z0-9-, starting and ending with a letter or digit)", k.DebugNamespace)
	}
	switch {
	case k.DebugImage != "" && (strings.TrimSpace(k.DebugImage) != k.DebugImage || strings.ContainsAny(k.DebugImage, " \t\r\n\x00")):
		v.bad("hypervisors.kubernetes.debug_image", "must be an image reference without blanks (e.g. registry.example/tools/netshoot:v0.13) or "+DebugImageAuto, k.DebugImage)
	case k.DebugImage != DebugImageAuto && strings.EqualFold(k.DebugImage, DebugImageAuto):
		// An image named so would need a registry's short name, which
		// Kubernetes refuses in upper case anyway: the user meant auto.
		v.bad("hypervisors.kubernetes.debug_image", "write "+DebugImageAuto+" in lower case (the OVS pod's own image, running the host's tools)", k.DebugImage)
	}
}

func (v *validator) traffic() {
	t := v.c.Traffic
	v.profiles("traffic.profiles", t.Profiles)
	v.positiveDuration("traffic.duration", t.Duration)
	if t.Omit < 0 {
		v.bad("traffic.omit", "must be >= 0", t.Omit)
	} else if t.Duration > 0 && t.Omit >= t.Duration {
		v.bad("traffic.omit", "must be shorter than traffic.duration ("+t.Duration.String()+")", t.Omit)
	}
	if t.Duration > 0 && t.Duration%time.Second != 0 {
		v.bad("traffic.duration", "must be whole seconds (iperf3 -t)", t.Duration)
	}
	if t.Omit > 0 && t.Omit%time.Second != 0 {
		v.bad("traffic.omit", "must be whole seconds (iperf3 -O)", t.Omit)
	}
	if t.Repeats < 1 {
		v.bad("traffic.repeats", "must be >= 1", t.Repeats)
	}
	v.port("traffic.port", t.Port)
	if t.MaxStreamsPerProcess < 0 {
		v.bad("traffic.max_streams_per_process", "must be >= 0 (0 = automatic)", t.MaxStreamsPerProcess)
	}
	if t.CVLimitPercent < 0 || math.IsNaN(t.CVLimitPercent) || math.IsInf(t.CVLimitPercent, 0) {
		v.bad("traffic.cv_limit_percent", "must be >= 0 (0 = never mark a profile unstable)", t.CVLimitPercent)
	}
	if t.LineRateBps < 0 || math.IsNaN(t.LineRateBps) || math.IsInf(t.LineRateBps, 0) {
		v.bad("traffic.line_rate_bps", "must be >= 0 (0 = unknown)", t.LineRateBps)
	}
	listen := v.c.Intervals[IntervalIperfServer].Timeout
	switch st := t.StallTimeout; {
	case st == 0:
	case st < IperfMinStallTimeout:
		v.bad("traffic.stall_timeout", "must be 0 (no guard) or at least "+IperfMinStallTimeout.String()+" (iperf3's smallest --rcv-timeout)", st)
	case st%time.Millisecond != 0:
		v.bad("traffic.stall_timeout", "must be whole milliseconds (iperf3 --rcv-timeout and --snd-timeout take ms)", st)
	case listen > 0 && st >= listen:
		v.bad("traffic.stall_timeout", "must be shorter than intervals.iperf_server.timeout ("+listen.String()+
			"): the harness cuts an iperf3 client at -t + -O + that timeout, and iperf3 must give up on a silent peer first, with its own error", st)
	}
	if t.UDPSetupRetries < 0 {
		v.bad("traffic.udp_setup_retries", "must be >= 0 (0 = never run a UDP test again)", t.UDPSetupRetries)
	}
	if t.UDPSetupBackoff < 0 {
		v.bad("traffic.udp_setup_backoff", "must be >= 0", t.UDPSetupBackoff)
	}
}

// IperfMinStallTimeout is the smallest --rcv-timeout iperf3 accepts
// (iperf3.MinRcvTimeout; config cannot import e2e/iperf3, a test pins the two).
const IperfMinStallTimeout = 100 * time.Millisecond

// profiles checks profile IDs: non-empty, not repeated, and known when the
// caller gave KnownProfiles.
func (v *validator) profiles(path string, ids []string) {
	seen := map[string]bool{}
	for i, id := range ids {
		p := fmt.Sprintf("%s[%d]", path, i)
		switch {
		case strings.TrimSpace(id) == "":
			v.missing(p, "is empty")
		case seen[id]:
			v.bad(p, "is repeated", id)
		default:
			v.profile(p, id)
		}
		seen[id] = true
	}
}

func (v *validator) profile(path, id string) {
	if !v.o.profilesSet {
		return
	}
	for _, k := range v.o.profiles {
		if k == id {
			return
		}
	}
	v.bad(path, "is not a known profile (known: "+strings.Join(v.o.profiles, ", ")+")", id)
}

func (v *validator) offload() {
	o := v.c.Offload
	seen := map[string]bool{}
	for i, c := range o.Checks {
		p := fmt.Sprintf("offload.checks[%d]", i)
		if seen[c] {
			v.bad(p, "is repeated", c)
			continue
		}
		seen[c] = true
		v.oneOf(p, c, results.AllChecks)
	}
	if v.c.Run.ExpectedPath == results.PathASAP2 && len(o.Checks) > 0 {
		var absent []string
		for _, c := range results.AllChecks {
			if !seen[c] {
				absent = append(absent, c)
			}
		}
		switch {
		case !seen[results.CheckTC]:
			// dpctl's offloaded:yes is OVS's own claim (it also says so when tc
			// reported no state); only tc's in_hw is the hardware's word.
			v.bad("offload.checks", "must include tc when run.expected_path is asap2 (tc's in_hw is the ground truth of hardware offload; the other checks corroborate it)", o.Checks)
		case len(absent) > 0 && !o.PartialProof:
			v.bad("offload.checks", fmt.Sprintf("leaves out %s: an asap2 run needs all of %s to prove offload; to accept fewer set offload.partial_proof: true (the report then says \"partial proof\")",
				strings.Join(absent, ", "), strings.Join(results.AllChecks, ", ")), o.Checks)
		}
	}
	if o.RepresentorMaxPackets < 1 {
		v.bad("offload.representor_max_packets", "must be >= 1", o.RepresentorMaxPackets)
	}
	if o.CountersMinFlowPackets <= o.RepresentorMaxPackets {
		v.bad("offload.counters_min_flow_packets", fmt.Sprintf("must exceed offload.representor_max_packets (%d): a window in which the guest moved fewer packets cannot tell a quiet representor from a quiet flow", o.RepresentorMaxPackets), o.CountersMinFlowPackets)
	}
	if seen[results.CheckRepresentor] {
		// The representor capture (e2e/offload CaptureFilter, JudgeCapture)
		// filters and counts IPv4 packets: an IPv6 flow would never be
		// captured, so the check would say "offloaded" on any path.
		if prefix, err := netip.ParsePrefix(v.c.Network.CIDR); err == nil && prefix.Addr().Is6() {
			v.bad("network.cidr", "must be IPv4 when offload.checks has representor (its capture counts IPv4 packets only: an IPv6 flow would always look offloaded)", v.c.Network.CIDR)
		}
	}
	v.positive("offload.flood_pings", o.FloodPings)
	v.positiveDuration("offload.flow_duration", o.FlowDuration)
	if o.FlowDuration > 0 && o.FlowDuration%time.Second != 0 {
		// The sustained flow is an iperf3 run: -t takes whole seconds, and a
		// fraction would only fail after the topology was built.
		v.bad("offload.flow_duration", "must be whole seconds (the sustained flow is iperf3 -t)", o.FlowDuration)
	}
	v.positiveDuration("offload.capture_window", o.CaptureWindow)
	v.flowBitrate()
	if o.CaptureFirstPackets < 0 {
		v.bad("offload.capture_first_packets", "must be >= 0", o.CaptureFirstPackets)
	}
	if o.CaptureMaxPackets <= o.CaptureFirstPackets {
		v.bad("offload.capture_max_packets", fmt.Sprintf("must exceed offload.capture_first_packets (%d)", o.CaptureFirstPackets), o.CaptureMaxPackets)
	}
	v.positiveDuration("offload.settle", o.Settle)
	// The checks start after settle and sample twice, capture_window apart
	// (the capture itself lasts capture_window): all inside the flow.
	switch need := o.Settle + 2*o.CaptureWindow; {
	case o.CaptureWindow > 0 && o.FlowDuration > 0 && o.CaptureWindow >= o.FlowDuration:
		v.bad("offload.capture_window", "must be shorter than offload.flow_duration ("+o.FlowDuration.String()+")", o.CaptureWindow)
	case o.Settle > 0 && o.CaptureWindow > 0 && o.FlowDuration > 0 && need >= o.FlowDuration:
		v.bad("offload.flow_duration", "must exceed offload.settle + 2 × offload.capture_window ("+need.String()+")", o.FlowDuration)
	}
	v.tunnelDevice()
}

// flowBitrate checks offload.flow_bitrate: >= 0, and with the counters
// check, enough for the guest's interface to move
// offload.counters_min_flow_packets in offload.capture_window even in
// frames of the network's MTU (the fewest packets a rate makes; network.mtu,
// or JumboFrameBytes where Neutron chooses it): below that an offloaded
// flow's window would prove nothing, and an asap2 run would fail on it.
func (v *validator) flowBitrate() {
	o := v.c.Offload
	switch {
	case o.FlowBitrate < 0:
		v.bad("offload.flow_bitrate", "must be >= 0 bit/s (0 = the flows' profiles: TCP unlimited, UDP -b 0)", o.FlowBitrate)
	case o.FlowBitrate > 0 && o.CaptureWindow > 0 && slices.Contains(o.Checks, results.CheckCounters):
		frame, from := v.c.Network.MTU, "network.mtu"
		if frame <= 0 {
			frame, from = JumboFrameBytes, "the largest Neutron may choose: network.mtu is not set"
		}
		frames := float64(o.FlowBitrate) * o.CaptureWindow.Seconds() / float64(8*frame)
		if frames < float64(o.CountersMinFlowPackets) {
			v.bad("offload.flow_bitrate", fmt.Sprintf("moves as few as %.0f packets of %d bytes (%s) in offload.capture_window (%s), fewer than offload.counters_min_flow_packets (%d): the counters check could not conclude on an offloaded flow; at least %d bit/s",
				frames, frame, from, o.CaptureWindow, o.CountersMinFlowPackets,
				int64(math.Ceil(float64(o.CountersMinFlowPackets)*float64(8*frame)/o.CaptureWindow.Seconds()))), o.FlowBitrate)
		}
	}
}

// JumboFrameBytes is the frame offload.flow_bitrate's check counts packets
// of where network.mtu is unset: a jumbo underlay's tenant networks get
// MTUs near 9000, and a rate moves the fewest packets in the largest frames.
const JumboFrameBytes = 9000

// tunnelDevice checks offload.tunnel_device, or offload.vxlan_device (its
// old name) when the file uses that: a device name, auto or "", and one
// that is not the other tunnel type's kernel device under network.type.
func (v *validator) tunnelDevice() {
	o := v.c.Offload
	key, dev := "offload.tunnel_device", o.TunnelDevice
	switch {
	case v.c.has("offload.tunnel_device") && v.c.has("offload.vxlan_device"):
		v.bad("offload.vxlan_device", "is the old name of offload.tunnel_device, which is also set: keep offload.tunnel_device alone", o.VXLANDevice)
		return
	case v.c.has("offload.vxlan_device"):
		key, dev = "offload.vxlan_device", o.VXLANDevice
	}
	if dev != "" && !ifNameRE.MatchString(dev) {
		v.bad(key, "must be auto (found on each hypervisor), a network interface name (1-15 characters, no '/', ':' or blanks) or empty to skip it", dev)
		return
	}
	// OVS names its kernel tunnel devices vxlan_sys_<port> and
	// genev_sys_<port>: naming one of them for a network of the other type
	// examines a device that carries none of the run's packets.
	for _, m := range []struct{ prefix, typ string }{{"vxlan_sys_", results.NetworkVXLAN}, {"genev_sys_", results.NetworkGeneve}} {
		if strings.HasPrefix(dev, m.prefix) && (v.c.Network.Type == results.NetworkVXLAN || v.c.Network.Type == results.NetworkGeneve) && v.c.Network.Type != m.typ {
			v.bad(key, fmt.Sprintf("is OVS's %s device but network.type is %s (its decap rules are on %s_sys_<port>; auto finds it)", m.typ, v.c.Network.Type, map[string]string{results.NetworkVXLAN: "vxlan", results.NetworkGeneve: "genev"}[v.c.Network.Type]), dev)
		}
	}
}

// DecapDevice is the tunnel device setting in force: offload.tunnel_device,
// else offload.vxlan_device (its old name); TunnelAuto, a device name, or
// "" to skip the decap side.
func (o Offload) DecapDevice() string {
	if o.TunnelDevice != "" {
		return o.TunnelDevice
	}
	return o.VXLANDevice
}

// ifNameRE is what Linux accepts as an interface name (IFNAMSIZ-1).
var ifNameRE = regexp.MustCompile(`^[^/:\s]{1,15}$`)

func (v *validator) intervals() {
	names := make([]string, 0, len(v.c.Intervals))
	for name := range v.c.Intervals {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		iv := v.c.Intervals[name]
		p := joinMapKey("intervals", name)
		if _, ok := DefaultIntervals[name]; !ok {
			v.missing(p, "unknown interval (known: "+strings.Join(IntervalNames(), ", ")+")")
			continue
		}
		v.positiveDuration(p+".timeout", iv.Timeout)
		v.positiveDuration(p+".poll", iv.Poll)
		if iv.Timeout > 0 && iv.Poll > 0 && iv.Timeout < iv.Poll {
			v.bad(p+".timeout", "must be >= "+p+".poll ("+iv.Poll.String()+")", iv.Timeout)
		}
	}
}

func (v *validator) thresholds() {
	names := map[string]bool{}
	for i, t := range v.c.Thresholds {
		p := fmt.Sprintf("thresholds[%d]", i)
		if v.required(p+".name", t.Name, "") {
			if names[t.Name] {
				v.bad(p+".name", "is repeated", t.Name)
			}
			names[t.Name] = true
		}
		if v.required(p+".profile", t.Profile, "") {
			if !v.familyProfile(p+".profile", t.Metric, t.Profile) {
				v.profile(p+".profile", t.Profile)
			}
		}
		metricOK := v.required(p+".metric", t.Metric, strings.Join(ThresholdMetrics, ", ")) &&
			v.oneOf(p+".metric", t.Metric, ThresholdMetrics)
		if v.required(p+".op", t.Op, ">= or <=") {
			v.oneOf(p+".op", t.Op, ThresholdOps)
		}
		if metricOK && t.Metric == results.MetricCV && v.c.Traffic.Repeats < 2 {
			v.bad(p+".metric", fmt.Sprintf("cv_percent needs traffic.repeats >= 2 (the CV of one repeat is 0, the rule could never fail), traffic.repeats is %d", v.c.Traffic.Repeats), t.Metric)
		}
		if metricOK {
			if t.Metric == results.MetricGain {
				if t.Path != "" {
					v.bad(p+".path", "must be empty for metric gain (gain compares asap2 with baseline)", t.Path)
				}
			} else if v.required(p+".path", t.Path, "asap2 or baseline") {
				v.oneOf(p+".path", t.Path, ExpectedPaths)
			}
		}
		switch {
		case math.IsNaN(t.Value) || math.IsInf(t.Value, 0):
			v.bad(p+".value", "must be a finite number", t.Value)
		case !v.c.has(p + ".value"):
			v.missing(p+".value", "is required")
		case metricOK && results.RuleValueProblem(t.Metric, t.Op, t.Value) != "":
			v.bad(p+".value", results.RuleValueProblem(t.Metric, t.Op, t.Value), t.Value)
		}
	}
}
