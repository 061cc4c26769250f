package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// novaFilled returns every way in which the run does not show Nova filling
// the data ports' binding:profile: the run must have left binding:profile to
// Nova (data_port.binding_profile "nova", vnic_type direct), and the port
// JSON the harness saved before teardown (topology/port-<id>.json, read with
// the admin entry) must hold binding:profile.capabilities with "switchdev"
// for every server's data port. lines says what each port held.
func novaFilled(runDir string) (lines, problems []string, err error) {
	res, err := results.Load(filepath.Join(runDir, "results.json"))
	if err != nil {
		return nil, nil, err
	}
	if res.Config.BindingProfile != "nova" {
		problems = append(problems, fmt.Sprintf("%s: data_port.binding_profile is %q, not nova: the harness, not Nova, may have written the capability", runDir, res.Config.BindingProfile))
	}
	if res.Config.VNICType != "direct" {
		problems = append(problems, fmt.Sprintf("%s: data_port.vnic_type is %q, not direct", runDir, res.Config.VNICType))
	}
	data, err := os.ReadFile(filepath.Join(runDir, "topology.json"))
	if err != nil {
		return nil, nil, err
	}
	var topo struct {
		Servers []struct {
			Name       string `json:"name"`
			DataPortID string `json:"data_port_id"`
		} `json:"servers"`
	}
	if err := json.Unmarshal(data, &topo); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", filepath.Join(runDir, "topology.json"), err)
	}
	if len(topo.Servers) == 0 {
		problems = append(problems, fmt.Sprintf("%s: topology.json lists no server", runDir))
	}
	for _, s := range topo.Servers {
		if s.DataPortID == "" {
			problems = append(problems, fmt.Sprintf("server %s has no data port in topology.json", s.Name))
			continue
		}
		path := filepath.Join(runDir, "topology", "port-"+s.DataPortID+".json")
		raw, err := os.ReadFile(path)
		if err != nil {
			problems = append(problems, fmt.Sprintf("data port of %s: %v", s.Name, err))
			continue
		}
		var body struct {
			Error string `json:"error"`
			Port  struct {
				VNICType string         `json:"binding:vnic_type"`
				VIFType  string         `json:"binding:vif_type"`
				Profile  map[string]any `json:"binding:profile"`
			} `json:"port"`
		}
		if err := json.Unmarshal(raw, &body); err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", path, err))
			continue
		}
		if body.Error != "" {
			problems = append(problems, fmt.Sprintf("%s: the harness could not read the port: %s", path, body.Error))
			continue
		}
		profile, _ := json.Marshal(body.Port.Profile)
		lines = append(lines, fmt.Sprintf("%s data port %s: vnic_type %s, vif_type %s, binding:profile %s",
			s.Name, s.DataPortID, body.Port.VNICType, body.Port.VIFType, profile))
		caps, _ := body.Port.Profile["capabilities"].([]any)
		if !slices.Contains(caps, any("switchdev")) {
			problems = append(problems, fmt.Sprintf("%s data port %s: binding:profile %s has no capabilities [switchdev]", s.Name, s.DataPortID, profile))
		}
	}
	return lines, problems, nil
}
