ovs-appctl dpctl/ct-get-maxconns
exit 0
