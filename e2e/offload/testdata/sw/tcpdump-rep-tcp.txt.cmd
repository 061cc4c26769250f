timeout -s INT 2 tcpdump -nn -e -tt -l -i offrec-rep1 -c 300 ((ether src 02:00:c6:12:d2:01 and ether dst 02:00:c6:12:d2:02) or (ether src 02:00:c6:12:d2:02 and ether dst 02:00:c6:12:d2:01)) and ip and tcp and not (udp port 67 or udp port 68)
exit 0
