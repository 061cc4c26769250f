ovs-vsctl --db=unix:/tmp/s11fo-ovs.XXXXXX/run/db.sock --timeout=30 --columns=name\,link_resets --format=csv --no-headings list Interface ul0 ul1 
exit 0
