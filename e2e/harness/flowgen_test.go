package harness

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// The sender and the receiver run here as they run on a guest (sh -c of
// the command line), over loopback: the sender opens n distinct source
// ports, each seen by the receiver side (a socket of this test), and its
// report says so.
func TestFlowSenderOverLoopback(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("no python3 here: the sender is a python3 program")
	}
	pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	port := pc.LocalAddr().(*net.UDPAddr).Port
	in := FlowSenderInput{Src: "127.0.0.1", Dst: "127.0.0.1", DstPort: port, First: 41000, N: 200, Rate: 0,
		Refresh: 200 * time.Millisecond, Hold: 500 * time.Millisecond}
	seen := map[int]int{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 2048)
		for {
			_ = pc.SetReadDeadline(time.Now().Add(3 * time.Second))
			_, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			seen[from.(*net.UDPAddr).Port]++
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "sh", "-c", in.SenderCommand()).CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	rep, err := ParseSenderReport(out, in.N)
	if err != nil {
		t.Fatal(err)
	}
	pc.Close()
	<-done
	if rep.Opened+rep.BindFailures != in.N || rep.Opened < in.N-5 || rep.Python == "" {
		t.Errorf("report %+v", rep)
	}
	distinct := 0
	for p, c := range seen {
		if p >= in.First && p < in.First+in.N && c >= 2 { // opened, then sent again at least once
			distinct++
		}
	}
	if distinct < rep.Opened-5 {
		t.Errorf("%d source ports seen twice or more, the sender opened %d", distinct, rep.Opened)
	}
	if !rep.KeptOpen {
		t.Errorf("200 sockets not kept open: %+v", rep)
	}
	// Under an open-file limit too small for n, each socket is closed
	// after its datagram, and the 5-tuples are the same.
	out, err = exec.CommandContext(ctx, "sh", "-c", "ulimit -n 100; "+in.SenderCommand()).CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if rep, err := ParseSenderReport(out, in.N); err != nil || rep.KeptOpen || rep.Opened < in.N-5 {
		t.Errorf("under ulimit -n 100: %+v %v", rep, err)
	}
}

// The receiver answers every datagram, and ends by itself.
func TestFlowReceiverAnswers(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("no python3 here: the receiver is a python3 program")
	}
	probe, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := probe.LocalAddr().(*net.UDPAddr).Port
	probe.Close()
	in := FlowSenderInput{Dst: "127.0.0.1", DstPort: port, ReceiverSeconds: 3}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-c", in.ReceiverCommand())
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	if n, err := stdout.Read(buf); err != nil || !strings.Contains(string(buf[:n]), "listening") {
		t.Fatalf("receiver: %q %v", buf[:n], err)
	}
	c, err := net.Dial("udp4", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	if n, err := c.Read(buf); err != nil || string(buf[:n]) != "ok" {
		t.Errorf("answer %q %v", buf[:n], err)
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("receiver did not end by itself: %v", err)
	}
}

func TestParseSenderReport(t *testing.T) {
	r, err := ParseSenderReport([]byte("warning\n{\"opened\": 998, \"bind_failures\": 2, \"open_seconds\": 0.41, \"python\": \"3.11.2\"}\n"), 1000)
	if err != nil || r.Opened != 998 || r.BindFailures != 2 || r.OpenSeconds != 0.41 {
		t.Errorf("%+v %v", r, err)
	}
	for _, bad := range []string{"", "{\"opened\": 1001, \"bind_failures\": 0, \"open_seconds\": 1}", "{\"opened\": 1, \"extra\": 1}", "{\"opened\": -1}", "not json"} {
		if _, err := ParseSenderReport([]byte(bad), 1000); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func FuzzParseSenderReport(f *testing.F) {
	f.Add([]byte("{\"opened\": 998, \"bind_failures\": 2, \"open_seconds\": 0.41, \"python\": \"3.11.2\"}"), 1000)
	f.Add([]byte("x\n{}"), 0)
	f.Fuzz(func(t *testing.T, b []byte, n int) {
		r, err := ParseSenderReport(b, n)
		if err != nil {
			return
		}
		if r.Opened < 0 || r.BindFailures < 0 || r.Opened+r.BindFailures > n || !(r.OpenSeconds >= 0) {
			t.Errorf("accepted %+v for n %d", r, n)
		}
	})
}

// The log file of a command line: the lab's (an absolute --log-file),
// OVS's default for a bare one, a relative one under OVS's log directory,
// none.
func TestVswitchdLogOf(t *testing.T) {
	for in, want := range map[string]string{
		"nice\n-n\n-10\novs-vswitchd\nunix:/var/lib/asap2lab/run/hv1/db.sock\n--pidfile=/x.pid\n--log-file=/var/lib/asap2lab/logs/hv1-ovs-vswitchd.log\n-vconsole:off\n": "/var/lib/asap2lab/logs/hv1-ovs-vswitchd.log",
		"ovs-vswitchd\nunix:/run/openvswitch/db.sock\n--log-file\n--pidfile\n":                                                                                           "/var/log/openvswitch/ovs-vswitchd.log",
		"ovs-vswitchd\n--log-file=vs.log\n": "/var/log/openvswitch/vs.log",
		"ovs-vswitchd\n-vconsole:info\n":    "",
		"":                                  "",
	} {
		if got := VswitchdLogOf([]byte(in)); got != want {
			t.Errorf("%q: %q, want %q", in, got, want)
		}
	}
}

// The command finds this machine's ovs-vswitchd of this network namespace
// and prints its arguments one a line; where there is none it prints
// nothing and exits 0.
func TestVswitchdCmdlineCommandRuns(t *testing.T) {
	out, err := exec.Command("sh", "-c", VswitchdCmdlineCommand).CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if len(out) > 0 && !strings.Contains(string(out), "ovs-vswitchd") {
		t.Errorf("printed %q", out)
	}
}

func FuzzVswitchdLogOf(f *testing.F) {
	f.Add([]byte("ovs-vswitchd\n--log-file=/var/lib/asap2lab/logs/hv1-ovs-vswitchd.log\n"))
	f.Add([]byte("ovs-vswitchd\n--log-file\n"))
	f.Add([]byte("--log-file=x\n--log-file=/y\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		got := VswitchdLogOf(b)
		// A file is named only from a --log-file argument, and is absolute.
		if got != "" && (!strings.Contains(string(b), "--log-file") || !strings.HasPrefix(got, "/")) {
			t.Errorf("%q: %q", b, got)
		}
		if got == "" && strings.Contains(string(b), "\n--log-file\n") {
			t.Errorf("%q: a bare --log-file read as none", b)
		}
	})
}
