package results

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"strings"
)

// Load reads and validates a results file. Summaries are recomputed from the
// runs (with the file's CV limit), so a file edited by hand or written by an
// older harness cannot carry stale statistics.
func Load(path string) (*Results, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("results: %w", err)
	}
	r, err := Decode(data)
	if err != nil {
		return nil, fmt.Errorf("results %s: %w", path, err)
	}
	return r, nil
}

// Decode parses and validates a results document (unknown keys are errors,
// every problem is reported at once).
func Decode(data []byte) (*Results, error) {
	var probe struct {
		SchemaVersion *int `json:"schema_version"`
	}
	if err := json.Unmarshal(data, &probe); err != nil {
		return nil, fmt.Errorf("not a JSON object: %w", err)
	}
	switch {
	case probe.SchemaVersion == nil:
		return nil, errors.New("schema_version missing: not a results file of this harness")
	case *probe.SchemaVersion > SchemaVersion:
		return nil, fmt.Errorf("schema_version %d is newer than this tool reads (%d): use a newer harness", *probe.SchemaVersion, SchemaVersion)
	case *probe.SchemaVersion < MinSchemaVersion:
		return nil, fmt.Errorf("schema_version %d is not supported (this tool reads %d to %d)", *probe.SchemaVersion, MinSchemaVersion, SchemaVersion)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var r Results
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	if err := Validate(&r); err != nil {
		return nil, err
	}
	for i := range r.Profiles {
		if r.Profiles[i].Path == "" {
			r.Profiles[i].Path = r.Config.ExpectedPath
		}
		Summarize(&r.Profiles[i], r.Config.CVLimitPercent)
	}
	return &r, nil
}

// Validate checks a results document and returns every problem at once,
// each as "key.path: message, got VALUE".
func Validate(r *Results) error {
	var p []string
	add := func(format string, a ...any) { p = append(p, fmt.Sprintf(format, a...)) }
	if r.SchemaVersion < MinSchemaVersion || r.SchemaVersion > SchemaVersion {
		add("schema_version: must be %d to %d, got %d", MinSchemaVersion, SchemaVersion, r.SchemaVersion)
	}
	if r.Fleet != nil && r.SchemaVersion < FleetSchemaVersion {
		add("fleet: a fleet section needs schema_version %d or later, got %d", FleetSchemaVersion, r.SchemaVersion)
	}
	validateFleet(r.Fleet, add)
	if r.RunID == "" {
		add("run_id: must be set")
	}
	validPath := func(key string, v Path, allowEmpty bool) {
		if (v == "" && allowEmpty) || v == PathASAP2 || v == PathBaseline {
			return
		}
		add("%s: must be asap2 or baseline, got %q", key, v)
	}
	validPath("config.expected_path", r.Config.ExpectedPath, true)
	nonNeg := func(key string, v float64) {
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			add("%s: must be a finite number >= 0, got %v", key, v)
		}
	}
	nonNeg("config.duration_seconds", r.Config.DurationSeconds)
	nonNeg("config.cv_limit_percent", r.Config.CVLimitPercent)
	nonNeg("config.line_rate_bps", r.Config.LineRateBps)
	if r.Environment.MTU < 0 {
		add("environment.mtu: must be >= 0, got %d", r.Environment.MTU)
	}
	validateHarness(r.Environment.Harness, add)
	for i, h := range r.Environment.Hypervisors {
		validatePodReplacements(fmt.Sprintf("environment.hypervisors[%d]", i), h, add)
	}
	seen := map[string]int{}
	for i, pr := range r.Profiles {
		k := fmt.Sprintf("profiles[%d]", i)
		if pr.ID == "" {
			add("%s.id: must be set", k)
		}
		proto := strings.ToLower(pr.Protocol)
		if proto != ProtoTCP && proto != ProtoUDP {
			add("%s.protocol: must be tcp or udp, got %q", k, pr.Protocol)
		}
		if pr.Streams < 1 {
			add("%s.streams: must be >= 1, got %d", k, pr.Streams)
		}
		if pr.LengthBytes < 0 {
			add("%s.length_bytes: must be >= 0, got %d", k, pr.LengthBytes)
		}
		nonNeg(k+".bitrate_bps", pr.BitrateBps)
		validPath(k+".path", pr.Path, r.Config.ExpectedPath != "")
		path := pr.Path
		if path == "" {
			path = r.Config.ExpectedPath
		}
		dk := pr.ID + "\x00" + string(path)
		if j, dup := seen[dk]; dup {
			add("%s: profile %q path %s duplicates profiles[%d]", k, pr.ID, path, j)
		} else {
			seen[dk] = i
		}
		for j, run := range pr.Runs {
			rk := fmt.Sprintf("%s.runs[%d]", k, j)
			nonNeg(rk+".offered_bps", run.OfferedBps)
			nonNeg(rk+".delivered_bps", run.DeliveredBps)
			if math.IsNaN(run.LossPercent) || run.LossPercent < 0 || run.LossPercent > 100 {
				add("%s.loss_percent: must be within 0..100, got %v", rk, run.LossPercent)
			}
			if run.Retransmits < 0 {
				add("%s.retransmits: must be >= 0, got %d", rk, run.Retransmits)
			}
			for n, iv := range run.Intervals {
				if iv.End < iv.Start || math.IsNaN(iv.Bps) || iv.Bps < 0 {
					add("%s.intervals[%d]: must have end >= start and bps >= 0, got %+v", rk, n, iv)
				}
			}
			for n, rt := range run.SetupRetries {
				if rt.Reason == "" || rt.At.IsZero() {
					add("%s.setup_retries[%d]: must have at and reason, got %+v", rk, n, rt)
				}
			}
		}
		checkVerdicts(k+".offload", pr.Offload, add)
	}
	checkVerdicts("offload", r.Offload, add)
	for _, f := range Families.All() {
		if f.Value.Validate != nil {
			f.Value.Validate(r, add)
		}
	}
	for i, t := range r.Timings {
		if t.Phase == "" {
			add("timings[%d].phase: must be set", i)
		}
		nonNeg(fmt.Sprintf("timings[%d].seconds", i), t.Seconds)
	}
	if len(p) == 0 {
		return nil
	}
	return fmt.Errorf("%d problem(s): %s", len(p), strings.Join(p, "; "))
}

