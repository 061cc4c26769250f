package config_test

import (
	"testing"

	"github.com/mosk-qa/asap2-e2e/e2e/config"
	"github.com/mosk-qa/asap2-e2e/e2e/iperf3"
)

// config cannot import e2e/iperf3 (it sits below it): the iperf3 limit it
// validates against is written twice, and pinned here.
func TestIperf3LimitsSharedWithConfig(t *testing.T) {
	if config.IperfMinStallTimeout != iperf3.MinRcvTimeout {
		t.Errorf("config.IperfMinStallTimeout %s, iperf3.MinRcvTimeout %s", config.IperfMinStallTimeout, iperf3.MinRcvTimeout)
	}
}
