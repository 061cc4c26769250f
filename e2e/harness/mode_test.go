package harness

import (
	"testing"

	"github.com/mosk-qa/asap2-e2e/e2e/config"
	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// Every run records its port-security mode, off included (a missing value
// would read as "mode not recorded" and weaken the compare gate).
func TestConfigSummaryRecordsThePortSecurityMode(t *testing.T) {
	for _, on := range []bool{false, true} {
		cfg := &config.Config{DataPort: config.DataPort{VNICType: "direct", PortSecurity: on}}
		got := configSummary(cfg)
		if got.PortSecurity == nil || *got.PortSecurity != on {
			t.Fatalf("port_security %v: recorded %v", on, got.PortSecurity)
		}
		want := results.ModeSecurityGroupsOff
		if on {
			want = results.ModeSecurityGroupsOn
		}
		if got.Mode() != want {
			t.Errorf("mode %q, want %q", got.Mode(), want)
		}
		cfg.DataPort.PortSecurity = !on // the summary holds its own copy
		if *got.PortSecurity != on {
			t.Errorf("summary follows the config after the fact")
		}
	}
}
