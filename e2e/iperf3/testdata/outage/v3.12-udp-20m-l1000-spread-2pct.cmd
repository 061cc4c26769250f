server (ip netns exec s11fo-b): iperf3 -s -1 -J -i 0.1 -B 198.18.213.2 -p 5405
client (ip netns exec s11fo-a): iperf3 -c 198.18.213.2 -p 5405 -J --get-server-output -t 4 -i 0.1 -P 1 -u -b 20M -l 1000
exit client 0 server 0
cut: none
on s11fo-b: nft 'table inet s11fo { chain input { type filter hook input priority 0; udp dport 5405 numgen random mod 50 == 0 drop } }'
