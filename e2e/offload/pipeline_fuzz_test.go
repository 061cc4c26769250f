package offload

import (
	"testing"
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// Pipeline invariants (issues 19 and 23), on any dump the parsers accept: the
// second sample is the first with the stages that output changed, so the
// judge must follow every pipeline to its last stage to hold them.
//
//   - a pipeline whose output stage is not in hardware (and counted packets)
//     is never offloaded;
//   - a pipeline whose output stage did not grow, while every other stage
//     grew in hardware, is never offloaded.

// tcOutputsChanged copies d; every filter that outputs is passed to change.
func tcOutputsChanged(d TCDump, change func(*TCFilter), others func(*TCFilter)) TCDump {
	out := TCDump{Format: d.Format, Filters: make([]TCFilter, len(d.Filters))}
	for i, f := range d.Filters {
		f.Actions = append([]TCAction(nil), f.Actions...)
		if f.outputs() {
			change(&f)
		} else {
			others(&f)
		}
		out.Filters[i] = f
	}
	return out
}

func tcPipelineInvariants(t *testing.T, d TCDump) {
	t.Helper()
	keep := func(*TCFilter) {}
	toSoftware := func(f *TCFilter) {
		f.InHW, f.NotInHW, f.InHWCount = false, true, 0
		for i := range f.Actions {
			f.Actions[i].Packets++
			f.Actions[i].SWPackets++
			f.Actions[i].HWPackets = 0
		}
	}
	growHW := func(f *TCFilter) {
		for i := range f.Actions {
			f.Actions[i].Packets += 1000
			f.Actions[i].HWPackets += 1000
		}
	}
	for _, macs := range [][]string{nil, {mlxMACLocal, mlxMACRemote}, pipePair} {
		sw := tcOutputsChanged(d, toSoftware, growHW)
		if v, why := JudgeTC([]TCObservation{{Device: "d", Samples: []TCDump{d, sw}, Window: time.Hour}}, macs); v == results.VerdictOffloaded {
			t.Fatalf("output stages not in hardware judged offloaded (MACs %v): %s", macs, why)
		}
		flat := tcOutputsChanged(d, keep, growHW)
		if v, why := JudgeTC([]TCObservation{{Device: "d", Samples: []TCDump{d, flat}, Window: time.Hour}}, macs); v == results.VerdictOffloaded {
			t.Fatalf("output stages that did not grow judged offloaded (MACs %v): %s", macs, why)
		}
		// Every rule made Geneve-shaped (a geneve_opts key), every rule
		// grown in hardware: on a VXLAN run nothing of it is proof.
		geneve := func(f *TCFilter) {
			growHW(f)
			keys := map[string]string{"geneve_opts": "0102:80:00010002/ffff:ff:7fffffff"}
			for k, v := range f.Keys {
				keys[k] = v
			}
			f.Keys = keys
		}
		before := tcOutputsChanged(d, func(f *TCFilter) { geneve(f); growHW(f) }, geneve)
		grown := tcOutputsChanged(before, growHW, growHW)
		for _, dev := range []string{"d", "vxlan_sys_4789", "genev_sys_6081"} {
			if v, why, _ := JudgeTCNetwork([]TCObservation{{Device: dev, Samples: []TCDump{before, grown}, Window: time.Hour}}, macs, results.NetworkVXLAN); v == results.VerdictOffloaded {
				t.Fatalf("Geneve-shaped rules judged offloaded on a VXLAN run (MACs %v, device %s): %s", macs, dev, why)
			}
		}
	}
}

func FuzzPipelineTC(f *testing.F) {
	seed(f, "pipeline/tc-*.txt", "hw/tc-*.txt")
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := ParseTC(data)
		if err != nil {
			return
		}
		tcPipelineInvariants(t, d)
	})
}

// dpctlOutputsChanged copies flows; every flow that outputs is passed to
// change, every other one to others.
func dpctlOutputsChanged(flows []DpctlFlow, change, others func(*DpctlFlow)) []DpctlFlow {
	out := make([]DpctlFlow, len(flows))
	for i, f := range flows {
		if f.outputs() {
			change(&f)
		} else {
			others(&f)
		}
		out[i] = f
	}
	return out
}

func FuzzPipelineDpctl(f *testing.F) {
	seed(f, "pipeline/dpctl-*.txt", "hw/dpctl-*.txt")
	f.Fuzz(func(t *testing.T, data []byte) {
		flows, err := ParseDpctl(data)
		if err != nil {
			return
		}
		keep := func(*DpctlFlow) {}
		toSoftware := func(f *DpctlFlow) { f.Offloaded, f.DP, f.Packets = "", "ovs", f.Packets+1 }
		grow := func(f *DpctlFlow) { f.Packets += 1000 }
		for _, macs := range [][]string{nil, {kubeMAC1, kubeMAC2}, pipePair} {
			sw := dpctlOutputsChanged(flows, toSoftware, grow)
			for _, typed := range []bool{false, true} {
				s := DpctlSamples{Offloaded: [][]DpctlFlow{flows, sw}, OffloadedIsTyped: typed, Window: time.Hour}
				if v, why := JudgeDpctl(s, macs); v == results.VerdictOffloaded {
					t.Fatalf("output flows in software judged offloaded (MACs %v, typed %v): %s", macs, typed, why)
				}
			}
			flat := dpctlOutputsChanged(flows, keep, grow)
			if v, why := JudgeDpctl(DpctlSamples{Offloaded: [][]DpctlFlow{flows, flat}, Window: time.Hour}, macs); v == results.VerdictOffloaded {
				t.Fatalf("output flows that did not grow judged offloaded (MACs %v): %s", macs, why)
			}
			// Every flow matched on a Geneve tunnel, every flow grown: on
			// a VXLAN run nothing of it is proof.
			geneve := func(f *DpctlFlow) { f.Tunnel = "tun_id=0x5,tp_dst=6081,geneve({len=4}),flags(+key)" }
			before := dpctlOutputsChanged(flows, geneve, geneve)
			grown := dpctlOutputsChanged(before, grow, grow)
			if v, why := JudgeDpctl(DpctlSamples{Offloaded: [][]DpctlFlow{before, grown}, OffloadedIsTyped: true, Window: time.Hour, Network: results.NetworkVXLAN}, macs); v == results.VerdictOffloaded {
				t.Fatalf("Geneve flows judged offloaded on a VXLAN run (MACs %v): %s", macs, why)
			}
		}
	})
}
