#!/usr/bin/env bash
# Records tunnels-*.json (see ../README.md, "ovn/"): the harness's CmdTunnels
# run by this machine's ovs-vsctl against a private ovsdb-server holding the
# Interface rows ovn-controller (controller/encaps.c) and Neutron's OVS agent
# write. Needs openvswitch-switch installed; touches no running OVS and no
# network: its own database and unix socket in a temporary directory.
set -euo pipefail
out=$(cd "$(dirname "$0")" && pwd)
dir=$(mktemp -d)
ovsdb-tool create "$dir/conf.db" /usr/share/openvswitch/vswitch.ovsschema
ovsdb-server "$dir/conf.db" --remote="punix:$dir/db.sock" --unixctl="$dir/ovsdb.ctl" \
  --pidfile="$dir/ovsdb.pid" --detach --log-file="$dir/ovsdb.log"
trap 'kill "$(cat "$dir/ovsdb.pid")"; rm -rf "$dir"' EXIT
V=(ovs-vsctl --db="unix:$dir/db.sock" --no-wait)
C=(--format=json --columns=name,type,options find Interface type=vxlan -- --columns=name,type,options find Interface type=geneve)
"${V[@]}" init
"${V[@]}" add-br br-int -- set Bridge br-int datapath_type=system fail-mode=secure
"${V[@]}" "${C[@]}" >"$out/tunnels-none.json"
"${V[@]}" add-port br-int ovn-2b5c4e-0 -- set Interface ovn-2b5c4e-0 type=geneve options:remote_ip=198.18.1.12 options:key=flow options:csum=true external_ids:ovn-chassis-id=2b5c4e7a-1d0f-4b8e-9a3c-6e5f4d3c2b1a@198.18.1.12
"${V[@]}" add-port br-int ovn-9c0d1e-0 -- set Interface ovn-9c0d1e-0 type=geneve options:remote_ip=198.18.1.13 options:key=flow options:csum=true external_ids:ovn-chassis-id=9c0d1e2f-3a4b-4c5d-8e6f-7a8b9c0d1e2f@198.18.1.13
"${V[@]}" "${C[@]}" >"$out/tunnels-ovn-geneve.json"
"${V[@]}" set Interface ovn-9c0d1e-0 options:dst_port=6082
"${V[@]}" "${C[@]}" >"$out/tunnels-ovn-geneve-dstport.json"
"${V[@]}" remove Interface ovn-9c0d1e-0 options dst_port
"${V[@]}" add-port br-int ovn-vtep01-0 -- set Interface ovn-vtep01-0 type=vxlan options:remote_ip=198.18.1.20 options:key=flow options:csum=true
"${V[@]}" "${C[@]}" >"$out/tunnels-ovn-geneve-vxlan.json"
"${V[@]}" del-br br-int
"${V[@]}" add-br br-tun -- set Bridge br-tun datapath_type=system
"${V[@]}" add-port br-tun vxlan-c612010c -- set Interface vxlan-c612010c type=vxlan options:df_default=true options:dst_port=4790 options:egress_pkt_mark=0 options:in_key=flow options:local_ip=198.18.1.11 options:out_key=flow options:remote_ip=198.18.1.12
"${V[@]}" "${C[@]}" >"$out/tunnels-neutron-vxlan-4790.json"
ovs-vsctl --version | head -1
