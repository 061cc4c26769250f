server (ip netns exec s11fo-b): iperf3 -s -1 -J -i 0.1 -B 198.18.213.2 -p 5403
client (ip netns exec s11fo-a): iperf3 -c 198.18.213.2 -p 5403 -J --get-server-output -t 5 -i 0.1 -P 1 -u -b 20M -l 1000
exit client 0 server 0
cut: rb down at +2.108 s, up at +2.393 s
