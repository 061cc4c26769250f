#!/bin/sh
# Derives the evidence-window test data in this directory from the offload
# check's test data (e2e/offload/testdata, see its README.md for where those
# files come from). Run from this directory: sh derive.sh. Deterministic:
# running it again rewrites the same files. README.md explains every output.
set -eu
OFF=../../../offload/testdata

# The test's guests (window_test.go): the iperf3 server on compute1 and the
# client on compute2, with the MACs of the recorded software-path session, and
# a third MAC that belongs to neither.
A=02:00:c6:12:d2:02 # Servers[0], on compute1
B=02:00:c6:12:d2:01 # Servers[1], on compute2
X=02:00:c6:12:d2:03 # not a guest of the pair

# [mlx5-vf-tunnel] MACs: ca:2e:a7:3f:f5:0f is the VF behind the representor
# (local guest), 0a:40:bd:30:89:99 the remote guest.
LOCAL=ca:2e:a7:3f:f5:0f
REMOTE=0a:40:bd:30:89:99

# tc_map FILE LOCAL_GUEST_MAC PEER_MAC: FILE with the [mlx5-vf-tunnel] MACs replaced.
tc_map() { sed -e "s/$LOCAL/$2/g" -e "s/$REMOTE/$3/g" "$1"; }

for n in 1 2; do
	s=""; [ "$n" = 2 ] && s="-sample2"
	# hardware path: encap rule on the representor, decap rule on the VXLAN device
	tc_map "$OFF/hw/tc-mlx5-vf-rep-encap$s.txt" "$A" "$B" >"tc-rep-compute1-sample$n.txt"
	tc_map "$OFF/hw/tc-mlx5-vf-rep-encap$s.txt" "$B" "$A" >"tc-rep-compute2-sample$n.txt"
	tc_map "$OFF/hw/tc-mlx5-vxlan-decap$s.txt" "$A" "$B" >"tc-vxlan-compute1-sample$n.txt"
	tc_map "$OFF/hw/tc-mlx5-vxlan-decap$s.txt" "$B" "$A" >"tc-vxlan-compute2-sample$n.txt"
	# multicast exception: the encap rule plus a not_in_hw mDNS rule from the local guest
	tc_map "$OFF/hw/tc-mlx5-vf-rep-encap-mdns$s.txt" "$A" "$B" >"tc-rep-mdns-compute1-sample$n.txt"
	tc_map "$OFF/hw/tc-mlx5-vf-rep-encap-mdns$s.txt" "$B" "$A" >"tc-rep-mdns-compute2-sample$n.txt"
	# wrong MAC: the same hardware rules, between the local guest and a third MAC
	tc_map "$OFF/hw/tc-mlx5-vf-rep-encap$s.txt" "$A" "$X" >"tc-rep-wrongmac-compute1-sample$n.txt"
	tc_map "$OFF/hw/tc-mlx5-vf-rep-encap$s.txt" "$B" "$X" >"tc-rep-wrongmac-compute2-sample$n.txt"
	tc_map "$OFF/hw/tc-mlx5-vxlan-decap$s.txt" "$A" "$X" >"tc-vxlan-wrongmac-compute1-sample$n.txt"
	tc_map "$OFF/hw/tc-mlx5-vxlan-decap$s.txt" "$B" "$X" >"tc-vxlan-wrongmac-compute2-sample$n.txt"
done

# [kubeovn-dpctl] MACs: 00:00:00:c5:6d:4e and 00:00:00:e7:16:ce, the two pods.
dp_map() { sed -e "s/00:00:00:c5:6d:4e/$B/g" -e "s/00:00:00:e7:16:ce/$A/g" "$1"; }
dp_map "$OFF/hw/dpctl-kubeovn-offloaded.txt" >dpctl-offloaded-sample1.txt
dp_map "$OFF/hw/dpctl-kubeovn-offloaded-sample2.txt" >dpctl-offloaded-sample2.txt
# mixed: the full (-m) dump has both flows, the second as dp:tc without
# offloaded:yes; the type=offloaded dump only the offloaded:yes flow (line 1).
dp_map "$OFF/hw/dpctl-kubeovn-mixed-tc-sw.txt" >dpctl-mixed-all-sample1.txt
dp_map "$OFF/hw/dpctl-kubeovn-mixed-tc-sw-sample2.txt" >dpctl-mixed-all-sample2.txt
head -n 1 dpctl-mixed-all-sample1.txt >dpctl-mixed-offloaded-sample1.txt
head -n 1 dpctl-mixed-all-sample2.txt >dpctl-mixed-offloaded-sample2.txt
# multicast exception: the full dump adds a dp:ovs flow to the mDNS group
dp_map "$OFF/hw/dpctl-kubeovn-mdns.txt" >dpctl-mdns-all-sample1.txt
dp_map "$OFF/hw/dpctl-kubeovn-mdns-sample2.txt" >dpctl-mdns-all-sample2.txt

