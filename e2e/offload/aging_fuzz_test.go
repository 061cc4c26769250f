package offload

import (
	"strings"
	"testing"
	"time"
)

// Fuzz targets of the aging and fragment judges, seeded from
// testdata/aging (recorded on a private OVS 3.1 and the written tc
// listings; see its README). What parses is judged; the judges keep their
// promises whatever the flows say.

func FuzzDpctlAgingAndFragments(f *testing.F) {
	seed(f, "aging/dpctl-*.txt", "aging/dpif-*.txt", "aging/timeline/dpctl-0[0-3].txt")
	f.Fuzz(func(t *testing.T, data []byte) {
		flows, err := ParseDpctl(data)
		if err != nil {
			return
		}
		for _, fl := range flows {
			if fr := fl.Frag(); IsFragmentMatch(fr) && fr == FragAny {
				t.Errorf("dpctl never prints frag=any, got %q from %+v", fr, fl.Match)
			}
		}
		a := JudgeAgedOut(flows, agMAC1, agMAC2, agTuple, 14*time.Second)
		if a.Aged != (a.Remaining == 0) || (a.Leaked && a.Aged) || a.Reason == "" {
			t.Errorf("aged out %+v", a)
		}
		fw, exact := TupleFlows(flows, agMAC1, agMAC2, agTuple)
		if exact > len(fw) {
			t.Errorf("%d exact of %d flows", exact, len(fw))
		}
		// The dump twice, the second with every counter grown by one:
		// a timeline of two samples.
		grown := make([]DpctlFlow, len(flows))
		for i, fl := range flows {
			fl.Packets++
			grown[i] = fl
		}
		tl := []AgingSample{{Start: 0, End: 10 * time.Millisecond, Flows: flows}, {Start: 100 * time.Millisecond, End: 110 * time.Millisecond, Flows: grown}}
		for _, sw := range []bool{false, true} {
			r := JudgeReinstall(ReinstallInput{Samples: tl, ClientMAC: agMAC1, ServerMAC: agMAC2, Tuple: agTuple, Software: sw})
			switch {
			case sw && r.InHardware != nil:
				t.Errorf("software datapath in hardware at %v", *r.InHardware)
			case r.InHardware != nil && (r.InDatapath == nil || *r.InDatapath > *r.InHardware):
				t.Errorf("in hardware at %v before the datapath %v", *r.InHardware, r.InDatapath)
			case r.InHardware != nil && (r.Proven == nil || *r.Proven < *r.InHardware):
				t.Errorf("in hardware at %v, proven at %v", *r.InHardware, r.Proven)
			case r.InHardware != nil && *r.InHardwareResolution < 0, r.InDatapath != nil && *r.InDatapathResolution < 0:
				t.Errorf("negative resolution: %+v", r)
			}
		}
		fr := JudgeDpctlFragments(DpctlSamples{Offloaded: [][]DpctlFlow{flows, grown}}, []string{agMAC1, agMAC2})
		if fr.Labelled && (!fr.Fragmented || fr.FragInHardware > 0) || fr.FragInHardware > fr.FragFlows || fr.Fragmented != (fr.FragPackets > 0) {
			t.Errorf("fragments %+v", fr)
		}
	})
}

func FuzzTCFragments(f *testing.F) {
	seed(f, "aging/tc/tc-*.txt")
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := ParseTC(data)
		if err != nil {
			return
		}
		for _, r := range d.Filters {
			// A value none of the known ones is the key's value as parsed.
			if fr := r.Frag(); fr != "" && !IsFragmentMatch(fr) && fr != FragNo && fr != strings.TrimSpace(r.Keys["ip_flags"]) {
				t.Errorf("fragment match %q is none of the known ones and not ip_flags %q", fr, r.Keys["ip_flags"])
			}
		}
		obs := []TCObservation{{Device: "rep", Samples: []TCDump{d, d}, Span: time.Second, Window: 2 * time.Second}}
		fr := JudgeTCFragments(obs, []string{"fa:16:3e:4a:11:01", "fa:16:3e:4a:11:02"}, "vxlan", nil)
		if fr.Fragmented || fr.Labelled || fr.FragPackets != 0 {
			t.Errorf("a dump judged against itself grew: %+v", fr)
		}
		if fr.Verdict == "" || fr.Reason == "" {
			t.Errorf("no verdict: %+v", fr)
		}
	})
}

func FuzzParseMaxIdle(f *testing.F) {
	f.Add([]byte("\"15000\"\n"), []byte(""), 0)
	f.Add([]byte(""), []byte(`ovs-vsctl: no key "max-idle" in Open_vSwitch record "." column other_config`), 1)
	f.Add([]byte("\"0\""), []byte(""), 0)
	f.Add([]byte(""), []byte("sh: ovs-vsctl: not found\nmore"), 127)
	f.Fuzz(func(t *testing.T, stdout, stderr []byte, exit int) {
		d, src := ParseMaxIdle(stdout, stderr, exit)
		if d <= 0 || src == "" {
			t.Fatalf("%v %q", d, src)
		}
		// Only a number read from a successful get is the hypervisor's own.
		if src == "other_config:max-idle" && exit != 0 {
			t.Errorf("exit %d read as set", exit)
		}
		if src != "other_config:max-idle" && d != DefaultMaxIdle {
			t.Errorf("%q with %v, not OVS's default", src, d)
		}
		if strings.Contains(src, "\n") {
			t.Errorf("source of more than one line: %q", src)
		}
	})
}
