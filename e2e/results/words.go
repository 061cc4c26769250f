package results

// Path is the data path a run is expected to exercise (config
// run.expected_path; the results' expected_path and each profile's path).
type Path string

const (
	// PathASAP2 is the offloaded path: the traffic must be forwarded by the
	// NIC (the seed's "NIC asap2" column).
	PathASAP2 Path = "asap2"
	// PathBaseline is the software path: the traffic must stay on the host
	// (the seed's "NIC standard" column).
	PathBaseline Path = "baseline"
)

// Protocols of a profile, as the results record them.
const (
	ProtoTCP = "tcp"
	ProtoUDP = "udp"
)

// Offload check names (config offload.checks, CheckResult.Name).
const (
	CheckTC          = "tc"
	CheckRepresentor = "representor"
	CheckDpctl       = "dpctl"
	CheckCounters    = "counters"
	// CheckConntrack is not configured: the evidence window runs it on
	// both hypervisors when data_port.port_security is true (the kernel's
	// conntrack table against the run's connections), and only then.
	CheckConntrack = "conntrack"
)

// AllChecks are the complementary checks a run can configure, in the order
// they run; the default of offload.checks. An asap2 run needs every one of
// them unless offload.partial_proof says otherwise.
var AllChecks = []string{CheckTC, CheckRepresentor, CheckDpctl, CheckCounters}

// Verdict is what one offload check concluded about the data path.
type Verdict string

// Verdicts of an offload check.
const (
	// VerdictOffloaded: the evidence shows the flow forwarded by the NIC.
	VerdictOffloaded Verdict = "offloaded"
	// VerdictSoftware: the evidence shows the flow forwarded by the host (OVS
	// in the kernel or in user space), i.e. the seed's "NIC standard" path.
	VerdictSoftware Verdict = "software"
	// VerdictInconclusive: the evidence is missing, contradictory or unreadable.
	VerdictInconclusive Verdict = "inconclusive"
)

// Phase names of the wall-time breakdown every run reports (Timing.Phase;
// the report keeps any other name, in order).
const (
	PhasePreflight    = "preflight"    // checking the Kubernetes cluster before anything is built
	PhaseProvisioning = "provisioning" // API calls that create the topology
	PhaseBoot         = "boot"         // waiting for ACTIVE servers and ports
	PhaseSSHWait      = "ssh_wait"     // waiting for guests and hypervisors to answer SSH
	PhaseEnvironment  = "environment"  // collecting versions and NIC facts
	PhaseTraffic      = "traffic"      // measured iperf3 windows
	PhaseChecks       = "checks"       // the complementary offload checks
	PhaseTeardown     = "teardown"     // deleting everything
)