# The representor capture of an offloaded flow: the first packets of the
# flow (the miss path), then silence until the window ends (exit 124).
head -n 3 "$OFF/sw/tcpdump-rep-tcp.txt" >tcpdump-rep-first-tcp.txt
head -n 3 "$OFF/sw/tcpdump-rep-udp-count.txt" >tcpdump-rep-first-udp.txt
for p in tcp udp; do
	sed -e 's/offrec-rep1/enp8s0f0_1/' -e 's/^0 packets captured/3 packets captured/' \
		-e 's/^0 packets received by filter/3 packets received by filter/' \
		"$OFF/sw/tcpdump-rep-idle.txt.stderr" >"tcpdump-rep-first-$p.txt.stderr"
done

# cpu_hit counters of a representor that keeps them, flat: the recorded
# cpu_hit header with the recorded idle link counters as its stats64.
stats=$(sed -e 's/.*,"stats64":\(.*\)}]$/\1/' "$OFF/sw/ip-link-rep-idle-before.json")
sed -e "s/}]\$/,\"stats64\":$stats}]/" "$OFF/sw/ip-stats-cpuhit-rep-before.json" >ip-stats-cpuhit-rep-flat.json

# Port security (data_port.port_security): the conntrack check's reads.
# CT is e2e/conntrack/testdata (its README.md names the sources). The pair's
# addresses: the client 198.18.210.1 (B), the server 198.18.210.2 (A),
# iperf3 on port 5201 (traffic.port's default).
CT=../../../conntrack/testdata
# [mlx5 2020] hardware listing: 1.1.1.17 -> 1.1.1.16:5001, two [HW_OFFLOAD].
hw_ct() { sed -e 's/1\.1\.1\.17/198.18.210.1/g' -e 's/1\.1\.1\.16/198.18.210.2/g' -e 's/5001/5201/g' "$CT/hw/proc-hw-offload-mlx5-2020.txt"; }
# The TCP flow opens one stream and iperf3's control connection: the
# stream's client port becomes the one iperf3 reported for it
# (OFF/sw/iperf3-tcp.json, start.connected: 45104), the other line is the
# control connection.
hw_ct | sed -e 's/56408/45104/g' >conntrack-hw-tcp.txt
# The UDP flow opens iperf3's TCP control connection and one UDP stream: the
# first line as it is, the second with its protocol made UDP (udp 17) and
# its client port the stream's (OFF/sw/iperf3-udp.json: 54726).
hw_ct | sed -n 1p >conntrack-hw-udp.txt
hw_ct | sed -n 2p | sed -e 's/ tcp      6 / udp      17 /' -e 's/56404/54726/g' >>conntrack-hw-udp.txt
# Issue 33, class 3: the same tables once iperf3's idle control connection
# has left the flowtable (nf_flowtable_tcp_timeout, 30 s without packets):
# the kernel prints it with its timeout, its TCP state and [ASSURED]
# instead of [HW_OFFLOAD] (nf_conntrack_standalone.c, ct_seq_show; the
# timeout is the established one, 432000 s, less the 30 s of
# flow_offload_fixup_ct, less 29 s idle since).
idle() { sed -e "/sport=$1 /s/ tcp      6 / tcp      6 431941 ESTABLISHED /" -e "/sport=$1 /s/\[HW_OFFLOAD\] mark=0 zone=0 use=3/[ASSURED] mark=0 zone=0 use=2/"; }
idle 56404 <conntrack-hw-tcp.txt >conntrack-hw-idle-tcp.txt
idle 56408 <conntrack-hw-udp.txt >conntrack-hw-idle-udp.txt
# The datapath flows of the tc ct pipeline ([sriov-op]): guest …:01 is the
# client, …:02 the server.
for n in 1 2; do
	sed -e "s/fa:16:3e:4a:11:01/$B/g" -e "s/fa:16:3e:4a:11:02/$A/g" "$OFF/pipeline/dpctl-ct-offloaded-$n.txt" >"dpctl-ct-sample$n.txt"
done
# The lab's userspace datapath (recorded, ovs/): 198.18.212.1 the client,
# .2 the server, MACs 02:00:c6:12:d4:0x.
lab_map() { sed -e 's/198\.18\.212\./198.18.210./g' -e 's/02:00:c6:12:d4:/02:00:c6:12:d2:/g' "$1"; }
lab_map "$CT/ovs/dump-conntrack-tcp.txt" >conntrack-ovs-tcp.txt
lab_map "$CT/ovs/dump-conntrack-udp.txt" >conntrack-ovs-udp.txt
lab_map "$CT/ovs/dpctl-flows-tcp-m.txt" >dpctl-ct-userspace.txt
