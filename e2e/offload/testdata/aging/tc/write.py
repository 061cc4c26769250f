#!/usr/bin/env python3
# Writes the tc listings of the fragment judge's tests in iproute2's text
# layout (`tc -s filter show dev REP ingress`: tc/f_flower.c prints ip_flags
# as flower_print_ip_flags does — "nofrag", "frag/firstfrag",
# "frag/nofirstfrag" —, tc/m_action.c the statistics), as the rules OVS
# puts for ipv4(frag=no|first|later) (lib/netdev-offload-tc.c). Written,
# not recorded: this machine has no cls_flower. Run: python3 write.py
def rule(pref, handle, flags, hw, sw, inhw, used=0):
    tot = hw + sw
    stats = [f"\tSent {tot*1450} bytes {tot} pkt (dropped 0, overlimits 0 requeues 0)"]
    if sw:
        stats.append(f"\tSent software {sw*1450} bytes {sw} pkt")
    if hw:
        stats.append(f"\tSent hardware {hw*1450} bytes {hw} pkt")
    stats.append("\tbacklog 0b 0p requeues 0")
    return "\n".join([
        f"filter protocol ip pref {pref} flower chain 0",
        f"filter protocol ip pref {pref} flower chain 0 handle 0x{handle}",
        "  dst_mac fa:16:3e:4a:11:02", "  src_mac fa:16:3e:4a:11:01",
        "  eth_type ipv4", f"  ip_flags {flags}",
        "  in_hw in_hw_count 1" if inhw else "  not_in_hw",
        "\taction order 1: tunnel_key  set", "\tsrc_ip 198.18.1.11", "\tdst_ip 198.18.1.12",
        "\tkey_id 98", "\tdst_port 4790", "\tnocsum", "\tttl 64 pipe",
        f"\t index 1 ref 1 bind 1 installed 40 sec used {used} sec firstused 39 sec",
        "\tAction statistics:", *stats, "",
        "\taction order 2: mirred (Egress Redirect to device vxlan_sys_4790) stolen",
        f"\tindex 2 ref 1 bind 1 installed 40 sec used {used} sec firstused 39 sec",
        "\tAction statistics:", *stats, ""])

def dump(name, rules):
    with open(name, "w") as f:
        f.write("\n".join(rules))

for i, k in ((1, 0), (2, 1)):
    # first and later fragments in software (mlx5 refused them), the
    # unfragmented flow (iperf3's control connection) in hardware
    dump(f"tc-frag-{i}.txt", [
        rule(2, 1, "nofrag", 1000 + 50*k, 0, True),
        rule(3, 2, "frag/firstfrag", 0, 20000 + 30000*k, False),
        rule(4, 3, "frag/nofirstfrag", 0, 40000 + 60000*k, False)])
    # the unfragmented rule in software and counting: not covered by the label
    dump(f"tc-frag-nofrag-sw-{i}.txt", [
        rule(2, 1, "nofrag", 0, 1000 + 500*k, False),
        rule(3, 2, "frag/firstfrag", 0, 20000 + 30000*k, False),
        rule(4, 3, "frag/nofirstfrag", 0, 40000 + 60000*k, False)])
    # fragment rules claimed in hardware: not what mlx5 can do
    dump(f"tc-frag-inhw-{i}.txt", [
        rule(2, 1, "nofrag", 1000 + 50*k, 0, True),
        rule(3, 2, "frag/firstfrag", 20000 + 30000*k, 0, True),
        rule(4, 3, "frag/nofirstfrag", 40000 + 60000*k, 0, True)])
