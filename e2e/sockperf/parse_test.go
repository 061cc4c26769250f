package sockperf

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func sample(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Recorded: testdata/README.md.
func TestParseRecorded(t *testing.T) {
	for _, tc := range []struct {
		file                 string
		roundTrip            bool
		proto                string
		obs                  int64
		p50, p99, p999, max  float64
		min, avg, runSeconds float64
	}{
		{"v3.7-pp-udp-m64-t2.txt", true, "udp", 53272, 20.317, 143.688, 1833.170, 11031.691, 15.058, 28.987, 1.548},
		{"v3.7-pp-udp-m64-t2-halfrtt.txt", false, "udp", 39943, 10.439, 77.979, 1939.929, 8645.148, 7.554, 19.362, 1.550},
		{"v3.7-pp-udp-m1400-t1-fulllog.txt", true, "udp", 21881, 20.448, 95.176, 769.850, 6025.197, 14.887, 25.100, 0.550},
		{"v3.7-ul-udp-m64-t2.txt", true, "udp", 154, 50.183, 5225.614, 7123.194, 7123.194, 31.719, 583.396, 1.530},
		{"public-mellanox-sockperf-issue106-tcp-1obs.txt", false, "tcp", 1, 121.880, 121.880, 121.880, 121.880, 121.880, 121.880, 0},
	} {
		t.Run(tc.file, func(t *testing.T) {
			r, err := Parse(sample(t, tc.file))
			if err != nil {
				t.Fatal(err)
			}
			if r.RoundTrip != tc.roundTrip || r.Protocol != tc.proto || r.Observations != tc.obs || r.ReceivedMessages != tc.obs {
				t.Errorf("round trip %v proto %q observations %d received %d, want %v %q %d", r.RoundTrip, r.Protocol, r.Observations, r.ReceivedMessages, tc.roundTrip, tc.proto, tc.obs)
			}
			got := []float64{r.P50(), r.P99(), r.P999(), r.MaxUs, r.MinUs, r.AvgUs, r.RunTimeSeconds}
			want := []float64{tc.p50, tc.p99, tc.p999, tc.max, tc.min, tc.avg, tc.runSeconds}
			for i := range got {
				if got[i] != want[i] {
					t.Errorf("p50,p99,p99.9,max,min,avg,runtime = %v, want %v", got, want)
					break
				}
			}
			// sockperf prints percentile p only when (int)(0.5 + p*n) - 1 >= 0:
			// with one observation, p25 is left out.
			want8 := 8
			if tc.obs == 1 {
				want8 = 7
			}
			if len(r.Percentiles) != want8 {
				t.Errorf("%d percentiles, want %d", len(r.Percentiles), want8)
			}
		})
	}
	r, _ := Parse(sample(t, "v3.7-pp-udp-m64-t2.txt"))
	if r.Version != "3.7-no.git" || r.SentMessages != 53272 || r.StdDevUs != 129.490 {
		t.Errorf("version %q sent %d std-dev %v", r.Version, r.SentMessages, r.StdDevUs)
	}
	if w := r.Warnings(); len(w) != 0 {
		t.Errorf("a clean run has warnings: %v", w)
	}
	// under-load: 15301 sent, 154 replies (sockperf asks one reply in 100).
	ul, _ := Parse(sample(t, "v3.7-ul-udp-m64-t2.txt"))
	if ul.SentMessages != 15301 || len(ul.Warnings()) != 1 {
		t.Errorf("under-load sent %d warnings %v", ul.SentMessages, ul.Warnings())
	}
}

// sockperf exits 0 on these: only the text says it failed.
func TestParseRecordedFailures(t *testing.T) {
	for file, want := range map[string]string{
		"v3.7-pp-tcp-refused.txt":         "Can`t connect socket (errno=111 Connection refused)",
		"v3.7-pp-udp-noserver.txt":        "No messages were received from the server",
		"v3.7-lab-pp-udp-novalid.txt":     "No valid observations found. Try tune parameters: --time/--mps/--reply-every: of the 29 messages it sent in 3.001 s, 28 were answered, all within its 400 ms warm-up; a message or its reply was lost",
		"v3.7-lab-ovn-pp-udp-novalid.txt": "of the 67 messages it sent in 3.001 s, 66 were answered",
		"v3.7-version.txt":                `no "[Valid Duration]" line`,
		"ping-iputils20221126-c5.txt":     `no "====> avg-..." line`,
	} {
		_, err := Parse(sample(t, file))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want it to say %q", file, err, want)
		}
	}
}

