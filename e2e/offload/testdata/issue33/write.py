#!/usr/bin/env python3
"""Writes the issue-33 tc samples of this directory (see ../README.md, "issue33/").

Every listing is laid out as iproute2 prints it: the text form after
tc/tc_filter.c print_filter ("filter [block N] protocol P pref N flower chain N
handle 0xN"), tc/f_flower.c (keys, "in_hw in_hw_count N"), tc/m_tunnel_key.c,
tc/m_mirred.c, tc/tc_util.c print_tm ("installed N sec used N sec firstused N
sec") and print_tcstats2_attr / print_tcstats_basic_hw ("Sent N bytes M pkt",
"Sent software ...", "Sent hardware ..."); the JSON form with the same
functions' keys. The counters are chosen, and what the printer does with them
is iproute2's: before v6.15.0 (commit e7638a02) the hardware packet count is
the 32-bit TCA_STATS_BASIC_HW value, the total the 64-bit TCA_STATS_PKT64.
Run from this directory: python3 write.py
"""
import json

A, B = "fa:16:3e:4a:11:01", "fa:16:3e:4a:11:02"
W = 1 << 32


def pr(total_b, total_p, hw_b, hw_p, pre615=True):
    """The three Sent lines as iproute2 prints them. total_p and hw_p are the
    true 64-bit counts; pre615 prints the hardware packets truncated."""
    hw_print = hw_p % W if pre615 else hw_p
    lines = [f"Sent {total_b} bytes {total_p} pkt (dropped 0, overlimits 0 requeues 0)"]
    if hw_b or hw_print:
        if pre615:
            tot32 = total_p % W
            if total_b >= hw_b and tot32 >= hw_print:
                lines.append(f"Sent software {total_b - hw_b} bytes {tot32 - hw_print} pkt")
        else:
            lines.append(f"Sent software {total_b - hw_b} bytes {total_p - hw_p} pkt")
        lines.append(f"Sent hardware {hw_b} bytes {hw_print} pkt")
    return lines


def stats_json(total_b, total_p, hw_b, hw_p, pre615=True):
    s = {"bytes": total_b, "packets": total_p, "drops": 0, "overlimits": 0, "requeues": 0}
    hw_print = hw_p % W if pre615 else hw_p
    if hw_b or hw_print:
        tot32 = total_p % W
        if not pre615:
            s["sw_bytes"], s["sw_packets"] = total_b - hw_b, total_p - hw_p
        elif total_b >= hw_b and tot32 >= hw_print:
            s["sw_bytes"], s["sw_packets"] = total_b - hw_b, tot32 - hw_print
        s["hw_bytes"], s["hw_packets"] = hw_b, hw_print
    s["backlog"], s["qlen"] = 0, 0
    return s


def times(installed, used, first):
    t = f"installed {installed} sec used {used} sec"
    if first:
        t += f" firstused {first} sec"
    return t


def encap_text(c, installed, first, src_ip="198.18.1.11", dst_ip="198.18.1.12", pre615=True, src=A, dst=B):
    """VXLAN encap of guest A to guest B on A's representor enp8s0f0_1, as
    hw/tc-mlx5-vf-rep-encap.txt ([mlx5-vf-tunnel]) with MOSK's port 4790
    (src/dst and the tunnel endpoints swapped: B's on the other host)."""
    out = [
        "filter protocol ip pref 2 flower chain 0",
        "filter protocol ip pref 2 flower chain 0 handle 0x1",
        f"  dst_mac {dst}",
        f"  src_mac {src}",
        "  eth_type ipv4",
        "  ip_tos 0/0x3",
        "  ip_flags nofrag",
        "  in_hw in_hw_count 1",
        "        action order 1: tunnel_key  set",
        f"        src_ip {src_ip}",
        f"        dst_ip {dst_ip}",
        "        key_id 98",
        "        dst_port 4790",
        "        nocsum",
        "        ttl 64 pipe",
        f"         index 1 ref 1 bind 1 {times(installed, installed, 0)}",
        "        Action statistics:",
        "        Sent 0 bytes 0 pkt (dropped 0, overlimits 0 requeues 0)",
        "        backlog 0b 0p requeues 0",
        "        no_percpu",
        "        used_hw_stats delayed",
        "",
        "        action order 2: mirred (Egress Redirect to device vxlan_sys_4790) stolen",
        f"        index 1 ref 1 bind 1 {times(installed, 0, first)}",
        "        Action statistics:",
    ]
    out += ["        " + l for l in pr(*c, pre615=pre615)]
    out += [
        "        backlog 0b 0p requeues 0",
        "        cookie bb406d45d343bf7ade9690ae80c7cba4",
        "        no_percpu",
        "        used_hw_stats delayed",
        "",
    ]
    return "\n".join(out) + "\n"


