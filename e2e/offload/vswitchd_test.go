package offload

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mosk-qa/asap2-e2e/e2e/remote"
)

func vswitchdRecording(t testing.TB, name string) string {
	t.Helper()
	return string(readTestdata(t, filepath.Join("vswitchd", name)))
}

// ParseVswitchd and Finding on VswitchdCommand's real outputs
// (testdata/vswitchd/README.md): an answering vswitchd has no finding; a
// stopped, crashed or exited one is named with ovs-appctl's error and the
// cause the pidfile, /proc and the log give.
func TestParseVswitchd(t *testing.T) {
	const pidfile, log = "/tmp/vsw/run/ovs-vswitchd.pid", "/tmp/vsw/run/ovs-vswitchd.log"
	for _, tc := range []struct {
		file    string
		want    Vswitchd
		finding string
	}{
		{"ovs-3.1-answering.txt", Vswitchd{Answers: true, Version: "ovs-vswitchd (Open vSwitch) 3.1.0"}, ""},
		{"ovs-3.1-sigstop.txt",
			Vswitchd{Appctl: "ovs-appctl: terminating with signal 14 (Alarm clock)", Pidfile: pidfile, PID: 16445, State: "T", Log: log},
			"ovs-vswitchd does not answer (ovs-appctl: terminating with signal 14 (Alarm clock); ovs-vswitchd pid 16445 (from " + pidfile + ") is stopped (state T))"},
		{"ovs-3.1-sigabrt.txt",
			Vswitchd{Appctl: `ovs-appctl: cannot read pidfile "` + pidfile + `" (No such process)`, Pidfile: pidfile, PID: 16445, Log: log},
			`ovs-vswitchd does not answer (ovs-appctl: cannot read pidfile "` + pidfile + `" (No such process); no ovs-vswitchd process (pid 16445 in ` + pidfile + ` is gone))`},
		{"ovs-3.1-sigsegv.txt",
			Vswitchd{Appctl: `ovs-appctl: cannot read pidfile "` + pidfile + `" (No such process)`, Pidfile: pidfile, PID: 17114, Log: log},
			`ovs-vswitchd does not answer (ovs-appctl: cannot read pidfile "` + pidfile + `" (No such process); no ovs-vswitchd process (pid 17114 in ` + pidfile + ` is gone))`},
		// ovs-appctl logs a WARN line of its own before its error: only
		// its "ovs-appctl:" line is kept.
		{"ovs-3.1-sigterm.txt",
			Vswitchd{Appctl: `ovs-appctl: cannot read pidfile "` + pidfile + `" (No such file or directory)`, Pidfile: pidfile, Log: log},
			`ovs-vswitchd does not answer (ovs-appctl: cannot read pidfile "` + pidfile + `" (No such file or directory); no ovs-vswitchd process (no pidfile at ` + pidfile + `))`},
		{"ovs-3.1-sigabrt-log-emer.txt",
			Vswitchd{Appctl: `ovs-appctl: cannot read pidfile "` + pidfile + `" (No such process)`, Pidfile: pidfile, PID: 17696, Log: log,
				LogLevel: "EMER", LogLine: pidfile + ": already running as pid 17696, aborting"},
			`ovs-vswitchd does not answer (ovs-appctl: cannot read pidfile "` + pidfile + `" (No such process); no ovs-vswitchd process (pid 17696 in ` + pidfile + ` is gone); last EMER in ` + log + `: ` + pidfile + `: already running as pid 17696, aborting)`},
	} {
		t.Run(tc.file, func(t *testing.T) {
			got, err := ParseVswitchd(vswitchdRecording(t, tc.file))
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
			if f := got.Finding(); f != tc.finding {
				t.Errorf("finding:\n got  %q\n want %q", f, tc.finding)
			}
		})
	}
}

// A live process is told from a zombie and from another program that took
// the pid; an ERR line counts when the log has no EMER.
func TestParseVswitchdStates(t *testing.T) {
	stat := func(comm, state string) string {
		return "== exit 1\n== pidfile /run/openvswitch/ovs-vswitchd.pid 811\n== stat 811 (" + comm + ") " + state + " 1 811 811 0 -1 4194560\n"
	}
	for _, tc := range []struct{ out, want string }{
		{stat("ovs-vswitchd", "S"), "ovs-vswitchd pid 811 (from /run/openvswitch/ovs-vswitchd.pid) is running (state S) but does not answer"},
		{stat("ovs-vswitchd", "Z"), "ovs-vswitchd pid 811 (from /run/openvswitch/ovs-vswitchd.pid) has died (a zombie)"},
		{stat("bash", "S"), "no ovs-vswitchd process (pid 811 in /run/openvswitch/ovs-vswitchd.pid is gone)"},
		{"== exit 1\n== pidfile /run/openvswitch/ovs-vswitchd.pid\n== log /var/log/openvswitch/ovs-vswitchd.log\n" +
			"2026-12-04T20:12:31.395Z|00005|reconnect|INFO|unix:/run/openvswitch/db.sock: connected\n" +
			"2026-12-04T20:12:32.411Z|00006|netdev_linux|ERR|eth9: could not set configuration (No such device)\n",
			"no ovs-vswitchd process (no pidfile at /run/openvswitch/ovs-vswitchd.pid); last ERR in /var/log/openvswitch/ovs-vswitchd.log: eth9: could not set configuration (No such device)"},
	} {
		v, err := ParseVswitchd(tc.out)
		if err != nil {
			t.Fatal(err)
		}
		if got := v.Finding(); got != "ovs-vswitchd does not answer (ovs-appctl exited 1 with no output; "+tc.want+")" {
			t.Errorf("%q:\n got  %q\n want %q", tc.out, got, tc.want)
		}
	}
}

