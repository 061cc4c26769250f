package harness

import (
	"context"
	"encoding/json"
	"fmt"
)

// CollectTopologyEvidence saves, before teardown, what the cloud says about
// the run's servers and ports: each server's JSON (with host and fault when
// the admin entry is there), its console log, and each port's JSON (binding
// details). It never fails the run: what cannot be read is logged and saved
// as the error text.
func (pair *Pair) CollectTopologyEvidence(ctx context.Context) {
	if pair.Topology == nil {
		return
	}
	if lost := pair.run.OutputLost(); lost != nil {
		pair.Logf("topology evidence not saved: %v", lost)
		return
	}
	c := pair.run.fixtureClients()
	for _, srv := range pair.Topology.Servers {
		if srv.ID == "" {
			continue
		}
		// The API's own answer ({"server": {…}}).
		body, err := c.ServerBody(ctx, srv.ID)
		pair.saveEvidenceJSON("topology/server-"+srv.Name+".json", body, err)
		console, err := c.ConsoleLog(ctx, srv.ID, 200)
		if err != nil {
			console = "console log unavailable: " + err.Error()
		}
		if _, serr := pair.SaveArtifact("topology/console-"+srv.Name+".txt", []byte(console)); serr != nil {
			pair.Logf("saving console log: %v", serr)
		}
		for _, id := range []string{srv.ManagementPortID, srv.DataPortID} {
			if id == "" {
				continue
			}
			pb, err := c.PortBody(ctx, id)
			pair.saveEvidenceJSON("topology/port-"+id+".json", pb, err)
		}
	}
}

func (pair *Pair) saveEvidenceJSON(rel string, v any, err error) {
	var data []byte
	if err != nil {
		data = []byte(fmt.Sprintf("{\"error\": %q}\n", err.Error()))
		pair.Logf("evidence %s: %v", rel, err)
	} else if data, err = json.MarshalIndent(v, "", "  "); err != nil {
		data = []byte(fmt.Sprintf("{\"error\": %q}\n", err.Error()))
	}
	if _, serr := pair.SaveArtifact(rel, data); serr != nil {
		pair.Logf("saving %s: %v", rel, serr)
	}
}