def encap_json(c, installed, first, pre615=True):
    act1 = {"order": 1, "kind": "tunnel_key", "mode": "set", "src_ip": "198.18.1.11", "dst_ip": "198.18.1.12",
            "key_id": 98, "dst_port": 4790, "flag": "nocsum", "nofrag": False, "ttl": 64,
            "control_action": {"type": "pipe"}, "index": 1, "ref": 1, "bind": 1,
            "installed": installed, "last_used": installed,
            "stats": {"bytes": 0, "packets": 0, "drops": 0, "overlimits": 0, "requeues": 0, "backlog": 0, "qlen": 0},
            "not_per_cpu": True, "used_hw_stats": ["delayed"]}
    act2 = {"order": 2, "kind": "mirred", "mirred_action": "redirect", "direction": "egress", "to_dev": "vxlan_sys_4790",
            "control_action": {"type": "stolen"}, "index": 1, "ref": 1, "bind": 1, "installed": installed, "last_used": 0}
    if first:
        act2["first_used"] = first
    act2["stats"] = stats_json(*c, pre615=pre615)
    act2.update({"cookie": "bb406d45d343bf7ade9690ae80c7cba4", "not_per_cpu": True, "used_hw_stats": ["delayed"]})
    return json.dumps([
        {"protocol": "ip", "pref": 2, "kind": "flower", "chain": 0},
        {"protocol": "ip", "pref": 2, "kind": "flower", "chain": 0, "options": {
            "handle": 1, "keys": {"dst_mac": B, "src_mac": A, "eth_type": "ipv4", "ip_tos": "0/0x3", "ip_flags": "nofrag"},
            "in_hw": True, "in_hw_count": 1, "actions": [act1, act2]}},
    ], separators=(",", ":")) + "\n"


def bond_text(c, installed, first, in_hw_count):
    """VLAN 101 traffic of guest B to guest A arriving on the VF-LAG bond0
    (ifindex 9), whose ingress is the shared block 9 OVS binds bond0 and its
    two members to; the rule pops the tag and redirects to A's representor.
    Laid out as pipeline/tc-vlan-uplink-1.txt with the block in the filter
    line as hw/tc-bnxt-ct-helper.txt ([bnxt-ct-helper]) prints it."""
    out = [
        "filter block 9 protocol 802.1Q pref 2 flower chain 0",
        "filter block 9 protocol 802.1Q pref 2 flower chain 0 handle 0x1",
        "  vlan_id 101",
        "  vlan_prio 0",
        "  vlan_ethtype ip",
        f"  dst_mac {A}",
        f"  src_mac {B}",
        "  ip_flags nofrag",
        f"  in_hw in_hw_count {in_hw_count}",
        "        action order 1: vlan  pop pipe",
        f"         index 1 ref 1 bind 1 {times(installed, 0, first)}",
        "        Action statistics:",
    ]
    out += ["        " + l for l in pr(*c)]
    out += [
        "        backlog 0b 0p requeues 0",
        "        used_hw_stats delayed",
        "",
        "        action order 2: mirred (Egress Redirect to device enp8s0f0_1) stolen",
        f"         index 2 ref 1 bind 1 {times(installed, 0, first)}",
        "        Action statistics:",
    ]
    out += ["        " + l for l in pr(*c)]
    out += ["        backlog 0b 0p requeues 0", "        used_hw_stats delayed", ""]
    return "\n".join(out) + "\n"


