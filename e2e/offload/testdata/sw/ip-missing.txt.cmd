env PATH=/tmp/offrec2.XXXXXX/bin /bin/sh -c ip -s -j link show dev eth1
exit 127
