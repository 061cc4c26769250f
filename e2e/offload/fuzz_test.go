package offload

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// Fuzz targets for every parser, seeded from testdata (recorded and public
// samples, see testdata/README.md). Malformed input must give an error, never
// a panic; parsed results must be usable by the verdict functions.

func seed(f *testing.F, globs ...string) {
	f.Helper()
	for _, g := range globs {
		files, err := filepath.Glob(filepath.Join("testdata", g))
		if err != nil {
			f.Fatal(err)
		}
		for _, name := range files {
			b, err := os.ReadFile(name)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(headLines(b, seedMax))
		}
	}
}

// seedMax bounds a seed: the fuzzer minimises every new input, and the
// 75 KB recorded capture would take most of a one-minute run to minimise.
const seedMax = 4096

// headLines returns b cut at the last line end before max bytes.
func headLines(b []byte, max int) []byte {
	if len(b) <= max {
		return b
	}
	b = b[:max]
	if i := bytes.LastIndexByte(b, '\n'); i > 0 {
		b = b[:i+1]
	}
	return b
}

func FuzzParseTCJSON(f *testing.F) {
	seed(f, "*/tc-*.json")
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := ParseTCJSON(data)
		if err != nil {
			return
		}
		JudgeTC([]TCObservation{{Device: "d", Samples: []TCDump{d, d}}}, []string{mlxMACLocal})
	})
}

func FuzzParseTCText(f *testing.F) {
	seed(f, "*/tc-*.txt", "sw/tc-*.stderr")
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := ParseTCText(data)
		if err != nil {
			return
		}
		JudgeTC([]TCObservation{{Device: "d", Samples: []TCDump{d}}}, nil)
	})
}

func FuzzParseDpctl(f *testing.F) {
	seed(f, "*/dpctl-*.txt")
	f.Fuzz(func(t *testing.T, data []byte) {
		flows, err := ParseDpctl(data)
		if err != nil {
			return
		}
		JudgeDpctl(DpctlSamples{Offloaded: [][]DpctlFlow{flows, flows}, All: [][]DpctlFlow{flows}}, nil)
	})
}

func FuzzParseTcpdump(f *testing.F) {
	seed(f, "sw/tcpdump-*.txt", "sw/tcpdump-*.stderr")
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ParseTcpdump(data)
		if err != nil {
			return
		}
		JudgeCapture(c, []string{recMAC1, recMAC2}, 10, 0)
		ParseInterfaceNames(data)
	})
}