func TestParseVswitchdRejects(t *testing.T) {
	for _, tc := range []struct{ out, want string }{
		{"ovs-vswitchd (Open vSwitch) 3.1.0\n", "no exit line"},
		{"", "no exit line"},
		{"== exit x\n", `exit status "x" is not a number`},
		{"== exit 1\n== pidfile /run/openvswitch/ovs-vswitchd.pid abc\n", `pidfile /run/openvswitch/ovs-vswitchd.pid holds "abc", not a pid`},
		{"== exit 1\n== core dumped\n", `unknown line "== core dumped"`},
		{"== exit 1\nsomething else\n", `unexpected line "something else"`},
		// Every problem at once.
		{"== exit 1\n== pidfile /run/openvswitch/ovs-vswitchd.pid abc\n== core dumped\n",
			`ovs-vswitchd look: pidfile /run/openvswitch/ovs-vswitchd.pid holds "abc", not a pid; unknown line "== core dumped"`},
		{strings.Repeat("x", 400), `no exit line in "` + strings.Repeat("x", 300) + `..."`},
	} {
		_, err := ParseVswitchd(tc.out)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: got %v, want an error with %q", tc.out, err, tc.want)
		}
	}
}

func TestAppctlSecs(t *testing.T) {
	for _, tc := range []struct {
		bound time.Duration
		want  int
	}{{200 * time.Millisecond, 1}, {2 * time.Second, 1}, {30 * time.Second, 15}, {time.Minute, 30}} {
		if got := AppctlSecs(tc.bound); got != tc.want {
			t.Errorf("AppctlSecs(%s) = %d, want %d", tc.bound, got, tc.want)
		}
	}
	if got := VswitchdCommand(15); !strings.HasPrefix(got, "ovs-appctl --timeout=15 -t ovs-vswitchd version 2>&1; ") || !IsOVSCommand(got) {
		t.Errorf("VswitchdCommand: %q (IsOVSCommand %v)", got, IsOVSCommand(got))
	}
}

// A status other than 0 is the prefix's or the transport's failure, named
// with its stderr (cut to 300 bytes); status 0 is the command's output.
func TestReadVswitchd(t *testing.T) {
	for _, tc := range []struct {
		res  remote.Result
		want string
	}{
		{remote.Result{ExitCode: 1, Stderr: []byte("crictl: no container found\n")}, "exit 1: crictl: no container found"},
		{remote.Result{ExitCode: 255}, "exit 255: no output on stderr"},
		{remote.Result{ExitCode: 1, Stderr: []byte(strings.Repeat("e", 400))}, "exit 1: " + strings.Repeat("e", 300) + "..."},
	} {
		if _, err := ReadVswitchd(tc.res); err == nil || err.Error() != tc.want {
			t.Errorf("%+v: got %v, want %q", tc.res, err, tc.want)
		}
	}
	v, err := ReadVswitchd(remote.Result{Stdout: []byte(vswitchdRecording(t, "ovs-3.1-answering.txt"))})
	if err != nil || !v.Answers {
		t.Errorf("answering: %+v, %v", v, err)
	}
}

// ParseVswitchd takes whatever a hypervisor printed: it never panics, and
// what it accepts is either an answer (no finding) or a finding that
// names ovs-appctl's error.
func FuzzParseVswitchd(f *testing.F) {
	for _, name := range []string{"ovs-3.1-answering.txt", "ovs-3.1-sigstop.txt", "ovs-3.1-sigabrt-log-emer.txt", "ovs-3.1-sigterm.txt"} {
		f.Add(vswitchdRecording(f, name))
	}
	f.Fuzz(func(t *testing.T, out string) {
		v, err := ParseVswitchd(out)
		if err != nil {
			return
		}
		switch finding := v.Finding(); {
		case v.Answers && finding != "":
			t.Errorf("%q: answers, yet the finding %q", out, finding)
		case !v.Answers && !strings.HasPrefix(finding, "ovs-vswitchd does not answer ("+v.Appctl):
			t.Errorf("%q: finding %q lacks ovs-appctl's error %q", out, finding, v.Appctl)
		}
	})
}
