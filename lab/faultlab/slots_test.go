package faultlab

import (
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Rows of both loads at once: never more traffic rows or light rows at a time
// than their slots, and every row runs.
func TestSlotsBoundEachLoad(t *testing.T) {
	for _, c := range []struct{ traffic, light int }{{2, 2}, {1, 1}, {2, 1}, {3, 4}} {
		s := NewSlots(c.traffic, c.light)
		var windows, light, maxWindows, maxLight, ran atomic.Int64
		raise := func(cur *atomic.Int64, peak *atomic.Int64, by int64) {
			v := cur.Add(by)
			for {
				p := peak.Load()
				if v <= p || peak.CompareAndSwap(p, v) {
					return
				}
			}
		}
		var loads []RowLoad
		for i := range 13 {
			loads = append(loads, []RowLoad{Traffic, Light, Light}[i%3])
		}
		var wg sync.WaitGroup
		for _, l := range loads {
			wg.Go(func() {
				release := s.Acquire(l)
				if l.traffic {
					raise(&windows, &maxWindows, 1)
				} else {
					raise(&light, &maxLight, 1)
				}
				time.Sleep(time.Millisecond)
				if l.traffic {
					windows.Add(-1)
				} else {
					light.Add(-1)
				}
				ran.Add(1)
				release()
				release() // a second release gives nothing back twice
			})
		}
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(time.Minute):
			t.Fatalf("slots %+v: %d of %d rows ran; the rest wait forever", c, ran.Load(), len(loads))
		}
		if maxWindows.Load() > int64(c.traffic) || maxLight.Load() > int64(c.light) {
			t.Errorf("slots %+v: up to %d traffic rows and %d light rows at once", c, maxWindows.Load(), maxLight.Load())
		}
		if maxWindows.Load() == 0 || maxLight.Load() == 0 {
			t.Errorf("slots %+v: a kind of row never ran (traffic %d, light %d)", c, maxWindows.Load(), maxLight.Load())
		}
	}
}

// A light row does not wait for the traffic rows, nor they for it.
func TestSlotsKindsIndependent(t *testing.T) {
	s := NewSlots(2, 1)
	held := []func(){s.Acquire(Traffic), s.Acquire(Traffic)}
	got := make(chan func(), 1)
	go func() { got <- s.Acquire(Light) }()
	select {
	case r := <-got:
		held = append(held, r)
	case <-time.After(time.Minute):
		t.Fatal("a light row waited for the traffic rows")
	}
	third := make(chan func(), 1)
	go func() { third <- s.Acquire(Traffic) }()
	select {
	case <-third:
		t.Fatal("a third traffic row ran beside two, with two traffic slots")
	case <-time.After(50 * time.Millisecond):
	}
	held[0]()
	(<-third)()
	for _, r := range held[1:] {
		r()
	}
}

func TestSlotsFromEnv(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	s, err := SlotsFromEnv(env(nil))
	if err != nil || cap(s.traffic) != DefaultTrafficRows || cap(s.light) != DefaultLightRows {
		t.Fatalf("defaults: %v, %v", s, err)
	}
	s, err = SlotsFromEnv(env(map[string]string{EnvTrafficRows: "1", EnvLightRows: "3"}))
	if err != nil || cap(s.traffic) != 1 || cap(s.light) != 3 {
		t.Fatalf("1 and 3: %v, %v", s, err)
	}
	_, err = SlotsFromEnv(env(map[string]string{EnvTrafficRows: "0", EnvLightRows: "two"}))
	if err == nil {
		t.Fatal("0 and \"two\" accepted")
	}
	for _, want := range []string{EnvTrafficRows + `="0"`, EnvLightRows + `="two"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not name %s: %v", want, err)
		}
	}
}
