package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// assertMessages checks that err is Problems with exactly the want messages,
// in order. home, when not empty, is shown as "$HOME" in the messages.
func assertMessages(t *testing.T, err error, want []string, home string) {
	t.Helper()
	var probs Problems
	if !errors.As(err, &probs) {
		t.Fatalf("want Problems, got %T: %v", err, err)
	}
	got := probs.Messages()
	if home != "" {
		for i := range got {
			got[i] = strings.ReplaceAll(got[i], home, "$HOME")
		}
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("messages differ\n--- got:\n%s\n--- want:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// The files in testdata/ were written for these tests; each holds the
// mistakes named in its first comment line.
func TestBadConfigs(t *testing.T) {
	cases := []struct {
		file string
		want []string
	}{
		{"empty.yaml", []string{
			"testdata/empty.yaml: empty file: no configuration in it",
		}},
		{"syntax.yaml", []string{
			"testdata/syntax.yaml: invalid YAML: line 4: mapping values are not allowed in this context",
		}},
		{"two_documents.yaml", []string{
			"testdata/two_documents.yaml:4: more than one YAML document; put the whole configuration in one",
		}},
		{"scalar.yaml", []string{
			"testdata/scalar.yaml:2: the top level must be a mapping of sections (run, cloud, image, ...)",
		}},
		{"missing.yaml", []string{
			"testdata/missing.yaml: run.expected_path: is required (asap2 or baseline; or set $ASAP2E2E_EXPECTED_PATH)",
			"testdata/missing.yaml: cloud.tenant: is required (a clouds.yaml entry; $OS_CLOUD is used when the file leaves it out)",
			"testdata/missing.yaml: image.name: is required (an existing Glance image name or ID)",
			"testdata/missing.yaml: flavor.name: is required",
			"testdata/missing.yaml: network.cidr: is required (the tenant data subnet, e.g. 198.18.10.0/24)",
			"testdata/missing.yaml: guest_access.management_network: is required (an existing network the harness reaches, directly or through the jump host)",
			"testdata/missing.yaml: guest_access.user: is required (the guest image's login user, e.g. ubuntu)",
			"testdata/missing.yaml: ssh.private_key: is required unless ssh.use_agent is true",
			"testdata/missing.yaml: ssh.public_key: is required when guest_access.keypair is empty (the harness creates the keypair from it)",
			"testdata/missing.yaml: hypervisors.hosts: must map each compute node's hypervisor name to its SSH address when offload.checks is not empty (the checks run there)",
			`testdata/missing.yaml: offload.checks: need cloud.admin (which hypervisor runs a server is admin-only; set offload.checks: [] to run without them), got ["tc" "representor" "dpctl" "counters"]`,
		}},
		{"unknown_keys.yaml", []string{
			"testdata/unknown_keys.yaml:3: colud: unknown key (known keys here: aging, churn, cloud, connections, data_port, failover, flavor, fleet, fragments, guest_access, hypervisors, image, intervals, latency, network, offload, placement, pps, rule_scale, run, ssh, thresholds, traffic)",
			"testdata/unknown_keys.yaml:7: cloud.password: secrets do not belong in the harness config: put credentials in clouds.yaml / secure.yaml (or OS_* variables) and name the entry in cloud.tenant / cloud.admin",
			"testdata/unknown_keys.yaml:8: cloud.os_token: secrets do not belong in the harness config: put credentials in clouds.yaml / secure.yaml (or OS_* variables) and name the entry in cloud.tenant / cloud.admin",
			"testdata/unknown_keys.yaml:13: flavor.vcpu: unknown key (known keys here: create, disk_gb, extra_specs, name, ram_mb, vcpus)",
			`testdata/unknown_keys.yaml:24: hypervisors.hosts["cmp-1.lab"].adress: unknown key (known keys here: address, jump, port, user)`,
			`testdata/unknown_keys.yaml: hypervisors.hosts["cmp-1.lab"].address: is required`,
		}},
		{"types.yaml", []string{
			"testdata/types.yaml:10: flavor.vcpus: must be a whole number, got 2.5",
			"testdata/types.yaml:9: flavor.create: cannot unmarshal !!str `maybe` into bool",
			"testdata/types.yaml:16: network.mtu: cannot unmarshal !!seq into int",
			"testdata/types.yaml:17: network.cidr: cannot unmarshal !!map into string",
			`testdata/types.yaml:27: traffic.duration: cannot unmarshal !!int ` + "`30`" + ` into time.Duration (durations are Go durations such as "30s", "2m", "500ms")`,
			`testdata/types.yaml:28: traffic.omit: cannot unmarshal !!str ` + "`5 seconds`" + ` into time.Duration (durations are Go durations such as "30s", "2m", "500ms")`,
		}},
		{"values.yaml", []string{
			`testdata/values.yaml: run.name_prefix: must be 1 to 20 characters of a-z, 0-9 and '-', starting with a letter, got "ASAP2_e2e"`,
			`testdata/values.yaml: run.expected_path: must be one of asap2, baseline, got "fast"`,
			`testdata/values.yaml: flavor.create: needs cloud.admin (creating a flavor is an admin operation), got true`,
			`testdata/values.yaml: flavor.vcpus: must be > 0, got -2`,
			`testdata/values.yaml: flavor.ram_mb: must be > 0, got 0`,
			`testdata/values.yaml: network.cidr: has host bits set (the network is 198.18.10.0/24), got "198.18.10.7/24"`,
			`testdata/values.yaml: network.mtu: must be 0 (Neutron chooses) or between 68 and 9216, got 9500`,
			`testdata/values.yaml: network.type: must be one of vxlan, geneve, gre, vlan, flat, got "vxaln"`,
			`testdata/values.yaml: data_port.binding_profile: "set" needs cloud.admin (binding:profile is admin-only under the default policy; "nova" needs no admin), got "set"`,
			`testdata/values.yaml: placement.policy: must be one of anti-affinity, soft-anti-affinity, got "affinity"`,
			`testdata/values.yaml: placement.hosts: must name 2 different hypervisors, got ["cmp-1" "cmp-1"]`,
			`testdata/values.yaml: placement.hosts: needs cloud.admin (creating a server on a named host is an admin operation), got ["cmp-1" "cmp-1"]`,
			`testdata/values.yaml: guest_access.mode: must be one of management_network, floating_ip, jump, got "vpn"`,
			`testdata/values.yaml: guest_access.jump.user: is required`,
			`testdata/values.yaml: guest_access.jump.jump.address: is required`,
			`testdata/values.yaml: guest_access.jump.jump.port: must be between 1 and 65535, got 70000`,
			`testdata/values.yaml: guest_access.jump.jump.user: is required`,
			`testdata/values.yaml: ssh.private_key: is not readable (no such file or directory), got "$HOME/.ssh/id_missing"`,
			`testdata/values.yaml: ssh.public_key: is not an SSH public key (ssh: no key found), got "$HOME/.ssh/not_a_key"`,
			`testdata/values.yaml: ssh.insecure_ignore_host_key: cannot be true together with ssh.known_hosts (choose one), got true`,
			`testdata/values.yaml: traffic.profiles[1]: is not a known profile (known: tcp-p1, tcp-p15), got "tcp-p99"`,
			`testdata/values.yaml: traffic.profiles[2]: is repeated, got "tcp-p1"`,
			`testdata/values.yaml: traffic.omit: must be shorter than traffic.duration (10s), got 10s`,
			`testdata/values.yaml: traffic.repeats: must be >= 1, got 0`,
			`testdata/values.yaml: traffic.port: must be between 1 and 65535, got 0`,
			`testdata/values.yaml: offload.capture_window: must be shorter than offload.flow_duration (5s), got 10s`,
			`testdata/values.yaml: intervals.delete.timeout: must be >= intervals.delete.poll (10s), got 5s`,
			`testdata/values.yaml: intervals.server_actve: unknown interval (known: aging_sample, api_retry, churn_sample, command, conntrack_sample, data_path, debug_pod, delete, hypervisor_ssh, iperf_server, kube_api, port_active, rate_limit, rule_scale_sample, server_active, ssh_ready)`,
			`testdata/values.yaml: intervals.ssh_ready.poll: must be > 0, got -1s`,
			`testdata/values.yaml: thresholds[0].profile: is not a known profile (known: tcp-p1, tcp-p15), got "udp-b0-p15"`,
			`testdata/values.yaml: thresholds[0].value: must be between 0 and 100 for loss_percent (a percentage), got 150`,
			`testdata/values.yaml: thresholds[1].name: is repeated, got "t"`,
			`testdata/values.yaml: thresholds[1].op: must be one of >=, <=, got "=="`,
			`testdata/values.yaml: thresholds[1].path: must be empty for metric gain (gain compares asap2 with baseline), got "asap2"`,
			`testdata/values.yaml: thresholds[2].name: is required`,
			`testdata/values.yaml: thresholds[2].metric: must be one of delivered_bps, offered_bps, loss_percent, retransmits, gain, cv_percent, host_cores_busy, host_cores_per_10gbps, ovs_cores, delivered_pps, offered_pps, ndr_bps, pdr_bps, offloaded_share, time_to_offload_seconds, rules_per_second, churn_count, reinstall_ms, reoffload_ms, failover_outage_ms, latency_p50_us, latency_p99_us, latency_p99_9_us, latency_max_us, first_packet_p50_us, first_packet_max_us, first_packet_ratio, got "bps"`,
			`testdata/values.yaml: thresholds[2].value: is required`,
			`testdata/values.yaml: thresholds[3].value: must be > 0 for offered_bps (bits per second), got 0`,
			`testdata/values.yaml: thresholds[4].value: must be >= 0 for retransmits, got -1`,
			`testdata/values.yaml: thresholds[5].metric: cv_percent needs traffic.repeats >= 2 (the CV of one repeat is 0, the rule could never fail), traffic.repeats is 0, got "cv_percent"`,
			`testdata/values.yaml: thresholds[5].value: must be >= 0 for cv_percent (a percentage), got -5`,
			`testdata/values.yaml: thresholds[6].value: must be > 0 with op >= (retransmits is never negative: the rule could never fail), got 0`,
		}},
		{"asap2_rules.yaml", []string{
			`testdata/asap2_rules.yaml: flavor.vcpus: only used with flavor.create: true (an existing flavor is reused as it is), got 8`,
			`testdata/asap2_rules.yaml: data_port.vnic_type: must be "direct" when run.expected_path is asap2, got "normal"`,
			`testdata/asap2_rules.yaml: placement.hosts: must name exactly 2 hypervisors, got ["cmp-1"]`,
			`testdata/asap2_rules.yaml: placement.hosts[0]: is not in hypervisors.hosts (the offload checks need SSH to it), got "cmp-1"`,
			`testdata/asap2_rules.yaml: guest_access.floating_network: is required (the external network of the floating IPs)`,
			`testdata/asap2_rules.yaml: guest_access.jump: only used with guest_access.mode jump, got "198.18.20.10"`,
			`testdata/asap2_rules.yaml: ssh.use_agent: needs an agent but $SSH_AUTH_SOCK is not set, got true`,
			`testdata/asap2_rules.yaml: hypervisors.hosts.cmp-2.port: must be between 1 and 65535, got 0`,
			`testdata/asap2_rules.yaml: hypervisors.hosts.cmp-2.user: is required`,
			`testdata/asap2_rules.yaml: traffic.duration: must be whole seconds (iperf3 -t), got 1.5s`,
			`testdata/asap2_rules.yaml: offload.checks[1]: must be one of tc, representor, dpctl, counters, got "ethtool"`,
			`testdata/asap2_rules.yaml: offload.checks[2]: is repeated, got "tc"`,
			`testdata/asap2_rules.yaml: offload.checks: leaves out representor, dpctl, counters: an asap2 run needs all of tc, representor, dpctl, counters to prove offload; to accept fewer set offload.partial_proof: true (the report then says "partial proof"), got ["tc" "ethtool" "tc"]`,
			`testdata/asap2_rules.yaml: offload.flood_pings: must be > 0, got 0`,
		}},
		{"offload.yaml", []string{
			`testdata/offload.yaml: hypervisors.ovs_command_prefix: must be one line of shell text (no newline or NUL), got "docker exec\nopenvswitch_vswitchd"`,
			`testdata/offload.yaml: offload.flow_duration: must be whole seconds (the sustained flow is iperf3 -t), got 12.5s`,
			`testdata/offload.yaml: offload.flow_bitrate: must be >= 0 bit/s (0 = the flows' profiles: TCP unlimited, UDP -b 0), got -1`,
			`testdata/offload.yaml: offload.capture_max_packets: must exceed offload.capture_first_packets (10), got 10`,
			`testdata/offload.yaml: offload.flow_duration: must exceed offload.settle + 2 × offload.capture_window (13s), got 12.5s`,
			`testdata/offload.yaml: offload.vxlan_device: must be auto (found on each hypervisor), a network interface name (1-15 characters, no '/', ':' or blanks) or empty to skip it, got "vxlan sys/4789"`,
		}},
		{"offload_proof.yaml", []string{
			`testdata/offload_proof.yaml: offload.checks: must include tc when run.expected_path is asap2 (tc's in_hw is the ground truth of hardware offload; the other checks corroborate it), got ["representor" "dpctl"]`,
			`testdata/offload_proof.yaml: offload.representor_max_packets: must be >= 1, got 0`,
			`testdata/offload_proof.yaml: offload.counters_min_flow_packets: must exceed offload.representor_max_packets (0): a window in which the guest moved fewer packets cannot tell a quiet representor from a quiet flow, got 0`,
		}},
		{"offload_subset.yaml", []string{
			`testdata/offload_subset.yaml: offload.checks: leaves out representor, counters: an asap2 run needs all of tc, representor, dpctl, counters to prove offload; to accept fewer set offload.partial_proof: true (the report then says "partial proof"), got ["tc" "dpctl"]`,
		}},
		{"offload_bitrate.yaml", []string{
			`testdata/offload_bitrate.yaml: offload.flow_bitrate: moves as few as 5000 packets of 1500 bytes (network.mtu) in offload.capture_window (3s), fewer than offload.counters_min_flow_packets (10000): the counters check could not conclude on an offloaded flow; at least 40000000 bit/s, got 20000000`,
		}},
		{"offload_bitrate_jumbo.yaml", []string{
			`testdata/offload_bitrate_jumbo.yaml: offload.flow_bitrate: moves as few as 4167 packets of 9000 bytes (the largest Neutron may choose: network.mtu is not set) in offload.capture_window (3s), fewer than offload.counters_min_flow_packets (10000): the counters check could not conclude on an offloaded flow; at least 240000000 bit/s, got 100000000`,
		}},
		{"offload_settle.yaml", []string{
			`testdata/offload_settle.yaml: offload.settle: must be > 0, got 0s`,
		}},
	}
	for _, tc := range cases {
		t.Run(tc.file, func(t *testing.T) {
			home := fakeHome(t)
			_, err := Load(filepath.Join("testdata", tc.file), WithGetenv(noEnv), KnownProfiles("tcp-p1", "tcp-p15"))
			assertMessages(t, err, tc.want, home)
		})
	}
}

func TestLoadMissingFile(t *testing.T) {
	_, err := Load("testdata/does-not-exist.yaml")
	if !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "testdata/does-not-exist.yaml") {
		t.Errorf("want a not-exist error naming the file, got %v", err)
	}
}

// TestValidateWithoutKnownProfiles: without KnownProfiles any non-empty,
// unrepeated profile ID passes (the iperf3 catalogue is the caller's).
func TestValidateWithoutKnownProfiles(t *testing.T) {
	fakeHome(t)
	cfg, err := Load("testdata/minimal.yaml", WithGetenv(noEnv))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Traffic.Profiles = []string{"anything"}
	if err := cfg.Validate(WithGetenv(noEnv)); err != nil {
		t.Errorf("want no problem, got %v", err)
	}
	err = cfg.Validate(WithGetenv(noEnv), KnownProfiles("tcp-p1"))
	assertMessages(t, err, []string{`testdata/minimal.yaml: traffic.profiles[0]: is not a known profile (known: tcp-p1), got "anything"`}, "")
}
