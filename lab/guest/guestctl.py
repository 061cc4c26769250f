#!/usr/bin/python3
"""guestctl: materialise a lab "server" as a network-namespace guest, and remove it again.

A guest is:
  * a network namespace ``asap2lab-vm-<uuid>`` (lo up, IPv6 off);
  * one NIC per VIF, named eth0, eth1, ... in VIF order, with the port's MAC, fixed IPv4
    address(es) and MTU, tx/tso/gso off (the OVS userspace datapath cannot take GSO skbs). A NIC
    is plugged either
      - ``veth`` (default): a veth pair whose hypervisor end ``rep<port id[:11]>`` plays the VF
        representor and is added to the VIF's bridge in the hypervisor's OVS, or
      - ``internal``: an OVS internal port created on the bridge, moved into the guest namespace
        and renamed there;
    the OVS Interface carries the external_ids os-vif sets (iface-id, attached-mac, vm-uuid,
    iface-status=active) plus ``asap2lab-plug=<mode>`` so a sweeper can find it;
  * sshd inside the namespace (own mount namespace with tmpfs /run, /tmp and /var/tmp; own
    hostname), with a per-guest host key, authorising the instance's public key(s) for root;
  * a state directory ``$STATE/guests/<uuid>/`` holding guest.json, plug-mode, pids, keys,
    sshd config/log and console.log.

Usage (all commands need root; global options go before the command):
  guestctl.py [--state DIR] [--hv-netns NS] [--ovs-rundir DIR] [--guest-exec PREFIX] COMMAND ...
  plug    --spec FILE|-
  unplug  --uuid UUID [--port-id ID ...]
  stop    --uuid UUID       (power off: guest processes killed, NICs down)
  start   --uuid UUID       (power on: NICs up, sshd started)
  console --uuid UUID
  status  --uuid UUID       (JSON: the guest record, netns present, live recorded pids)
  list                      (guests recorded in the state dir or present as a netns)
  sweep-ovs                 (delete every OVS port tagged asap2lab-plug; needs --ovs-rundir)

Defaults come from the environment: ASAP2LAB_STATE (or LAB_STATE, else /var/lib/asap2lab),
ASAP2LAB_HV_NETNS, ASAP2LAB_OVS_RUNDIR (the hypervisor OVS run dir holding db.sock),
ASAP2LAB_GUEST_EXEC (--guest-exec: command prefix the guest's sshd runs through, e.g.
lab/epoxy/rootfs-exec so that SSH sessions run the release root's tools; recorded in guest.json
and used again by start when not given), ASAP2LAB_GUEST_KEEP (with a guest exec prefix: the
paths it needs, space-separated, kept visible in the guest even under its own tmpfs /tmp,
/var/tmp and /root: for rootfs-exec the lab directory and the root).

The plug spec (JSON):
  {"uuid": "...", "hostname": "vm-1", "mode": "veth"|"internal",
   "authorized_keys": "ssh-ed25519 AAAA... comment\\n",
   "nova": {...}  (optional, opaque: recorded in guest.json, e.g. name and flavor sizes),
   "nics": [{"port_id": "...", "mac": "fa:16:3e:00:00:01", "bridge": "br-int", "mtu": 8950,
             "ips": ["198.18.10.5/24"], "gateway": "198.18.10.1" | null,
             "routes": [{"cidr": "198.18.20.0/24", "gateway": "198.18.10.254"}]}]}

Exit status: 0 on success, 1 on failure (message on stderr), 2 on bad usage/spec.
unplug never fails because something is already gone; a failed plug rolls itself back.
"""

import argparse
import datetime
import ipaddress
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

NETNS_PREFIX = 'asap2lab-vm-'
PLUG_MODES = ('veth', 'internal')
UUID_RE = re.compile(r'^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$')
MAC_RE = re.compile(r'^[0-9a-fA-F]{2}(:[0-9a-fA-F]{2}){5}$')
IFNAME_RE = re.compile(r'^[A-Za-z0-9_.-]{1,15}$')
SSHD = '/usr/sbin/sshd'
# How long to wait for conditions (sshd ready, processes gone, a device to appear).
SSHD_READY_TIMEOUT = 20.0
PROC_EXIT_TIMEOUT = 5.0
DEVICE_TIMEOUT = 10.0
OVS_TIMEOUT = 30


class GuestError(Exception):
    """A guest operation failed; the message names the command/file and what went wrong."""


# ----------------------------------------------------------------------------- helpers

def run(args, input_text=None, ok_codes=(0,)):
    """Run a command; return stdout. Raise GuestError naming the command on failure."""
    try:
        res = subprocess.run(args, input=input_text, capture_output=True, text=True,
                             stdin=None if input_text is not None else subprocess.DEVNULL)
    except OSError as e:
        raise GuestError('cannot run %s: %s' % (' '.join(args), e)) from e
    if res.returncode not in ok_codes:
        raise GuestError('%s: exit %d: %s' % (' '.join(args), res.returncode,
                                              (res.stderr or res.stdout).strip()))
    return res.stdout


