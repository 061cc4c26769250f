tc -s -j filter show dev offrec-rep1 ingress
exit 0
