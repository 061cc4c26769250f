package report

import (
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// The seed's numbers: /work/shared/seeds/asap2-direct-performance.txt,
// "Results" section (MOSK ASAP² Direct methodology: TCP throughput, UDP
// unlimited and UDP capped tables). Each row: profile shape, then ASAP² and
// baseline offered / delivered / loss (TCP: delivered only).
type seedRow struct {
	id                  string
	proto               string
	streams             int
	bitrate             float64
	length              int
	aOff, aDel, aLoss   float64
	bOff, bDel, bLoss   float64
	wantA, wantB, wantG string // the seed's cells
}

const (
	G = 1e9
	M = 1e6
)

var seedRows = []seedRow{
	{"tcp-p1", "tcp", 1, 0, 0, 0, 16.5 * G, 0, 0, 2.76 * G, 0, "16.5 Gbit/s", "2.76 Gbit/s", "~6×"},
	{"tcp-p15", "tcp", 15, 0, 0, 0, 22.7 * G, 0, 0, 11.5 * G, 0, "22.7 Gbit/s", "11.5 Gbit/s", "~2×"},
	{"tcp-p30", "tcp", 30, 0, 0, 0, 22.8 * G, 0, 0, 14.9 * G, 0, "22.8 Gbit/s", "14.9 Gbit/s", "ASAP² near 25 GbE line rate"},
	{"udp-b0-p1", "udp", 1, 0, 0, 3.18 * G, 2.34 * G, 27, 891 * M, 890 * M, 0.046, "3.18 Gbit/s / 2.34 Gbit/s / 27%", "891 Mbit/s / 890 Mbit/s / 0.046%", "~2.6×"},
	{"udp-b0-p15", "udp", 15, 0, 0, 23.1 * G, 19.2 * G, 17, 1.01 * G, 980 * M, 2.7, "23.1 Gbit/s / 19.2 Gbit/s / 17%", "1.01 Gbit/s / 980 Mbit/s / 2.7%", "~20×"},
	{"udp-b0-p30", "udp", 30, 0, 0, 23.1 * G, 18.4 * G, 20, 2.87 * G, 2.70 * G, 5.7, "23.1 Gbit/s / 18.4 Gbit/s / 20%", "2.87 Gbit/s / 2.70 Gbit/s / 5.7%", "~6.8×"},
	{"udp-b0-p15-l700", "udp", 15, 0, 700, 16.6 * G, 10.8 * G, 35, 903 * M, 302 * M, 0.00017, "16.6 Gbit/s / 10.8 Gbit/s / 35%", "903 Mbit/s / 302 Mbit/s / 0.00017%", "~36×"},
	{"udp-b0-p30-l700", "udp", 30, 0, 700, 16.6 * G, 10.6 * G, 33, 1.28 * G, 1.27 * G, 0.3, "16.6 Gbit/s / 10.6 Gbit/s / 33%", "1.28 Gbit/s / 1.27 Gbit/s / 0.3%", "~8.3×"},
	{"udp-500m-p1", "udp", 1, 500 * M, 0, 500 * M, 499 * M, 0.12, 500 * M, 500 * M, 0, "500 Mbit/s / 499 Mbit/s / 0.12%", "500 Mbit/s / 500 Mbit/s / 0%", "Parity at this cap"},
	{"udp-500m-p15", "udp", 15, 500 * M, 0, 7.50 * G, 7.50 * G, 0.022, 2.31 * G, 2.30 * G, 0.012, "7.50 Gbit/s / 7.50 Gbit/s / 0.022%", "2.31 Gbit/s / 2.30 Gbit/s / 0.012%", "~3.3× (ASAP² at the 7.5 Gbit/s cap)"},
	{"udp-500m-p30", "udp", 30, 500 * M, 0, 7.50 * G, 7.49 * G, 0.058, 2.85 * G, 2.72 * G, 4.5, "7.50 Gbit/s / 7.49 Gbit/s / 0.058%", "2.85 Gbit/s / 2.72 Gbit/s / 4.5%", "~2.8×"},
	{"udp-500m-p1-l700", "udp", 1, 500 * M, 700, 500 * M, 500 * M, 0.00011, 446 * M, 445 * M, 0.14, "500 Mbit/s / 500 Mbit/s / 0.00011%", "446 Mbit/s / 445 Mbit/s / 0.14%", "~1.1×"},
	{"udp-500m-p15-l700", "udp", 15, 500 * M, 700, 3.56 * G, 3.56 * G, 0.0094, 895 * M, 895 * M, 0.0061, "3.56 Gbit/s / 3.56 Gbit/s / 0.0094%", "895 Mbit/s / 895 Mbit/s / 0.0061%", "~4.0×"},
	{"udp-500m-p30-l700", "udp", 30, 500 * M, 700, 11.7 * G, 9.61 * G, 18, 1.37 * G, 1.34 * G, 1.6, "11.7 Gbit/s / 9.61 Gbit/s / 18%", "1.37 Gbit/s / 1.34 Gbit/s / 1.6%", "~7.2×"},
}

// Where this renderer words a gain cell differently from the seed, on
// purpose: the seed's wording there is editorial and does not follow from
// the numbers. The gain is always shown as a number; the annotations follow
// fixed rules (ASAP² ≥ 90% of the configured line rate; ASAP² within 1% of
// the aggregate cap).
var seedGainDeviations = map[string]string{
	"tcp-p15":          "~2× (ASAP² near 25 GbE line rate)",   // seed: "~2×" (22.7 Gbit/s is 91% of 25 GbE)
	"tcp-p30":          "~1.5× (ASAP² near 25 GbE line rate)", // seed: "ASAP² near 25 GbE line rate" (no number)
	"udp-500m-p1-l700": "~1.1× (ASAP² at the 0.5 Gbit/s cap)", // seed: "~1.1×" (ASAP² delivered exactly the cap)
}

// Interval series: per-second iperf3 TCP goodput (Mbit/s) from the public
// ovs-discuss thread "Network performance of OVS internal port" (kevinsuo,
// iperf3 between containers over OVS + VXLAN; seconds 81-100 with veth,
// 83-100 with an OVS internal port). Used only to give the charts a real
// series with real dips; they are not the seed lab's numbers.
var vethSeries = []float64{232, 251, 237, 246, 204, 235, 241, 265, 239, 234, 238, 243, 272, 240, 240, 193, 217, 242, 225}
var internalSeries = []float64{448, 453, 484, 483, 472, 289, 480, 544, 505, 422, 482, 352, 471, 519, 504, 536, 493}

func series(start float64, mbps []float64, scale float64) []results.Interval {
	out := make([]results.Interval, len(mbps))
	for i, v := range mbps {
		out[i] = results.Interval{Start: start + float64(i), End: start + float64(i) + 1, Bps: v * M * scale}
	}
	return out
}

var seedStart = time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)

