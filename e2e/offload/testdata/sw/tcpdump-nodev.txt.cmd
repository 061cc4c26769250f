timeout -s INT 1 tcpdump -nn -e -tt -l -i offrec-nosuch -c 100 ((ether src 02:00:c6:12:d2:01 and ether dst 02:00:c6:12:d2:02) or (ether src 02:00:c6:12:d2:02 and ether dst 02:00:c6:12:d2:01)) and ip and udp and not (udp port 67 or udp port 68)
exit 1
