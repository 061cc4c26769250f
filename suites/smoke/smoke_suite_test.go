// Package smoke provisions the test topology, verifies it, reaches both
// guests over the data network and tears everything down: the quick check
// that a target cloud is ready for the performance suite.
package smoke

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/mosk-qa/asap2-e2e/e2e/framework"
	"github.com/mosk-qa/asap2-e2e/e2e/harness"
	"github.com/mosk-qa/asap2-e2e/e2e/remote/kube"
)

func TestSmoke(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "ASAP² Direct smoke")
}

// run is the suite's run, pair its one pair of guests (framework.SetUp).
var (
	run  *harness.Run
	pair *harness.Pair
)

var _ = BeforeSuite(func(ctx SpecContext) {
	run, pair = framework.SetUp(ctx, framework.Steps{Connect: true, Kubernetes: kube.Open})
})

var _ = Describe("Topology", Label("smoke"), func() {
	It("puts two guests on different hypervisors with their direct ports on one VXLAN network, reachable over it", func(ctx SpecContext) {
		Expect(pair.Topology.Servers).To(HaveLen(2))
		framework.ExpectNoError(pair.CheckDataPath(ctx), "reaching each guest over the data network")
	})
})
