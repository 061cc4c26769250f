package harness

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// The rule-scale profile's guest programs: a sender that opens N distinct
// UDP 5-tuples (one source port each) and keeps them alive, and a receiver
// that answers each datagram with one of its own, so that every 5-tuple
// is a two-way connection: conntrack offloads only an established one
// (mlx5's CT offload, the kernel's flowtable), and the server guest
// answers no ICMP port unreachable.
//
// Why Python 3: cloud-init is Python, so python3 is in every cloud image
// the harness boots (Ubuntu, Debian, RHEL and their derivatives), and in
// the lab's guests. iperf3 makes one 5-tuple per process with --cport (N
// processes for N flows) and its -P streams are TCP connections of one
// process, at most 128; bash's /dev/udp picks a random ephemeral source
// port for each redirection, so N of them are not N distinct 5-tuples (and
// collide long before 10000 in the 28232 ports of the default range);
// nping or hping are not in cloud images. The sender raises its open-file
// limit to the hard limit and keeps one socket per source port open when
// N fit (the answers then reach an open socket); where they do not (a
// guest's default soft limit is 1024), each socket is bound, sent on and
// closed in turn, so 10000 5-tuples hold one descriptor at a time (the
// answers then meet a closed port: the client guest's ICMP errors, rate
// limited by its kernel). The report says which (kept_open). The program
// goes to the guest as base64 inside `python3 -c`, so no file is written
// there and no quoting can break it.

// flowSender: argv src dst dport first n rate refresh hold. Opens ports
// first..first+n-1 at rate a second (0: as fast as it can), sends every
// opened port again each refresh seconds, stops hold seconds after the
// last; prints one JSON line: opened, bind_failures, open_seconds,
// kept_open, python.
const flowSender = `import json, resource, socket, sys, time
src, dst, dport, first, n = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
rate, refresh, hold = float(sys.argv[6]), float(sys.argv[7]), float(sys.argv[8])
fam = socket.AF_INET6 if ":" in dst else socket.AF_INET
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
try:
    if hard == resource.RLIM_INFINITY or hard > soft:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        soft = hard
except (ValueError, OSError):
    pass
keep = soft == resource.RLIM_INFINITY or n + 64 <= soft
socks = {}
def send(port):
    s = socks.get(port)
    try:
        if s is None:
            s = socket.socket(fam, socket.SOCK_DGRAM)
            s.setblocking(False)
            s.bind((src, port))
            if keep:
                socks[port] = s
        s.sendto(b"asap2e2e-rule-scale", (dst, dport))
        return True
    except OSError:
        return False
    finally:
        if s is not None and not keep:
            s.close()
opened, failed, nxt = [], 0, first
start = time.monotonic()
last, done = start, None
while True:
    now = time.monotonic()
    if nxt < first + n:
        want = n if rate <= 0 else min(n, int((now - start) * rate) + 1)
        while nxt < first + want and time.monotonic() - last < refresh:
            if send(nxt):
                opened.append(nxt)
            else:
                failed += 1
            nxt += 1
        if nxt >= first + n:
            done = time.monotonic() - start
    elif now - start - done >= hold:
        break
    if time.monotonic() - last >= refresh:
        last = time.monotonic()
        for p in opened:
            send(p)
    time.sleep(0.005)
print(json.dumps({"opened": len(opened), "bind_failures": failed, "open_seconds": round(done, 3), "kept_open": keep, "python": sys.version.split()[0]}))
`

// flowReceiver: argv addr port seconds. Answers each datagram with one
// ("ok") until seconds have passed (so it never outlives the profile by
// much).
const flowReceiver = `import socket, sys, time
addr, port, secs = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
s = socket.socket(socket.AF_INET6 if ":" in addr else socket.AF_INET, socket.SOCK_DGRAM)
s.bind((addr, port))
s.settimeout(1)
end = time.monotonic() + secs
print("listening", flush=True)
while time.monotonic() < end:
    try:
        _, peer = s.recvfrom(2048)
        s.sendto(b"ok", peer)
    except socket.timeout:
        pass
    except OSError:
        pass
`

// pythonCommand runs a program with its arguments through python3 -c,
// the program as base64.
func pythonCommand(program string, args ...string) string {
	enc := base64.StdEncoding.EncodeToString([]byte(program))
	return "python3 -c 'import base64; exec(base64.b64decode(\"" + enc + "\"))' " + strings.Join(args, " ")
}

// FlowSenderInput is one run of the sender.
type FlowSenderInput struct {
	Src, Dst        string
	DstPort, First  int
	N, Rate         int
	Refresh, Hold   time.Duration
	ReceiverSeconds float64
}

// SenderCommand is the sender's command line.
func (in FlowSenderInput) SenderCommand() string {
	return pythonCommand(flowSender, in.Src, in.Dst, strconv.Itoa(in.DstPort), strconv.Itoa(in.First), strconv.Itoa(in.N),
		strconv.Itoa(in.Rate), fmt.Sprintf("%g", in.Refresh.Seconds()), fmt.Sprintf("%g", in.Hold.Seconds()))
}

// ReceiverCommand is the receiver's command line.
func (in FlowSenderInput) ReceiverCommand() string {
	return pythonCommand(flowReceiver, in.Dst, strconv.Itoa(in.DstPort), fmt.Sprintf("%g", in.ReceiverSeconds))
}

// Expected is how long the sender should take: opening N at Rate (none
// when as fast as it can), then Hold.
func (in FlowSenderInput) Expected() time.Duration {
	d := in.Hold
	if in.Rate > 0 {
		d += time.Duration(float64(in.N) / float64(in.Rate) * float64(time.Second))
	}
	return d
}

// SenderReport is the sender's JSON line.
type SenderReport struct {
	Opened       int     `json:"opened"`
	BindFailures int     `json:"bind_failures"`
	OpenSeconds  float64 `json:"open_seconds"`
	KeptOpen     bool    `json:"kept_open"`
	Python       string  `json:"python"`
}

// ParseSenderReport reads the sender's output: its last non-empty line is
// the JSON report; counts must be 0..n and add up to at most n.
func ParseSenderReport(out []byte, n int) (SenderReport, error) {
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	last := strings.TrimSpace(lines[len(lines)-1])
	var r SenderReport
	if last == "" {
		return r, fmt.Errorf("the flow sender printed nothing")
	}
	dec := json.NewDecoder(strings.NewReader(last))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return r, fmt.Errorf("the flow sender's report %q: %w", clipLine(last), err)
	}
	if r.Opened < 0 || r.BindFailures < 0 || r.Opened+r.BindFailures > n || !(r.OpenSeconds >= 0) {
		return r, fmt.Errorf("the flow sender's report %q: opened and bind_failures must be 0..%d together, open_seconds >= 0", clipLine(last), n)
	}
	return r, nil
}