// seedEnv is an illustrative environment (made up for the fixture, not
// measured): the seed names the hardware but not versions.
func seedEnv(path results.Path) results.Environment {
	if path == results.PathASAP2 {
		return results.Environment{
			Cloud: "mosk-lab", BuildLabel: "MOSK 25.2",
			Hypervisors: []results.Hypervisor{
				{Name: "cmp-asap2-1", NIC: "bond0", NICDriver: "mlx5_core", NICDriverVersion: "24.10-1.1.4", NICFirmware: "26.43.2026 (MT_0000000531)", OVSVersion: "3.3.1", Kernel: "5.15.0-125-generic"},
				{Name: "cmp-asap2-2", NIC: "bond0", NICDriver: "mlx5_core", NICDriverVersion: "24.10-1.1.4", NICFirmware: "26.43.2026 (MT_0000000531)", OVSVersion: "3.3.1", Kernel: "5.15.0-125-generic"},
			},
			Guests: []results.Guest{
				{Name: "server", Role: "server", Hypervisor: "cmp-asap2-1", Iperf3Version: "3.16", Kernel: "6.8.0-45-generic"},
				{Name: "client", Role: "client", Hypervisor: "cmp-asap2-2", Iperf3Version: "3.16", Kernel: "6.8.0-45-generic"},
			},
			MTU: 8950, GuestKernel: "6.8.0-45-generic",
		}
	}
	return results.Environment{
		Cloud: "mosk-lab", BuildLabel: "MOSK 25.2",
		Hypervisors: []results.Hypervisor{
			{Name: "cmp-std-1", NIC: "bond0", NICDriver: "ice", NICDriverVersion: "1.14.9", NICFirmware: "4.40 0x8001c967 1.3534.0", OVSVersion: "3.3.1", Kernel: "5.15.0-125-generic"},
			{Name: "cmp-std-2", NIC: "bond0", NICDriver: "ice", NICDriverVersion: "1.14.9", NICFirmware: "4.40 0x8001c967 1.3534.0", OVSVersion: "3.3.1", Kernel: "5.15.0-125-generic"},
		},
		Guests: []results.Guest{
			{Name: "server", Role: "server", Hypervisor: "cmp-std-1", Iperf3Version: "3.16", Kernel: "6.8.0-45-generic"},
			{Name: "client", Role: "client", Hypervisor: "cmp-std-2", Iperf3Version: "3.16", Kernel: "6.8.0-45-generic"},
		},
		MTU: 8950, GuestKernel: "6.8.0-45-generic",
	}
}