// The 3.8+ avg line (https://github.com/Mellanox/sockperf/issues/172, sockperf 3.8).
func TestParseAvgLine38(t *testing.T) {
	in := strings.Replace(string(sample(t, "v3.7-pp-udp-m64-t2.txt")),
		"avg-rtt=28.987 (std-dev=129.490)",
		"avg-rtt=28.987 (std-dev=129.490, mean-ad=240.040, median-ad=243.961, siqr=169.591, cv=0.223, std-error=1.302, 99.0% ci=[1889.246, 1895.954])", 1)
	if in == string(sample(t, "v3.7-pp-udp-m64-t2.txt")) {
		t.Fatal("sample changed: the avg line was not replaced")
	}
	r, err := Parse([]byte(in))
	if err != nil || r.AvgUs != 28.987 || r.StdDevUs != 129.490 || !r.RoundTrip {
		t.Fatalf("3.8 avg line: %+v, %v", r, err)
	}
	// 3.8's page shows "MAX observation" without the angle brackets.
	in = strings.NewReplacer("<MAX>", "MAX", "<MIN>", "MIN").Replace(in)
	if r, err := Parse([]byte(in)); err != nil || r.MaxUs != 11031.691 || r.MinUs != 15.058 {
		t.Fatalf("MAX/MIN without brackets: %+v, %v", r, err)
	}
}

// Each edit of a real sample breaks one invariant; Parse must refuse it and
// say which.
func TestParseRefusesBrokenInvariants(t *testing.T) {
	base := string(sample(t, "v3.7-pp-udp-m64-t2.txt"))
	for name, tc := range map[string]struct{ old, new, want string }{
		"p99 above p99.9":      {"percentile 99.000 =  143.688", "percentile 99.000 = 2000.000", "percentile 99 = 2000.000 is above percentile 99.9"},
		"p50 below min":        {"percentile 50.000 =   20.317", "percentile 50.000 =    1.000", "outside MIN"},
		"max below p99.999":    {"<MAX> observation = 11031.691", "<MAX> observation = 100.000", "outside MIN"},
		"min above max":        {"<MIN> observation =   15.058", "<MIN> observation = 20000.000", "MIN 20000.000 is above MAX"},
		"percentiles reversed": {"percentile 25.000", "percentile 95.000", "percentile 95 listed after percentile 50"},
		"no p50":               {"---> percentile 50.000 =   20.317\n", "", "no percentile 50"},
		"no p99.9":             {"---> percentile 99.900 = 1833.170\n", "", "no percentile 99.9"},
		"no max":               {"---> <MAX> observation = 11031.691\n", "", `no "<MAX> observation" line`},
		"no window":            {"[Valid Duration]", "[Valid]", `no "[Valid Duration]" line`},
		"observations differ":  {"Total 53272 observations", "Total 53271 observations", "53271 observations but 53272 received"},
		"second server":        {"Server No: 0", "Server No: 1", "statistics for server 1"},
		"huge number":          {"percentile 50.000 =   20.317", "percentile 50.000 =   1" + strings.Repeat("9", 400), "not a finite number"},
	} {
		t.Run(name, func(t *testing.T) {
			in := strings.Replace(base, tc.old, tc.new, 1)
			if in == base {
				t.Fatalf("%q not in the sample", tc.old)
			}
			_, err := Parse([]byte(in))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want it to say %q", err, tc.want)
			}
		})
	}
}

