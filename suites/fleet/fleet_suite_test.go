// Package fleet is the fleet sweep (issue 21, config fleet:): every compute
// node of the fleet proven and measured in one run, in pairs such that each
// node sends and receives, and the odd node named. The single-pair suites
// (perf, smoke) skip a fleet config; this one skips any other.
//
// The pairs' offload windows run in rounds of pairs that share no node, then
// each selected profile on every pair in fleet.mode; the verdict by node comes
// in AfterAll.
package fleet

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/mosk-qa/asap2-e2e/e2e/framework"
	"github.com/mosk-qa/asap2-e2e/e2e/harness"
	"github.com/mosk-qa/asap2-e2e/e2e/remote/kube"
)

func TestFleet(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "ASAP² Direct fleet sweep")
}

var run *harness.Fleet

var _ = BeforeSuite(func(ctx SpecContext) {
	run = framework.SetUpFleet(ctx, framework.Steps{Connect: true, Environment: true, Kubernetes: kube.Open})
})