// seedResults builds one results file per path from the seed's numbers.
// Run-level offload checks: all three offloaded on asap2, software on the
// baseline. The TCP 1-stream rows carry the public interval series.
func seedResults(path results.Path) *results.Results {
	r := &results.Results{
		SchemaVersion: results.SchemaVersion,
		RunID:         "seed-" + string(path),
		StartedAt:     seedStart,
		Config: results.ConfigSummary{
			Cloud: "mosk-lab", BuildLabel: "MOSK 25.2", ExpectedPath: path,
			DurationSeconds: 30, Repeats: 1, Checks: results.AllChecks,
			CVLimitPercent: 5, LineRateBps: 25 * G,
			// The methodology measured with port security disabled.
			PortSecurity: new(false),
		},
		Environment: seedEnv(path),
		Timings: []results.Timing{
			{Phase: results.PhaseProvisioning, Seconds: 74.2}, {Phase: results.PhaseBoot, Seconds: 41.0}, {Phase: results.PhaseSSHWait, Seconds: 12.5},
			{Phase: results.PhaseTraffic, Seconds: 14 * 32}, {Phase: results.PhaseChecks, Seconds: 95.3}, {Phase: results.PhaseTeardown, Seconds: 38.9},
		},
	}
	fin := seedStart.Add(15 * time.Minute)
	r.FinishedAt = &fin
	verdict, reason := results.VerdictOffloaded, "hardware counters grew between samples"
	if path == results.PathBaseline {
		verdict, reason = results.VerdictSoftware, "flow packets kept reaching the host datapath"
	}
	for _, name := range results.AllChecks {
		r.Offload = append(r.Offload, results.CheckResult{Name: name, Flow: "tcp", Verdict: verdict, Reason: reason,
			EvidenceFiles: []string{"evidence/" + name + "-tcp.txt"}})
	}
	for _, s := range seedRows {
		p := results.ProfileResult{ID: s.id, Protocol: s.proto, Streams: s.streams, BitrateBps: s.bitrate,
			LengthBytes: s.length, Path: path, DurationSeconds: 30}
		run := results.Run{Repeat: 1, Iperf3Version: "3.16", EvidenceFile: "iperf3/" + s.id + "-1.json"}
		if path == results.PathASAP2 {
			run.OfferedBps, run.DeliveredBps, run.LossPercent = s.aOff, s.aDel, s.aLoss
		} else {
			run.OfferedBps, run.DeliveredBps, run.LossPercent = s.bOff, s.bDel, s.bLoss
		}
		if s.proto == "tcp" {
			run.OfferedBps = run.DeliveredBps
		}
		if s.id == "tcp-p1" {
			if path == results.PathASAP2 {
				run.Intervals = series(83, internalSeries, 16.5*G/(473*M))
			} else {
				run.Intervals = series(81, vethSeries, 2.76*G/(236*M))
			}
		}
		p.Runs = []results.Run{run}
		results.Summarize(&p, r.Config.CVLimitPercent)
		r.Profiles = append(r.Profiles, p)
	}
	return r
}