// Counts of trouble from a real sample with the counters line as sockperf
// prints it when they are non-zero (red: client.cpp colours the line).
func TestParseWarnings(t *testing.T) {
	in := strings.Replace(string(sample(t, "v3.7-pp-udp-m64-t2.txt")),
		"# dropped messages = 0; # duplicated messages = 0; # out-of-order messages = 0",
		"\x1b[0;31m# dropped messages = 12; # duplicated messages = 3; # out-of-order messages = 1\x1b[0m", 1)
	r, err := Parse([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if r.Dropped != 12 || r.Duplicated != 3 || r.OutOfOrder != 1 {
		t.Fatalf("counts %d %d %d", r.Dropped, r.Duplicated, r.OutOfOrder)
	}
	if w := r.Warnings(); len(w) != 1 || !strings.Contains(w[0], "12 dropped, 3 duplicated and 1 out-of-order") {
		t.Errorf("warnings %v", w)
	}
}

func TestParseVersion(t *testing.T) {
	v, err := ParseVersion(sample(t, "v3.7-version.txt"))
	if err != nil || v != "3.7-no.git" {
		t.Fatalf("%q %v", v, err)
	}
	if _, err := ParseVersion([]byte("bash: sockperf: command not found")); err == nil {
		t.Fatal("no version accepted")
	}
}

func TestParsePing(t *testing.T) {
	r, err := ParsePing(sample(t, "ping-iputils20221126-c5.txt"))
	if err != nil {
		t.Fatal(err)
	}
	first, ok := r.First()
	if !ok || first != 43 || r.Transmitted != 5 || r.Received != 5 {
		t.Fatalf("first %v %v, %d/%d", first, ok, r.Received, r.Transmitted)
	}
	if s := r.Steady(); len(s) != 4 || Median(s) != 55.5 { // 56, 192, 55, 52 µs
		t.Fatalf("steady %v median %v", s, Median(s))
	}
	r, err = ParsePing(sample(t, "ping-iputils20221126-noreply.txt"))
	if err != nil || r.Received != 0 || len(r.Replies) != 0 {
		t.Fatalf("no reply: %+v %v", r, err)
	}
	if _, ok := r.First(); ok {
		t.Fatal("a lost first echo has a round trip")
	}
	broken := strings.Replace(string(sample(t, "ping-iputils20221126-c5.txt")), "5 received", "4 received", 1)
	if _, err := ParsePing([]byte(broken)); err == nil || !strings.Contains(err.Error(), "5 reply lines but ping counted 4") {
		t.Fatalf("miscounted: %v", err)
	}
	if _, err := ParsePing([]byte("64 bytes from x: icmp_seq=1 ttl=64 time=1 ms\n")); err == nil {
		t.Fatal("no closing counts accepted")
	}
	// A second reply to one sequence: ping's own duplicate, marked
	// "(DUP!)" and counted apart ("+1 duplicates"), is left out; an
	// unmarked one (the fuzzer's, testdata/fuzz/FuzzParsePing) would make
	// two first packets and is refused.
	c5 := string(sample(t, "ping-iputils20221126-c5.txt"))
	dup := strings.Replace(c5, "icmp_seq=2 ttl=64 time=0.056 ms\n", "icmp_seq=2 ttl=64 time=0.056 ms\n64 bytes from 198.19.250.2: icmp_seq=2 ttl=64 time=0.061 ms (DUP!)\n", 1)
	dup = strings.Replace(dup, "5 received,", "5 received, +1 duplicates,", 1)
	if r, err := ParsePing([]byte(dup)); err != nil || len(r.Replies) != 5 || len(r.Steady()) != 4 {
		t.Fatalf("ping's own duplicate: %+v %v", r, err)
	}
	twice := strings.Replace(c5, "icmp_seq=5 ", "icmp_seq=1 ", 1)
	if _, err := ParsePing([]byte(twice)); err == nil || !strings.Contains(err.Error(), "icmp_seq=1 answered twice without (DUP!)") {
		t.Fatalf("an unmarked second reply: %v", err)
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"v3.7-pp-udp-m64-t2.txt", "v3.7-ul-udp-m64-t2.txt", "v3.7-pp-udp-m64-t2-halfrtt.txt", "public-mellanox-sockperf-issue106-tcp-1obs.txt", "v3.7-pp-tcp-refused.txt"} {
		f.Add(sample(f, s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := Parse(data)
		if err != nil {
			return
		}
		// Accepted means: ordered, complete, non-negative.
		if !(r.MinUs <= r.P50() && r.P50() <= r.P99() && r.P99() <= r.P999() && r.P999() <= r.MaxUs) {
			t.Fatalf("accepted out of order: min %v p50 %v p99 %v p99.9 %v max %v", r.MinUs, r.P50(), r.P99(), r.P999(), r.MaxUs)
		}
		for _, p := range RequiredPercentiles {
			if _, ok := r.Percentile(p); !ok {
				t.Fatalf("accepted without percentile %g", p)
			}
		}
		for i := 1; i < len(r.Percentiles); i++ {
			if r.Percentiles[i].P >= r.Percentiles[i-1].P || r.Percentiles[i].Us > r.Percentiles[i-1].Us {
				t.Fatalf("accepted percentiles out of order: %v", r.Percentiles)
			}
		}
		if r.Observations < 1 || r.Observations != r.ReceivedMessages || r.SentMessages < 0 || r.Dropped < 0 || r.Duplicated < 0 || r.OutOfOrder < 0 || r.MinUs < 0 || r.RunTimeSeconds < 0 {
			t.Fatalf("accepted bad counts: %+v", r)
		}
	})
}

func FuzzParsePing(f *testing.F) {
	f.Add(sample(f, "ping-iputils20221126-c5.txt"))
	f.Add(sample(f, "ping-iputils20221126-noreply.txt"))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := ParsePing(data)
		if err != nil {
			return
		}
		if len(r.Replies) != r.Received || r.Received < 0 || r.Transmitted < 0 {
			t.Fatalf("accepted %d replies, %d received, %d sent", len(r.Replies), r.Received, r.Transmitted)
		}
		for _, rep := range r.Replies {
			if rep.Seq < 1 || rep.Seq > r.Transmitted || rep.Us < 0 {
				t.Fatalf("accepted reply %+v of %d", rep, r.Transmitted)
			}
		}
		if v, ok := r.First(); ok && len(r.Steady()) != len(r.Replies)-1 || ok && v < 0 {
			t.Fatalf("first/steady split wrong: %+v", r)
		}
	})
}
