package harness

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/config"
	"github.com/mosk-qa/asap2-e2e/e2e/iperf3"
	"github.com/mosk-qa/asap2-e2e/e2e/ndr"
	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// fillPackets adds a UDP repeat's packet rates (iperf3.Packets); a result
// whose datagrams cannot be counted keeps none, and the log says why.
func (pair *Pair) fillPackets(run *results.Run, id string, r iperf3.Result) {
	if r.Protocol != iperf3.UDP {
		return
	}
	p, err := iperf3.Packets(r)
	if err != nil {
		pair.Logf("%s repeat %d: no packet rates: %v", id, run.Repeat, err)
		return
	}
	run.Packets = &p
}

// searchProfile is the iperf3 profile of one search trial at rateBps
// (aggregate; 0 = unlimited), split evenly over the streams: iperf3 -b is
// per stream.
func searchProfile(id string, sc config.PPSSearch, rateBps float64) iperf3.Profile {
	per := int64(0)
	if rateBps > 0 {
		per = max(1, int64(math.Round(rateBps/float64(sc.Streams))))
	}
	return iperf3.Profile{
		ID: id, Name: fmt.Sprintf("%s trial", id), Row: id, Protocol: iperf3.UDP,
		Streams: sc.Streams, BitratePerStream: per, Length: sc.LengthBytes, Table: iperf3.TablePPS,
	}
}

// RunSearch runs one zero-loss (kind results.SearchNDR) or partial-drop
// (results.SearchPDR) search with pps.search's settings on the run's
// expected path, each trial one iperf3 run between the guests (nothing
// else runs on guests or hypervisors meanwhile), and writes it into the
// results file. The error is a trial that did not measure or an
// invalid search; a search that found no rate is not an error (its
// result says so, with rate 0).
func (pair *Pair) RunSearch(ctx context.Context, kind, id string, lossPercent float64) (_ results.SearchResult, err error) {
	ctx, end, err := pair.run.guard(ctx)
	if err != nil {
		return results.SearchResult{ID: id}, err
	}
	defer func() { err = end(err) }()
	sc := pair.run.Config.PPS.Search
	sr := results.SearchResult{
		ID: id, Kind: kind, Path: pair.run.Config.Run.ExpectedPath,
		Streams: sc.Streams, LengthBytes: sc.LengthBytes, LossPercent: lossPercent,
		TrialSeconds: sc.TrialDuration.Seconds(), MaxTrials: sc.MaxTrials, ResolutionPercent: sc.ResolutionPercent,
	}
	if err := pair.notRunOnDamage(id); err != nil {
		sr.Error = err.Error()
		return sr, err
	}
	extra := map[int]results.SearchTrial{}
	trial := func(ctx context.Context, rate float64) (ndr.Outcome, error) {
		n := len(extra) + 1
		p := searchProfile(id, sc, rate)
		in := pair.iperfInput(p, sc.TrialDuration)
		in.UDPSetupRetries, in.UDPSetupBackoff = pair.run.Config.Traffic.UDPSetupRetries, pair.run.Config.Traffic.UDPSetupBackoff
		st := results.SearchTrial{N: n, RequestedBps: rate, StartedAt: time.Now().UTC()}
		in.ClientsStarting = func(t time.Time) {
			pair.Logf("%s trial %d/%d at %s: %s, until %s", id, n, sc.MaxTrials, rateText(rate), in.Duration+in.Omit, t.Add(in.Duration+in.Omit).UTC().Format("15:04:05"))
		}
		stop := pair.Timings.Track(results.PhaseTraffic)
		m, err := iperf3.Run(ctx, in)
		stop()
		st.EvidenceFile = pair.saveIperfEvidence(fmt.Sprintf("iperf3/%s-t%d", id, n), m)
		if err == nil && sr.Iperf3Version == "" {
			sr.Iperf3Version = m.Result.Version
		}
		extra[n] = st
		if err != nil {
			return ndr.Outcome{}, err
		}
		o := ndr.Outcome{OfferedBps: m.Result.OfferedBps, DeliveredBps: m.Result.DeliveredBps, LossPercent: m.Result.LossPercent}
		if pk, perr := iperf3.Packets(m.Result); perr == nil {
			// The packet basis also discounts what iperf3 < 3.18 counted but never sent.
			o.LossPercent = pk.LossPercent
			st.OfferedPps, st.DeliveredPps = pk.OfferedPps, pk.DeliveredPps
			sr.PacketBasis = pk.Basis
		} else {
			pair.Logf("%s trial %d: no packet rates (%v); loss is iperf3's", id, n, perr)
		}
		extra[n] = st
		return o, nil
	}
	res, err := ndr.Search(ctx, ndr.Config{
		LossPercent: lossPercent, UpperBps: sc.UpperBps, ResolutionPercent: sc.ResolutionPercent, MaxTrials: sc.MaxTrials,
	}, trial)
	fillSearch(&sr, res, extra)
	if err != nil {
		sr.Error = err.Error()
	}
	pair.Logf("%s: %s", id, searchLine(sr))
	if werr := pair.Results.PutSearch(sr); werr != nil && err == nil {
		err = werr
	}
	return sr, err
}

// fillSearch copies the search's outcome and trials into the schema, with
// what the harness kept of each trial (start, packet rates, evidence).
func fillSearch(sr *results.SearchResult, res ndr.Result, extra map[int]results.SearchTrial) {
	sr.Found, sr.RateBps = res.Found, res.RateBps
	if res.Found && sr.LengthBytes > 0 {
		sr.RatePps = res.RateBps / (8 * float64(sr.LengthBytes))
	}
	sr.LowerBps, sr.UpperBps = res.LowerBps, res.UpperBps
	sr.FinalLowerBps, sr.FinalUpperBps = res.FinalLowerBps, res.FinalUpperBps
	sr.StopReason = res.StopReason
	sr.Trials = nil
	for _, t := range res.Trials {
		st := extra[t.N]
		st.N, st.Phase, st.RequestedBps = t.N, string(t.Phase), t.RateBps
		st.OfferedBps, st.DeliveredBps, st.LossPercent = t.OfferedBps, t.DeliveredBps, t.LossPercent
		st.Pass, st.Reason, st.Error = t.Pass, t.Reason, t.Err
		sr.Trials = append(sr.Trials, st)
	}
}

func rateText(bps float64) string {
	if bps == 0 {
		return "unlimited (-b 0)"
	}
	return results.FormatBps(bps)
}

// searchLine is the console summary of a search.
func searchLine(sr results.SearchResult) string {
	if !sr.Found {
		return fmt.Sprintf("%s none found after %d trials: %s", sr.Kind, len(sr.Trials), sr.StopReason)
	}
	return fmt.Sprintf("%s %s (%s at %d B) after %d trials: %s", sr.Kind, results.FormatBps(sr.RateBps),
		results.FormatPps(sr.RatePps), sr.LengthBytes, len(sr.Trials), sr.StopReason)
}
