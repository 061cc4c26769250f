package config_test

import (
	"slices"
	"testing"

	"github.com/mosk-qa/asap2-e2e/e2e/config"
	"github.com/mosk-qa/asap2-e2e/e2e/iperf3"
)

// config cannot import e2e/iperf3: the small-packet IDs it defaults to are
// written twice, and pinned here.
func TestDefaultPPSProfilesAreIperf3s(t *testing.T) {
	if !slices.Equal(config.DefaultPPSProfiles, iperf3.PPSIDs()) {
		t.Errorf("config.DefaultPPSProfiles %v, iperf3.PPSIDs %v", config.DefaultPPSProfiles, iperf3.PPSIDs())
	}
}
