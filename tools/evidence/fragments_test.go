package main

import (
	"path/filepath"
	"strings"
	"testing"
)

func agTD(name string) string { return filepath.Join(offTD, "aging", name) }

// The fragment profile's judge offline (e2e/offload's fragments tests, the
// same inputs): --fragments labels the pair's fragment flows and judges the
// rest; without it the same dumps are judged as any window.
func TestFragmentsOffline(t *testing.T) {
	code, m, stderr := runCmd(t, "dpctl", "--mac", "02:00:c6:12:27:01,02:00:c6:12:27:02", "--window", "4s", "--fragments", agTD("dpctl-frag-m.txt"))
	f, _ := m["fragments"].(map[string]any)
	if code != 0 || f == nil || f["labelled"] != true || !strings.HasPrefix(m["reason"].(string), "fragmented traffic: software by the NIC's design") {
		t.Errorf("dpctl --fragments: exit %d %v %s", code, m, stderr)
	}
	code, m, _ = runCmd(t, "dpctl", "--mac", "02:00:c6:12:27:01,02:00:c6:12:27:02", "--window", "4s", agTD("dpctl-frag-m.txt"))
	if code != 0 || m["fragments"] != nil || strings.Contains(m["reason"].(string), "by the NIC's design") {
		t.Errorf("dpctl without --fragments: exit %d %v", code, m)
	}
	code, m, stderr = runCmd(t, "tc", "--mac", "fa:16:3e:4a:11:01,fa:16:3e:4a:11:02", "--device", "enp8s0f0_1", "--span", "3s", "--fragments",
		agTD("tc/tc-frag-nofrag-sw-1.txt"), agTD("tc/tc-frag-nofrag-sw-2.txt"))
	if code != 0 || m["verdict"] != "software" || !strings.Contains(m["reason"].(string), "unfragmented flows: software") {
		t.Errorf("tc --fragments, an unfragmented rule in software: exit %d %v %s", code, m, stderr)
	}
}