func checkVerdicts(key string, cs []CheckResult, add func(string, ...any)) {
	for i, c := range cs {
		if c.Name == "" {
			add("%s[%d].name: must be set", key, i)
		}
		switch c.Verdict {
		case VerdictOffloaded, VerdictSoftware, VerdictInconclusive:
		default:
			add("%s[%d].verdict: must be offloaded, software or inconclusive, got %q", key, i, c.Verdict)
		}
	}
}

// validatePodReplacements checks that h's pod replacements are a chain:
// each names both pods, the node, when and why, and moves from where the
// commands ran (pod, then the previous replacement's to).
func validatePodReplacements(key string, h Hypervisor, add func(string, ...any)) {
	if len(h.PodReplacements) > 0 && h.Pod == "" {
		add("%s.pod_replacements: need the pod found at connect (%s.pod), which is not set", key, key)
	}
	from, fromKey := h.Pod, key+".pod"
	for i, m := range h.PodReplacements {
		k := fmt.Sprintf("%s.pod_replacements[%d]", key, i)
		for _, f := range []struct{ name, v string }{{"from", m.From}, {"to", m.To}, {"node", m.Node}, {"reason", m.Reason}} {
			if f.v == "" {
				add("%s.%s: must be set", k, f.name)
			}
		}
		if m.At.IsZero() {
			add("%s.at: must be set", k)
		}
		if m.To != "" && m.To == m.From {
			add("%s.to: must be another pod than from, got %q", k, m.To)
		}
		if from != "" && m.From != "" && m.From != from {
			add("%s.from: must be %q (%s), where the commands ran, got %q", k, from, fromKey, m.From)
		}
		from, fromKey = m.To, k+".to"
	}
}