def write(name, text):
    with open(name, "w") as f:
        f.write(text)


MTU = 1450  # bytes per packet at tc ingress: a full-size TCP segment inside VXLAN on a 1500 MTU

# Class 1: a long-lived encap rule at 1.2 Mpps; between the samples (10 s) its
# packet count crosses 2^32. Sample 1 just below, sample 2 above: the printed
# hardware packets drop from 4294000000 to 11032704, the total (64-bit) and
# every byte count grow.
p1, p2 = 4294000000, 4294000000 + 12000000
write("tc-pkt32-wrap-1.txt", encap_text((p1 * MTU, p1, p1 * MTU, p1), 5400, 5399))
write("tc-pkt32-wrap-2.txt", encap_text((p2 * MTU, p2, p2 * MTU, p2), 5410, 5409))
write("tc-pkt32-wrap-1.json", encap_json((p1 * MTU, p1, p1 * MTU, p1), 5400, 5399))
write("tc-pkt32-wrap-2.json", encap_json((p2 * MTU, p2, p2 * MTU, p2), 5410, 5409))
# The same second sample as iproute2 6.15 prints it (64-bit hardware packets).
write("tc-pkt64-2.txt", encap_text((p2 * MTU, p2, p2 * MTU, p2), 5410, 5409, pre615=False))

# Class 2: OVS modified the flow between the samples (delete, then add: the
# kernel gave the new rule the lowest free handle, the old one's). Sample 1:
# the old rule, 80 s of traffic; sample 2: the new one, installed 6 s ago, its
# counters from zero (6 s of traffic, fewer than the old rule had).
q1, q2 = 96000000, 7200000
write("tc-replaced-1.txt", encap_text((q1 * MTU, q1, q1 * MTU, q1), 434, 433))
write("tc-replaced-2.txt", encap_text((q2 * MTU, q2, q2 * MTU, q2), 6, 6))
write("tc-replaced-2.json", encap_json((q2 * MTU, q2, q2 * MTU, q2), 6, 6))

# Class 5: half a bond in hardware. in_hw_count 1 on a block with two ports:
# one eswitch misses the rule, and a quarter of the traffic (the other port's
# share) is forwarded by the kernel: software counters exact, growing.
t1, s1 = 40000000, 10000000
t2, s2 = t1 + 12000000, s1 + 3000000
write("tc-bond-half-1.txt", bond_text((t1 * MTU, t1, (t1 - s1) * MTU, t1 - s1), 212, 211, 1))
write("tc-bond-half-2.txt", bond_text((t2 * MTU, t2, (t2 - s2) * MTU, t2 - s2), 222, 221, 1))
# The same block, in_hw_count 1, no software packet in the span (the flow
# hashed to the port whose eswitch holds the rule): only the count says it.
write("tc-bond-count-1.txt", bond_text((t1 * MTU, t1, t1 * MTU, t1), 212, 211, 1))
write("tc-bond-count-2.txt", bond_text((t2 * MTU, t2, t2 * MTU, t2), 222, 221, 1))
# Healthy: both eswitches hold the rule; 3 software packets in 12 M (a few
# stragglers, within the tolerance).
write("tc-bond-whole-1.txt", bond_text((t1 * MTU, t1, (t1 - 2) * MTU, t1 - 2), 212, 211, 2))
write("tc-bond-whole-2.txt", bond_text((t2 * MTU, t2, (t2 - 5) * MTU, t2 - 5), 222, 221, 2))

# Class 7: a sample of another hypervisor: the same chain/pref/handle holds
# the other host's encap rule, guest B's to guest A from B's representor
# (that host's own VTEP 198.18.1.12 as tunnel_key src_ip, an older rule),
# with larger counters.
r1, r2 = 2000000, 9000000
write("tc-otherhost-1.txt", encap_text((r1 * MTU, r1, r1 * MTU, r1), 434, 433))
write("tc-otherhost-2.txt", encap_text((r2 * MTU, r2, r2 * MTU, r2), 1210, 1209, src_ip="198.18.1.12", dst_ip="198.18.1.11", src=B, dst=A))
