package faultlab

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// RowLoad is what a parallel row's harness runs put on the lab while the row
// runs; it decides which slots the row waits for (Env.Parallel).
type RowLoad struct {
	slots   string // what it waits for, in the log
	traffic bool
}

var (
	// Light rows end before any traffic window: API faults, signals before
	// the data path, an unreachable or stopped guest, a full output
	// directory, teardown faults. They load the API services and wait.
	Light = RowLoad{slots: "a light slot"}
	// Traffic rows run a harness through a traffic window (iperf3 at full
	// rate through the userspace datapath, or the checks' sustained flow).
	// concurrent/two-runs runs two at once and takes one slot, as it took one
	// of two rows before the slots: its second run is its fault, and three
	// windows at once passed every CI run since 2026-12-03 (taking two slots,
	// it ran alone and the OVN job's five rows took 416 s instead of 315-346).
	Traffic = RowLoad{slots: "a traffic slot", traffic: true}
)

// The slot counts, from run.sh; unset: the defaults.
const (
	EnvTrafficRows = "ASAP2E2E_FAULTS_TRAFFIC_ROWS"
	EnvLightRows   = "ASAP2E2E_FAULTS_LIGHT_ROWS"
)

// DefaultTrafficRows is how many traffic rows run at once. Not more: on
// this 2-core lab four rows with traffic at once stalled a healthy stream for
// 5 s (traffic.stall_timeout) in 2 of 21 rows of a CI run on 2026-12-03.
const DefaultTrafficRows = 2

// DefaultLightRows is how many light rows run beside them: they wait on
// timeouts, guests and API answers far more than they compute.
const DefaultLightRows = 2

// Slots bounds the rows that run at once, per kind of load: a traffic row
// takes one traffic slot, a light row one light slot.
// Light rows never wait for traffic rows, nor the other way round.
type Slots struct {
	traffic, light chan struct{}
}

// NewSlots returns slots for traffic rows and light rows; both at least 1.
func NewSlots(traffic, light int) *Slots {
	return &Slots{traffic: make(chan struct{}, max(traffic, 1)), light: make(chan struct{}, max(light, 1))}
}

// SlotsFromEnv reads the slot counts; every bad value is named at once.
func SlotsFromEnv(getenv func(string) string) (*Slots, error) {
	counts := map[string]int{EnvTrafficRows: DefaultTrafficRows, EnvLightRows: DefaultLightRows}
	var problems []string
	for _, key := range []string{EnvTrafficRows, EnvLightRows} {
		v := getenv(key)
		if v == "" {
			continue
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			problems = append(problems, fmt.Sprintf("%s=%q: want a whole number of rows, at least 1", key, v))
			continue
		}
		counts[key] = n
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("fault matrix slots: %s", strings.Join(problems, "; "))
	}
	return NewSlots(counts[EnvTrafficRows], counts[EnvLightRows]), nil
}

// Acquire waits for the slot a row of this load needs and returns its
// release (a second call releases nothing).
func (s *Slots) Acquire(l RowLoad) (release func()) {
	ch := s.light
	if l.traffic {
		ch = s.traffic
	}
	ch <- struct{}{}
	var once sync.Once
	return func() { once.Do(func() { <-ch }) }
}

var (
	slotsOnce sync.Once
	slots     *Slots
	slotsErr  error
)

// Parallel marks the row parallel (t.Parallel) and then waits for its slots,
// held until the row ends. Call it first in the row, before Matrix.Record,
// so the row's time in the table does not count its wait.
func (e *Env) Parallel(t *testing.T, l RowLoad) {
	t.Helper()
	t.Parallel()
	slotsOnce.Do(func() { slots, slotsErr = SlotsFromEnv(os.Getenv) })
	if slotsErr != nil {
		t.Fatal(slotsErr)
	}
	start := time.Now()
	release := slots.Acquire(l)
	t.Cleanup(release)
	if w := time.Since(start); w >= time.Second {
		t.Logf("waited %s for %s", w.Round(time.Second), l.slots)
	}
}
