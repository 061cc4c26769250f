// Package harness is the run itself, without Ginkgo: it ties configuration,
// cloud clients, the topology, SSH runners, iperf3, the offload checks and the
// results file together so that suites stay thin and tools can reuse it.
package harness

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"regexp"
	"time"
)

// runIDPattern is the shape of a run id: UTC start time plus 4 random hex
// digits, e.g. "20261202t091530-3fa2". It sorts by time, is safe in every
// OpenStack name and tag, and the sweeper can read a run's age from it.
var runIDPattern = regexp.MustCompile(`^[0-9]{8}t[0-9]{6}-[0-9a-f]{4}$`)

// NewRunID returns a fresh run id for a run started at now.
func NewRunID(now time.Time) (string, error) {
	var b [2]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("run id: reading random bytes: %w", err)
	}
	return now.UTC().Format("20060102t150405") + "-" + hex.EncodeToString(b[:]), nil
}

// ValidRunID reports whether id has the shape NewRunID produces.
func ValidRunID(id string) bool { return runIDPattern.MatchString(id) }

// RunIDTime returns the start time encoded in a run id.
func RunIDTime(id string) (time.Time, error) {
	if !ValidRunID(id) {
		return time.Time{}, fmt.Errorf("run id %q: want the form 20060102t150405-abcd", id)
	}
	return time.ParseInLocation("20060102t150405", id[:15], time.UTC)
}
