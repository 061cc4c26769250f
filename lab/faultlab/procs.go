package faultlab

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// Proc is one process of a traffic or capture tool.
type Proc struct {
	PID     int
	Comm    string
	Cmdline string
	Netns   string // name under /run/netns, "" when none (deleted or root)
}

func (p Proc) String() string {
	return fmt.Sprintf("pid %d (%s) in netns %q: %s", p.PID, p.Comm, p.Netns, p.Cmdline)
}

var toolComms = map[string]bool{"iperf3": true, "tcpdump": true, "sockperf": true, "ping": true}

// Procs lists the tool processes on this machine (hypervisors and guests
// are network namespaces of it).
func Procs() []Proc { return ProcsNamed(toolComms) }

// ProcsNamed lists the processes on this machine whose name is in comms.
func ProcsNamed(comms map[string]bool) []Proc {
	nsByIno := map[uint64]string{}
	if ents, err := os.ReadDir("/run/netns"); err == nil {
		for _, e := range ents {
			var st syscall.Stat_t
			if syscall.Stat(filepath.Join("/run/netns", e.Name()), &st) == nil {
				nsByIno[st.Ino] = e.Name()
			}
		}
	}
	var out []Proc
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
		if err != nil || !comms[strings.TrimSpace(string(comm))] {
			continue
		}
		cl, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		p := Proc{PID: pid, Comm: strings.TrimSpace(string(comm)), Cmdline: strings.TrimSpace(strings.ReplaceAll(string(cl), "\x00", " "))}
		var st syscall.Stat_t
		if syscall.Stat(fmt.Sprintf("/proc/%d/ns/net", pid), &st) == nil {
			p.Netns = nsByIno[st.Ino]
		}
		out = append(out, p)
	}
	return out
}

func toolPIDs() map[int]bool {
	m := map[int]bool{}
	for _, p := range Procs() {
		m[p.PID] = true
	}
	return m
}

// NetnsPIDs lists the processes named comm inside network namespace netns.
func NetnsPIDs(netns, comm string) []int {
	var out []int
	for _, p := range ProcsNamed(map[string]bool{comm: true}) {
		if p.Netns == netns {
			out = append(out, p.PID)
		}
	}
	return out
}
