tc -s filter show dev offrec-nosuch ingress
exit 1
