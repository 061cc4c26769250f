package report

import (
	"strings"
	"testing"
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// The seed's results plus what issue 14 records per repeat: the guards
// (TCP and UDP differ: --snd-timeout is TCP's only; the baseline run's older
// iperf3 lacked it) and one UDP stream-setup retry that then succeeded and
// two that ran out.
func notesSet(t *testing.T) *Set {
	t.Helper()
	a, b := seedResults(results.PathASAP2), seedResults(results.PathBaseline)
	at := time.Date(2026, 12, 2, 16, 0, 40, 0, time.UTC)
	for _, f := range []*results.Results{a, b} {
		for i := range f.Profiles {
			p := &f.Profiles[i]
			g := "client --connect-timeout 30000; server --rcv-timeout 5000"
			if p.Protocol == results.ProtoTCP {
				g = "client --connect-timeout 30000 --snd-timeout 5000; server --rcv-timeout 5000 --snd-timeout 5000"
				if f == b {
					g = "client --connect-timeout 30000; server --rcv-timeout 5000; without client --snd-timeout (iperf3 3.9; needs 3.12), server --snd-timeout (iperf3 3.9; needs 3.12)"
				}
			}
			for j := range p.Runs {
				p.Runs[j].Iperf3Guards = g
			}
			switch {
			case f == b && p.ID == "udp-b0-p1":
				p.Runs[0].SetupRetries = []results.Retry{{At: at, Reason: "port 5201: unable to read from stream socket: Resource temporarily unavailable"}}
			case f == a && p.ID == "udp-500m-p15":
				p.Runs[0].SetupRetries = []results.Retry{
					{At: at.Add(time.Minute), Reason: "port 5201: unable to read from stream socket: Resource temporarily unavailable"},
					{At: at.Add(2 * time.Minute), Reason: "port 5202: unable to write to stream socket: No buffer space available"},
				}
				p.Runs[0].Error = "iperf3 run udp-500m-p15: UDP stream setup failed on all 3 attempts"
			}
		}
	}
	s, err := NewSet(a, b)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// section is the markdown from the "### " line starting with title up to
// the next heading.
func section(md, title string) string {
	i := strings.Index(md, "### "+title)
	if i < 0 {
		return ""
	}
	rest := md[i+4:]
	if j := strings.Index(rest, "\n#"); j >= 0 {
		rest = rest[:j]
	}
	return rest
}

func TestRunNotesUnderTheirTable(t *testing.T) {
	md := Markdown(notesSet(t), Options{})
	tcp := section(md, "TCP throughput")
	for _, want := range []string{
		"- iperf3's own dead-peer guards: client --connect-timeout 30000 --snd-timeout 5000; server --rcv-timeout 5000 --snd-timeout 5000 (TCP 1 stream (`-P1`), ASAP²; TCP 15 streams (`-P15`), ASAP²; TCP 30 streams (`-P30`), ASAP²).",
		"- iperf3's own dead-peer guards: client --connect-timeout 30000; server --rcv-timeout 5000; without client --snd-timeout (iperf3 3.9; needs 3.12), server --snd-timeout (iperf3 3.9; needs 3.12) (TCP 1 stream (`-P1`), Baseline;",
	} {
		if !strings.Contains(tcp, want) {
			t.Errorf("TCP table lacks %q:\n%s", want, tcp)
		}
	}
	if strings.Contains(tcp, "retried") {
		t.Errorf("a UDP retry under the TCP table:\n%s", tcp)
	}
	b0 := section(md, "UDP unlimited")
	for _, want := range []string{
		"- iperf3's own dead-peer guards in every repeat: client --connect-timeout 30000; server --rcv-timeout 5000.",
		"- UDP 1 stream (`-P1`), Baseline repeat 1: UDP stream setup retried 1× (16:00:40 UTC port 5201: unable to read from stream socket: Resource temporarily unavailable), then succeeded.",
		"- " + SetupRetryNote + ".",
	} {
		if !strings.Contains(b0, want) {
			t.Errorf("UDP unlimited table lacks %q:\n%s", want, b0)
		}
	}
	capped := section(md, "UDP capped")
	if want := "repeat 1: UDP stream setup retried 2× (16:01:40 UTC port 5201: unable to read from stream socket: Resource temporarily unavailable; 16:02:40 UTC port 5202: unable to write to stream socket: No buffer space available), then failed (see Errors)."; !strings.Contains(capped, want) {
		t.Errorf("capped table lacks %q:\n%s", want, capped)
	}
	if n := strings.Count(md, SetupRetryNote); n != 2 {
		t.Errorf("the retry explanation appears %d times, want once under each table with retries", n)
	}

	html := string(HTML(notesSet(t), Options{}))
	for _, want := range []string{
		`<ul class="note"><li>iperf3&#39;s own dead-peer guards in every repeat: client --connect-timeout 30000; server --rcv-timeout 5000.</li>`,
		"<li>UDP 1 stream (<code>-P1</code>), Baseline repeat 1: UDP stream setup retried 1× (16:00:40 UTC port 5201: unable to read from stream socket: Resource temporarily unavailable), then succeeded.</li>",
	} {
		if !strings.Contains(html, want) {
			t.Errorf("HTML lacks %q", want)
		}
	}
}

// Results written before guards and retries were recorded render as
// before: no notes.
func TestRunNotesAbsentForOlderResults(t *testing.T) {
	for _, tb := range BuildTables(seedSet(t)) {
		if n := RunNotes(tb); n != nil {
			t.Errorf("%s: notes %q", tb.Title, n)
		}
	}
}
