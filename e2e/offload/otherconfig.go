package offload

import "fmt"

// CmdOtherConfig reads Open_vSwitch's other_config, where OVS keeps
// hw-offload (TC offload on: "true"; unset = false) and tc-policy (unset =
// none): what a fleet compares node against node (its drift).
const CmdOtherConfig = "ovs-vsctl --format=json --columns=other_config list Open_vSwitch"

// OVS's other_config keys of the offload, and what their absence means
// (vswitch.xml: hw-offload defaults to false, tc-policy to none).
const (
	OtherConfigHWOffload = "hw-offload"
	OtherConfigTCPolicy  = "tc-policy"
	HWOffloadDefault     = "false"
	TCPolicyDefault      = "none"
)

// ParseOtherConfig parses CmdOtherConfig's output, the one Open_vSwitch
// row's other_config map, e.g. (OVS 3.1 on the lab)
//
//	{"data":[[["map",[["userspace-tso-enable","true"]]]]],"headings":["other_config"]}
func ParseOtherConfig(data []byte) (map[string]string, error) {
	t, err := ParseOVSTable(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", CmdOtherConfig, err)
	}
	idx, err := t.columns("other_config")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", CmdOtherConfig, err)
	}
	if len(t.Data) != 1 {
		return nil, fmt.Errorf("%s: want the one Open_vSwitch row, got %d", CmdOtherConfig, len(t.Data))
	}
	m, err := ovsMap(t.Data[0][idx[0]])
	if err != nil {
		return nil, fmt.Errorf("%s: other_config: %w", CmdOtherConfig, err)
	}
	return m, nil
}
