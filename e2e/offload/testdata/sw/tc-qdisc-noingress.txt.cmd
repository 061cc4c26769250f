tc qdisc show dev offrec-rep1 ingress
exit 0
