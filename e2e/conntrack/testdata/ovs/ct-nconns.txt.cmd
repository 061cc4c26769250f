ovs-appctl dpctl/ct-get-nconns
exit 0
