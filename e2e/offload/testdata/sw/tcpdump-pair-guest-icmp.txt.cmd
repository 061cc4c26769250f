timeout -s INT 2s tcpdump -nn -e -tt -l -i eth1 -c 300 ((ether src 02:00:c6:12:d3:01 and ether dst 02:00:c6:12:d3:02) or (ether src 02:00:c6:12:d3:02 and ether dst 02:00:c6:12:d3:01)) and ip and icmp and not (udp port 67 or udp port 68)
exit 0
