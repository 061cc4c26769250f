package report

import (
	"fmt"
	"strings"
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// SetupRetryNote says why a UDP repeat may have run more than once.
const SetupRetryNote = "iperf3 sets a UDP stream up with one datagram each way and no retransmission (esnet/iperf#862); a run that failed there, before any traffic, was run again"

// RunNotes are the remarks under a results table about how its repeats
// ran: the iperf3 guards their commands carried (one line when every repeat
// had the same, else one per distinct set, naming who ran with it), then
// every UDP stream-setup retry with its time and reason, in table row
// order, and why such retries happen. Plain text, one remark each; nil when
// there is nothing to say (results written before these were recorded).
func RunNotes(t Table) []string {
	type side struct {
		label string
		p     *results.ProfileResult
	}
	var sides []side
	for _, r := range t.Rows {
		for _, p := range []*results.ProfileResult{r.ASAP2, r.Baseline} {
			if p != nil {
				sides = append(sides, side{profileTitle(p) + ", " + pathName(p.Path), p})
			}
		}
	}
	guards := map[string][]string{} // guard record -> the profiles and paths that ran with it
	var order []string
	var retries []string
	for _, sd := range sides {
		for _, run := range sd.p.Runs {
			if g := run.Iperf3Guards; g != "" {
				if _, seen := guards[g]; !seen {
					order = append(order, g)
				}
				if l := guards[g]; len(l) == 0 || l[len(l)-1] != sd.label {
					guards[g] = append(l, sd.label)
				}
			}
			if len(run.SetupRetries) == 0 {
				continue
			}
			what := make([]string, len(run.SetupRetries))
			for i, rt := range run.SetupRetries {
				what[i] = rt.At.UTC().Format(time.TimeOnly) + " UTC " + rt.Reason
			}
			outcome := "then succeeded"
			if run.Error != "" {
				outcome = "then failed (see Errors)"
			}
			retries = append(retries, fmt.Sprintf("%s repeat %d: UDP stream setup retried %d× (%s), %s.",
				sd.label, run.Repeat, len(run.SetupRetries), strings.Join(what, "; "), outcome))
		}
	}
	var notes []string
	switch len(order) {
	case 0:
	case 1:
		notes = append(notes, "iperf3's own dead-peer guards in every repeat: "+order[0]+".")
	default:
		for _, g := range order {
			notes = append(notes, fmt.Sprintf("iperf3's own dead-peer guards: %s (%s).", g, strings.Join(guards[g], "; ")))
		}
	}
	if len(retries) > 0 {
		notes = append(append(notes, retries...), SetupRetryNote+".")
	}
	return notes
}
