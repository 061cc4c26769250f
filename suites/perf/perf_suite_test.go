// Package perf is the ASAP² Direct performance suite: the methodology's
// iperf3 profiles between two anti-affine instances on direct (switchdev)
// ports, with the complementary offload checks proving which path carried
// the traffic.
//
// One Ordered, ContinueOnFailure container: the offload checks first, then the
// seed's profiles in catalogue order, each labelled with its id.
package perf

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/mosk-qa/asap2-e2e/e2e/framework"
	"github.com/mosk-qa/asap2-e2e/e2e/harness"
	"github.com/mosk-qa/asap2-e2e/e2e/remote/kube"
)

func TestPerf(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "ASAP² Direct performance")
}

// run is the suite's run, pair its one pair of guests (framework.SetUp).
var (
	run  *harness.Run
	pair *harness.Pair
)

var _ = BeforeSuite(func(ctx SpecContext) {
	run, pair = framework.SetUp(ctx, framework.Steps{Connect: true, Environment: true, Kubernetes: kube.Open})
})