def try_run(args):
    """Run a command whose failure is acceptable (cleanup). Return (rc, stderr)."""
    try:
        res = subprocess.run(args, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    except OSError as e:
        return 127, str(e)
    return res.returncode, res.stderr.strip()


def netns_name(uuid):
    return NETNS_PREFIX + uuid


def netns_exists(name):
    return os.path.exists(os.path.join('/run/netns', name))


def rep_name(port_id):
    """Hypervisor-side device / OVS port name for a port: like Nova's tap<id[:11]>, 14 chars."""
    return 'rep' + port_id[:11]


def ovs_db_for(rundir):
    return 'unix:' + os.path.join(rundir, 'db.sock')


def vsctl(db, *args):
    return run(['ovs-vsctl', '--db=' + db, '--timeout=%d' % OVS_TIMEOUT] + list(args))


def ovs_reachable(db):
    if not db or not db.startswith('unix:'):
        return False
    return os.path.exists(db[len('unix:'):])


def proc_start_time(pid):
    """Start time (clock ticks since boot, field 22 of /proc/PID/stat), or None if gone/zombie."""
    try:
        with open('/proc/%d/stat' % pid) as f:
            data = f.read()
    except OSError:
        return None
    # comm may contain spaces/parens: split after the last ')'.
    rest = data[data.rfind(')') + 2:].split()
    if not rest or rest[0] == 'Z':
        return None
    try:
        return int(rest[19])
    except (IndexError, ValueError):
        return None


def netns_pids(name):
    if not netns_exists(name):
        return []
    out = subprocess.run(['ip', 'netns', 'pids', name], capture_output=True, text=True)
    if out.returncode != 0:
        return []
    return [int(p) for p in out.stdout.split() if p.isdigit()]


def wait_gone(pids, timeout):
    deadline = time.monotonic() + timeout
    alive = [p for p in pids if proc_start_time(p) is not None]
    while alive and time.monotonic() < deadline:
        time.sleep(0.05)
        alive = [p for p in alive if proc_start_time(p) is not None]
    return alive


def now():
    return datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%dT%H:%M:%S.%fZ')


class Config(object):
    def __init__(self, state, hv_netns=None, ovs_rundir=None, guest_exec=None):
        self.state = state
        self.hv_netns = hv_netns
        self.ovs_db = ovs_db_for(ovs_rundir) if ovs_rundir else None
        # Command prefix the guest's sshd runs through (None: not given, '' : the host's sshd).
        self.guest_exec = ' '.join(guest_exec.split()) if guest_exec is not None else None

    def guest_dir(self, uuid):
        return os.path.join(self.state, 'guests', uuid)


# ----------------------------------------------------------------------------- spec

def parse_spec(data):
    """Parse and validate a plug spec (bytes or str). Return a normalised dict.

    Every problem is reported at once in one GuestError."""
    try:
        spec = json.loads(data)
    except ValueError as e:
        raise GuestError('plug spec is not JSON: %s' % e) from e
    if not isinstance(spec, dict):
        raise GuestError('plug spec must be a JSON object, got %s' % type(spec).__name__)
    errs = []
    uuid = spec.get('uuid')
    if not isinstance(uuid, str) or not UUID_RE.match(uuid):
        errs.append('uuid must be a UUID, got %r' % (uuid,))
    mode = spec.get('mode') or 'veth'
    if mode not in PLUG_MODES:
        errs.append('mode must be one of %s, got %r' % ('|'.join(PLUG_MODES), mode))
    hostname = spec.get('hostname') or (NETNS_PREFIX + uuid[:8] if isinstance(uuid, str) else '')
    if not re.match(r'^[A-Za-z0-9][A-Za-z0-9.-]{0,62}$', hostname or ''):
        errs.append('hostname must be a DNS label, got %r' % (hostname,))
    keys = spec.get('authorized_keys') or ''
    if not isinstance(keys, str):
        errs.append('authorized_keys must be a string, got %s' % type(keys).__name__)
        keys = ''
    nics = spec.get('nics')
    if not isinstance(nics, list) or not nics:
        errs.append('nics must be a non-empty list, got %r' % (nics,))
        nics = []
    out_nics = []
    seen_ports = set()
    for i, nic in enumerate(nics):
        where = 'nics[%d]' % i
        if not isinstance(nic, dict):
            errs.append('%s must be an object' % where)
            continue
        port = nic.get('port_id')
        if not isinstance(port, str) or len(port) < 11:
            errs.append('%s.port_id must be a port id (>= 11 chars), got %r' % (where, port))
            port = ''
        elif rep_name(port) in seen_ports:
            errs.append('%s.port_id %s collides with another NIC on %s' % (where, port, rep_name(port)))
        seen_ports.add(rep_name(port))
        mac = nic.get('mac')
        if not isinstance(mac, str) or not MAC_RE.match(mac):
            errs.append('%s.mac must be aa:bb:cc:dd:ee:ff, got %r' % (where, mac))
        bridge = nic.get('bridge') or 'br-int'
        if not isinstance(bridge, str) or not IFNAME_RE.match(bridge):
            errs.append('%s.bridge must be a bridge name, got %r' % (where, bridge))
        mtu = nic.get('mtu') or 1500
        if not isinstance(mtu, int) or isinstance(mtu, bool) or not 68 <= mtu <= 65535:
            errs.append('%s.mtu must be an integer in 68..65535, got %r' % (where, mtu))
        ips = nic.get('ips') or []
        if not isinstance(ips, list):
            errs.append('%s.ips must be a list, got %r' % (where, ips))
            ips = []
        for ip in ips:
            try:
                iface = ipaddress.ip_interface(ip)
                if iface.version != 4 or '/' not in ip:
                    raise ValueError('need IPv4 address/prefix')
            except (ValueError, TypeError) as e:
                errs.append('%s.ips: %r is not an IPv4 address/prefix: %s' % (where, ip, e))
        gw = nic.get('gateway')
        if gw is not None:
            try:
                ipaddress.IPv4Address(gw)
            except (ValueError, TypeError) as e:
                errs.append('%s.gateway %r: %s' % (where, gw, e))
        routes = nic.get('routes') or []
        for j, r in enumerate(routes if isinstance(routes, list) else [routes]):
            try:
                ipaddress.IPv4Network(r['cidr'])
                ipaddress.IPv4Address(r['gateway'])
            except (ValueError, TypeError, KeyError) as e:
                errs.append('%s.routes[%d] %r: need cidr and gateway (%s)' % (where, j, r, e))
        out_nics.append({'name': 'eth%d' % i, 'port_id': port, 'mac': (mac or '').lower(),
                         'bridge': bridge, 'mtu': mtu, 'ips': ips, 'gateway': gw,
                         'routes': routes if isinstance(routes, list) else [],
                         'ovs_port': rep_name(port) if port else ''})
    if errs:
        raise GuestError('invalid plug spec: ' + '; '.join(errs))
    nova = spec.get('nova') or {}
    if not isinstance(nova, dict):
        raise GuestError('invalid plug spec: nova must be an object, got %r' % (nova,))
    return {'uuid': uuid.lower(), 'mode': mode, 'hostname': hostname,
            'authorized_keys': keys, 'nics': out_nics, 'nova': nova}


# ----------------------------------------------------------------------------- console

class Console(object):
    def __init__(self, path):
        self.path = path

    def write(self, *lines):
        with open(self.path, 'a') as f:
            for line in lines:
                f.write(line + '\n')

    def log(self, msg):
        self.write('[%s] %s' % (now(), msg))


# ----------------------------------------------------------------------------- plug

def _write(path, text, mode=0o644):
    with open(path, 'w') as f:
        f.write(text)
    os.chmod(path, mode)


def _save_json(path, obj):
    tmp = path + '.tmp'
    _write(tmp, json.dumps(obj, indent=2, sort_keys=True) + '\n')
    os.rename(tmp, path)


def _load_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def _record_pid(gdir, pid, what):
    start = proc_start_time(pid)
    with open(os.path.join(gdir, 'pids'), 'a') as f:
        f.write(json.dumps({'pid': pid, 'start': start, 'what': what}) + '\n')


def _read_pids(gdir):
    out = []
    try:
        with open(os.path.join(gdir, 'pids')) as f:
            for line in f:
                try:
                    rec = json.loads(line)
                    out.append((int(rec['pid']), rec.get('start'), rec.get('what', '?')))
                except (ValueError, KeyError, TypeError):
                    continue
    except OSError:
        pass
    return out


def _mkns(ns):
    run(['ip', 'netns', 'add', ns])
    run(['ip', '-n', ns, 'link', 'set', 'lo', 'up'])
    run(['ip', 'netns', 'exec', ns, 'sysctl', '-qw',
         'net.ipv6.conf.all.disable_ipv6=1', 'net.ipv6.conf.default.disable_ipv6=1'])


def _ovs_external_ids(nic, uuid, mode):
    return ['external_ids:iface-id=%s' % nic['port_id'],
            'external_ids:attached-mac=%s' % nic['mac'],
            'external_ids:vm-uuid=%s' % uuid,
            'external_ids:iface-status=active',
            'external_ids:asap2lab-plug=%s' % mode]


def _wait_device(ns, dev):
    deadline = time.monotonic() + DEVICE_TIMEOUT
    while True:
        rc, err = try_run(['ip', '-n', ns, 'link', 'show', dev])
        if rc == 0:
            return
        if time.monotonic() >= deadline:
            raise GuestError('OVS internal port %s did not appear in netns %s within %.0fs: %s'
                             % (dev, ns, DEVICE_TIMEOUT, err))
        time.sleep(0.05)


def _plug_nic(cfg, spec, nic, ns):
    uuid, mode = spec['uuid'], spec['mode']
    dev, gif, mtu = nic['ovs_port'], nic['name'], str(nic['mtu'])
    hv = cfg.hv_netns
    if mode == 'veth':
        run(['ip', '-n', ns, 'link', 'add', gif, 'mtu', mtu, 'address', nic['mac'], 'type', 'veth',
             'peer', 'name', dev, 'netns', hv, 'mtu', mtu])
        # The userspace datapath reads/writes the representor with AF_PACKET: no GSO/partial csum.
        run(['ip', 'netns', 'exec', hv, 'ethtool', '-K', dev, 'tx', 'off', 'tso', 'off', 'gso', 'off'])
        run(['ip', '-n', hv, 'link', 'set', dev, 'up'])
        vsctl(cfg.ovs_db, '--may-exist', 'add-port', nic['bridge'], dev, '--', 'set', 'Interface', dev,
              *_ovs_external_ids(nic, uuid, mode))
    else:
        vsctl(cfg.ovs_db, '--may-exist', 'add-port', nic['bridge'], dev, '--', 'set', 'Interface', dev,
              'type=internal', 'mtu_request=' + mtu, *_ovs_external_ids(nic, uuid, mode))
        _wait_device(hv, dev)
        run(['ip', '-n', hv, 'link', 'set', dev, 'netns', ns])
        run(['ip', '-n', ns, 'link', 'set', dev, 'name', gif])
        run(['ip', '-n', ns, 'link', 'set', gif, 'address', nic['mac'], 'mtu', mtu])
    run(['ip', 'netns', 'exec', ns, 'ethtool', '-K', gif, 'tx', 'off', 'tso', 'off', 'gso', 'off'])
    for ip in nic['ips']:
        run(['ip', '-n', ns, 'addr', 'add', ip, 'dev', gif])
    run(['ip', '-n', ns, 'link', 'set', gif, 'up'])


def _routes(ns, nics):
    default_set = False
    for nic in nics:
        for r in nic['routes']:
            run(['ip', '-n', ns, 'route', 'replace', r['cidr'], 'via', r['gateway'], 'dev', nic['name']])
        if nic['gateway'] and nic['ips'] and not default_set:
            run(['ip', '-n', ns, 'route', 'replace', 'default', 'via', nic['gateway'], 'dev', nic['name']])
            default_set = True


# Inside the guest's mount namespace the guest dir is bind-mounted here, so sshd's paths resolve
# whatever the host path of the state dir is (even under /tmp, which the guest gets privately).
GUEST_MNT = '/run/asap2lab-guest'

SSHD_CONFIG = """# asap2lab guest sshd (generated by guestctl.py); {mnt} is this guest's state dir
Port 22
ListenAddress 0.0.0.0
HostKey {mnt}/ssh_host_ed25519_key
PidFile {mnt}/sshd.pid
AuthorizedKeysFile {mnt}/authorized_keys
PermitRootLogin prohibit-password
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
UseDNS no
PrintMotd no
PrintLastLog no
MaxSessions 64
MaxStartups 64:30:128
ClientAliveInterval 30
Subsystem sftp internal-sftp
LogLevel INFO
"""

# Runs inside the guest netns (ip netns exec gives a private mount namespace) and a private UTS
# namespace: own hostname; own tmpfs /run (sshd's privsep dir), /tmp and /var/tmp, so guests
# never see each other's (or the host's) temporary files, like separate VMs; own empty /root.
# $1 hostname, $2 the guest's state dir, $3 the guest exec prefix, $4 the paths it needs (--guest-keep).
GUEST_INIT = """set -e
hostname "$1"
mount -t tmpfs -o mode=0755,size=16m asap2lab-run /run
mkdir -p /run/sshd """ + GUEST_MNT + """
mount --bind "$2" """ + GUEST_MNT + """
# The guest exec prefix's own files (the lab directory, the release's root) stay where they are
# when they live under a directory the guest gets a fresh tmpfs for (a clone in /tmp, a root in
# /var/tmp): held on /run before the tmpfs covers them, bound back after.
covered() { case "$1" in /tmp|/tmp/*|/var/tmp|/var/tmp/*|/root|/root/*) return 0 ;; esac; return 1; }
i=0
for p in $4; do
  covered "$p" || continue
  i=$((i + 1)); mkdir -p /run/asap2lab-keep/$i; mount --bind "$p" /run/asap2lab-keep/$i
done
mount -t tmpfs -o mode=1777,size=512m asap2lab-tmp /tmp
mount -t tmpfs -o mode=1777,size=64m asap2lab-vartmp /var/tmp
# A fresh VM's own home: the host's /root (its shell start-up files, e.g. a pyenv init costing
# seconds per SSH command) is not the guest's.
mount -t tmpfs -o mode=0700,size=4m asap2lab-home /root
i=0
for p in $4; do
  covered "$p" || continue
  i=$((i + 1)); mkdir -p "$p"; mount --bind /run/asap2lab-keep/$i "$p"
done
# $3 unquoted, so that it splits into words (empty: the host's sshd); e.g. lab/epoxy/rootfs-exec
# runs the release root's sshd, whose sessions then run the root's tools. It must exec, so the
# pid stays sshd's.
$3 """ + SSHD + " -t -f " + GUEST_MNT + """/sshd_config
exec $3 """ + SSHD + " -D -f " + GUEST_MNT + "/sshd_config -E " + GUEST_MNT + """/sshd.log
"""


def _ssh_keys(gdir, hostname, keys_text):
    key = os.path.join(gdir, 'ssh_host_ed25519_key')
    if not os.path.exists(key):
        run(['ssh-keygen', '-q', '-t', 'ed25519', '-N', '', '-C', 'root@' + hostname, '-f', key])
    _write(os.path.join(gdir, 'authorized_keys'), keys_text if keys_text.endswith('\n') or not keys_text
           else keys_text + '\n', 0o600)
    _write(os.path.join(gdir, 'sshd_config'), SSHD_CONFIG.format(mnt=GUEST_MNT), 0o600)


def _start_sshd(ns, gdir, hostname, guest_exec=''):
    pidfile = os.path.join(gdir, 'sshd.pid')
    try:
        os.unlink(pidfile)
    except FileNotFoundError:
        pass
    env = None
    # The paths the guest exec prefix needs (for rootfs-exec: the lab directory, the root), kept
    # visible in the guest's mount namespace even where the guest's own tmpfs covers them.
    keep = ' '.join(os.environ.get('ASAP2LAB_GUEST_KEEP', '').split()) if guest_exec else ''
    if guest_exec:
        # For lab/epoxy/rootfs-exec: the guest's own /var/tmp and /root tmpfs, and its state dir
        # (when visible in the guest), bound into the root too; /run and /tmp it binds itself.
        env = dict(os.environ, ROOTFS_BINDS=' '.join(
            p for p in (os.environ.get('ROOTFS_BINDS', ''), gdir, '/var/tmp', '/root') if p))
    with open(os.path.join(gdir, 'sshd.out'), 'ab') as out:
        proc = subprocess.Popen(['ip', 'netns', 'exec', ns, 'unshare', '--uts', '--',
                                 'sh', '-c', GUEST_INIT, 'guest-init', hostname, gdir, guest_exec, keep],
                                stdin=subprocess.DEVNULL, stdout=out, stderr=out,
                                start_new_session=True, close_fds=True, env=env)
    # ip netns exec, unshare and sh all exec (and so must the guest exec prefix: rootfs-exec ends
    # in exec unshare, exec chroot, exec sshd): proc.pid is sshd and leads its own process group.
    _record_pid(gdir, proc.pid, 'sshd')
    deadline = time.monotonic() + SSHD_READY_TIMEOUT
    while True:
        rc = proc.poll()
        if rc is not None:
            tail = ''
            for name in ('sshd.out', 'sshd.log'):
                try:
                    with open(os.path.join(gdir, name)) as f:
                        tail += f.read()[-2000:]
                except OSError:
                    pass
            raise GuestError('sshd in netns %s exited with %d before it was ready: %s'
                             % (ns, rc, tail.strip()))
        try:
            with open(pidfile) as f:
                pid = int(f.read().strip() or 0)
        except (OSError, ValueError):
            pid = 0
        if pid:
            if pid != proc.pid:
                _record_pid(gdir, pid, 'sshd(pidfile)')
            # Popen would otherwise reap nothing: the process is reparented when we exit.
            proc.returncode = 0
            return pid
        if time.monotonic() >= deadline:
            raise GuestError('sshd in netns %s wrote no %s within %.0fs' % (ns, pidfile, SSHD_READY_TIMEOUT))
        time.sleep(0.05)


def _console_boot(console, cfg, spec, ns):
    console.log('asap2lab guest %s booting: netns %s on hypervisor %s, plug mode %s'
                % (spec['uuid'], ns, cfg.hv_netns, spec['mode']))
    hdr = '| Device |  Up  |     Address      |       Mask      | Scope  |     Hw-Address    |'
    console.write('ci-info: ' + '+' * (len(hdr) - 2), 'ci-info: ' + hdr)
    for nic in spec['nics']:
        for ip in nic['ips'] or ['.']:
            if ip == '.':
                addr, mask = '.', '.'
            else:
                iface = ipaddress.ip_interface(ip)
                addr, mask = str(iface.ip), str(iface.network.netmask)
            console.write('ci-info: | %-6s | True | %-16s | %-15s | global | %s |'
                          % (nic['name'], addr, mask, nic['mac']))
        console.log('%s: port %s mac %s mtu %d bridge %s ovs port %s'
                    % (nic['name'], nic['port_id'], nic['mac'], nic['mtu'], nic['bridge'], nic['ovs_port']))


def _console_keys(console, gdir):
    pub = os.path.join(gdir, 'ssh_host_ed25519_key.pub')
    fp = run(['ssh-keygen', '-l', '-f', pub]).strip()
    with open(pub) as f:
        key = f.read().strip()
    # The same layout cloud-init's write-ssh-key-fingerprints prints on a real guest's console.
    console.write('ec2: ', 'ec2: ' + '#' * 61, 'ec2: -----BEGIN SSH HOST KEY FINGERPRINTS-----',
                  'ec2: ' + fp, 'ec2: -----END SSH HOST KEY FINGERPRINTS-----', 'ec2: ' + '#' * 61,
                  '-----BEGIN SSH HOST KEY KEYS-----', key, '-----END SSH HOST KEY KEYS-----')


def plug(cfg, spec):
    """Create the guest described by a parsed spec. Roll back everything on failure."""
    if not cfg.hv_netns or not netns_exists(cfg.hv_netns):
        raise GuestError('hypervisor netns %r does not exist (ASAP2LAB_HV_NETNS / --hv-netns)' % cfg.hv_netns)
    if not ovs_reachable(cfg.ovs_db):
        raise GuestError('hypervisor OVS database %r not found (ASAP2LAB_OVS_RUNDIR / --ovs-rundir)' % cfg.ovs_db)
    state = os.path.realpath(cfg.state)
    if state == '/run' or state.startswith('/run/'):
        raise GuestError('state dir %s is under /run, which each guest replaces with its own tmpfs' % cfg.state)
    uuid = spec['uuid']
    ns = netns_name(uuid)
    gdir = cfg.guest_dir(uuid)
    if netns_exists(ns) or os.path.exists(os.path.join(gdir, 'guest.json')):
        raise GuestError('guest %s already exists (netns %s or %s/guest.json): unplug it first' % (uuid, ns, gdir))
    os.makedirs(gdir, mode=0o700, exist_ok=True)
    record = dict(spec, netns=ns, hv_netns=cfg.hv_netns, ovs_db=cfg.ovs_db, created=now(), state='plugging',
                  guest_exec=cfg.guest_exec or '')
    record.pop('authorized_keys', None)
    # Written before anything is created so that unplug/cleanup-all can always find the pieces.
    _save_json(os.path.join(gdir, 'guest.json'), record)
    _write(os.path.join(gdir, 'plug-mode'), spec['mode'] + '\n')
    console = Console(os.path.join(gdir, 'console.log'))
    try:
        _mkns(ns)
        _console_boot(console, cfg, spec, ns)
        for nic in spec['nics']:
            _plug_nic(cfg, spec, nic, ns)
        _routes(ns, spec['nics'])
        _ssh_keys(gdir, spec['hostname'], spec['authorized_keys'])
        _console_keys(console, gdir)
        pid = _start_sshd(ns, gdir, spec['hostname'], record['guest_exec'])
        console.log('sshd (pid %d) listening on 0.0.0.0:22; authorised keys: %d'
                    % (pid, sum(1 for ln in spec['authorized_keys'].splitlines() if ln.strip())))
        console.write('', '%s login: ' % spec['hostname'])
    except Exception as e:
        try:
            unplug(cfg, uuid, [n['port_id'] for n in spec['nics']])
        except Exception as e2:  # report both, the original first
            raise GuestError('plug of guest %s failed: %s; rollback also failed: %s' % (uuid, e, e2)) from e
        raise GuestError('plug of guest %s failed (rolled back): %s' % (uuid, e)) from e
    record['state'] = 'running'
    _save_json(os.path.join(gdir, 'guest.json'), record)
    return record


# ----------------------------------------------------------------------------- unplug / power

def _kill_guest_processes(ns, gdir, notes):
    """Kill the recorded process groups, then anything else living in the guest netns."""
    pids = []
    for pid, start, what in _read_pids(gdir):
        cur = proc_start_time(pid)
        if cur is None or (start is not None and cur != start):
            continue  # gone, or the PID was reused by someone else's process: never touch it
        try:
            os.killpg(pid, signal.SIGTERM)
            notes.append('killed process group %d (%s)' % (pid, what))
        except ProcessLookupError:
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                continue
        pids.append(pid)
    # Whatever ran inside the guest (ssh sessions, iperf3 servers the harness started, ...).
    for pid in netns_pids(ns):
        if pid == os.getpid():
            continue
        try:
            os.kill(pid, signal.SIGTERM)
            notes.append('killed pid %d in netns %s' % (pid, ns))
            pids.append(pid)
        except ProcessLookupError:
            pass
    alive = wait_gone(pids, PROC_EXIT_TIMEOUT)
    for pid in alive:
        try:
            os.kill(pid, signal.SIGKILL)
            notes.append('SIGKILL pid %d' % pid)
        except ProcessLookupError:
            pass
    alive = wait_gone(alive + netns_pids(ns), PROC_EXIT_TIMEOUT)
    if alive:
        raise GuestError('processes %s of guest netns %s survive SIGKILL' % (alive, ns))
    try:
        os.unlink(os.path.join(gdir, 'pids'))
    except OSError:
        pass


def unplug(cfg, uuid, port_ids=()):
    """Remove every piece of a guest. Idempotent; missing pieces are not errors.

    Returns a list of notes describing what was removed."""
    uuid = uuid.lower()
    if not UUID_RE.match(uuid):
        raise GuestError('unplug: %r is not a UUID' % uuid)
    ns = netns_name(uuid)
    gdir = cfg.guest_dir(uuid)
    rec = _load_json(os.path.join(gdir, 'guest.json')) or {}
    hv = rec.get('hv_netns') or cfg.hv_netns
    db = rec.get('ovs_db') or cfg.ovs_db
    ports = {rep_name(p) for p in port_ids if p}
    ports.update(n.get('ovs_port') for n in rec.get('nics', []) if n.get('ovs_port'))
    notes = []
    _kill_guest_processes(ns, gdir, notes)
    if ovs_reachable(db):
        try:
            found = vsctl(db, '--bare', '--columns=name', 'find', 'Interface', 'external_ids:vm-uuid=' + uuid)
            ports.update(found.split())
        except GuestError as e:
            notes.append('OVS lookup skipped: %s' % e)
        try:
            existing = set(vsctl(db, '--bare', '--columns=name', 'list', 'Port').split())
        except GuestError as e:
            existing = set(ports)
            notes.append('OVS port list failed: %s' % e)
        for p in sorted(ports & existing):
            try:
                vsctl(db, '--if-exists', 'del-port', p)
                notes.append('deleted OVS port %s' % p)
            except GuestError as e:
                # OVS dying under us (lab down) is not a reason to leave the rest behind.
                notes.append('OVS port %s not deleted: %s' % (p, e))
    else:
        notes.append('OVS database %s not reachable: ports not touched' % db)
    if hv and netns_exists(hv):
        for p in sorted(ports):
            if try_run(['ip', '-n', hv, 'link', 'del', p])[0] == 0:
                notes.append('deleted %s in %s' % (p, hv))
    if netns_exists(ns):
        run(['ip', 'netns', 'delete', ns])
        notes.append('deleted netns %s' % ns)
    if os.path.isdir(gdir):
        shutil.rmtree(gdir)
        notes.append('removed %s' % gdir)
    return notes


def _guest_record(cfg, uuid):
    gdir = cfg.guest_dir(uuid.lower())
    rec = _load_json(os.path.join(gdir, 'guest.json'))
    if rec is None:
        raise GuestError('guest %s: no %s/guest.json' % (uuid, gdir))
    return gdir, rec


def stop(cfg, uuid):
    """Power off: kill the guest's processes and set its NICs down (keeps the plumbing)."""
    gdir, rec = _guest_record(cfg, uuid)
    notes = []
    _kill_guest_processes(rec['netns'], gdir, notes)
    for nic in rec['nics']:
        try_run(['ip', '-n', rec['netns'], 'link', 'set', nic['name'], 'down'])
    Console(os.path.join(gdir, 'console.log')).log('power off')
    rec['state'] = 'stopped'
    _save_json(os.path.join(gdir, 'guest.json'), rec)
    return notes


def start(cfg, uuid):
    """Power on: NICs up (addresses and routes are kept while down), sshd started."""
    gdir, rec = _guest_record(cfg, uuid)
    ns = rec['netns']
    console = Console(os.path.join(gdir, 'console.log'))
    if any(proc_start_time(p) is not None for p, _, _ in _read_pids(gdir)):
        raise GuestError('guest %s is already running (see %s/pids)' % (uuid, gdir))
    for nic in rec['nics']:
        run(['ip', '-n', ns, 'link', 'set', nic['name'], 'up'])
    _routes(ns, rec['nics'])  # routes via a NIC are flushed when it goes down
    console.log('power on')
    _console_keys(console, gdir)
    # The prefix given now wins; else the one the guest was plugged with.
    guest_exec = cfg.guest_exec if cfg.guest_exec is not None else rec.get('guest_exec', '')
    pid = _start_sshd(ns, gdir, rec['hostname'], guest_exec)
    rec['guest_exec'] = guest_exec
    console.log('sshd (pid %d) listening on 0.0.0.0:22' % pid)
    console.write('', '%s login: ' % rec['hostname'])
    rec['state'] = 'running'
    _save_json(os.path.join(gdir, 'guest.json'), rec)
    return ['sshd pid %d' % pid]


def status(cfg, uuid):
    gdir, rec = _guest_record(cfg, uuid)
    rec['netns_exists'] = netns_exists(rec['netns'])
    alive = []
    for pid, start, _ in _read_pids(gdir):
        cur = proc_start_time(pid)
        if cur is not None and (start is None or cur == start):
            alive.append(pid)
    rec['pids_alive'] = alive
    return rec


def list_guests(cfg):
    found = {}
    gd = os.path.join(cfg.state, 'guests')
    if os.path.isdir(gd):
        for u in os.listdir(gd):
            if UUID_RE.match(u):
                found.setdefault(u, set()).add('state')
    if os.path.isdir('/run/netns'):
        for n in os.listdir('/run/netns'):
            if n.startswith(NETNS_PREFIX) and UUID_RE.match(n[len(NETNS_PREFIX):]):
                found.setdefault(n[len(NETNS_PREFIX):], set()).add('netns')
    return {u: sorted(v) for u, v in sorted(found.items())}


def sweep_ovs(db):
    if not ovs_reachable(db):
        return ['OVS database %s not reachable' % db]
    out = vsctl(db, '--bare', '--columns=name,external_ids', 'find', 'Interface')
    notes = []
    # --bare prints name line, external_ids line, blank line per record.
    block = []
    for line in out.splitlines() + ['']:
        if line.strip():
            block.append(line)
            continue
        if len(block) >= 2 and 'asap2lab-plug=' in block[1]:
            vsctl(db, '--if-exists', 'del-port', block[0].strip())
            notes.append('deleted OVS port %s' % block[0].strip())
        block = []
    return notes


# ----------------------------------------------------------------------------- CLI

def main(argv=None):
    env = os.environ
    p = argparse.ArgumentParser(description='asap2lab network-namespace guests')
    p.add_argument('--state', default=env.get('ASAP2LAB_STATE') or env.get('LAB_STATE') or '/var/lib/asap2lab')
    p.add_argument('--hv-netns', default=env.get('ASAP2LAB_HV_NETNS'))
    p.add_argument('--ovs-rundir', default=env.get('ASAP2LAB_OVS_RUNDIR'))
    p.add_argument('--guest-exec', default=env.get('ASAP2LAB_GUEST_EXEC'),
                   help='command prefix (space-separated) the guest sshd is started through, after the '
                        "guest's mount setup, e.g. lab/epoxy/rootfs-exec; '' = the host's sshd")
    sub = p.add_subparsers(dest='cmd', required=True)
    sp = sub.add_parser('plug')
    sp.add_argument('--spec', required=True, help='JSON spec file, or - for stdin')
    for name in ('unplug', 'stop', 'start', 'console', 'status'):
        s = sub.add_parser(name)
        s.add_argument('--uuid', required=True)
        if name == 'unplug':
            s.add_argument('--port-id', action='append', default=[])
    sub.add_parser('list')
    sub.add_parser('sweep-ovs')
    args = p.parse_args(argv)
    cfg = Config(args.state, args.hv_netns, args.ovs_rundir, args.guest_exec)
    try:
        if args.cmd == 'plug':
            data = sys.stdin.read() if args.spec == '-' else open(args.spec).read()
            try:
                spec = parse_spec(data)
            except GuestError as e:
                print('guestctl: %s (from %s)' % (e, args.spec), file=sys.stderr)
                return 2
            print(json.dumps(plug(cfg, spec), indent=2, sort_keys=True))
        elif args.cmd == 'unplug':
            print('\n'.join(unplug(cfg, args.uuid, args.port_id)))
        elif args.cmd == 'stop':
            print('\n'.join(stop(cfg, args.uuid)))
        elif args.cmd == 'start':
            print('\n'.join(start(cfg, args.uuid)))
        elif args.cmd == 'console':
            with open(os.path.join(cfg.guest_dir(args.uuid.lower()), 'console.log')) as f:
                sys.stdout.write(f.read())
        elif args.cmd == 'status':
            print(json.dumps(status(cfg, args.uuid), indent=2, sort_keys=True))
        elif args.cmd == 'list':
            for u, where in list_guests(cfg).items():
                print('%s %s' % (u, ','.join(where)))
        elif args.cmd == 'sweep-ovs':
            if not cfg.ovs_db:
                print('guestctl: sweep-ovs needs --ovs-rundir or ASAP2LAB_OVS_RUNDIR', file=sys.stderr)
                return 2
            print('\n'.join(sweep_ovs(cfg.ovs_db)))
    except (GuestError, OSError) as e:
        print('guestctl %s: %s' % (args.cmd, e), file=sys.stderr)
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
