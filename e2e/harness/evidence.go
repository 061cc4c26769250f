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
func (s *Session) CollectTopologyEvidence(ctx context.Context) {
	if s.Topology == nil {
		return
	}
	if lost := s.OutputLost(); lost != nil {
		s.Logf("topology evidence not saved: %v", lost)
		return
	}
	c := s.fixtureClients()
	for _, srv := range s.Topology.Servers {
		if srv.ID == "" {
			continue
		}
		// The API's own answer ({"server": {…}}).
		body, err := c.ServerBody(ctx, srv.ID)
		s.saveEvidenceJSON("topology/server-"+srv.Name+".json", body, err)
		console, err := c.ConsoleLog(ctx, srv.ID, 200)
		if err != nil {
			console = "console log unavailable: " + err.Error()
		}
		if _, serr := s.SaveArtifact("topology/console-"+srv.Name+".txt", []byte(console)); serr != nil {
			s.Logf("saving console log: %v", serr)
		}
		for _, id := range []string{srv.ManagementPortID, srv.DataPortID} {
			if id == "" {
				continue
			}
			pb, err := c.PortBody(ctx, id)
			s.saveEvidenceJSON("topology/port-"+id+".json", pb, err)
		}
	}
}

func (s *Session) saveEvidenceJSON(rel string, v any, err error) {
	var data []byte
	if err != nil {
		data = []byte(fmt.Sprintf("{\"error\": %q}\n", err.Error()))
		s.Logf("evidence %s: %v", rel, err)
	} else if data, err = json.MarshalIndent(v, "", "  "); err != nil {
		data = []byte(fmt.Sprintf("{\"error\": %q}\n", err.Error()))
	}
	if _, serr := s.SaveArtifact(rel, data); serr != nil {
		s.Logf("saving %s: %v", rel, serr)
	}
}
