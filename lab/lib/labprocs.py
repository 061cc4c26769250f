"""List the processes that belong to the asap2lab, one "PID PGID WHY" line each.

A process belongs to the lab when any of these holds:
  marker  its environment carries ASAP2LAB_PROC=<LAB_STATE> (set on every process up.sh starts,
          inherited by their children, e.g. guest daemons started by nova-compute)
  cmdline its command line names a path under <LAB_STATE>/ (catches daemons such as
          neutron-server whose setproctitle overwrites the environment block)
  netns   it lives in a network namespace named asap2lab* (/run/netns)
The calling process and its ancestors are never listed.
Usage: python3 labprocs.py LAB_STATE
"""
import os
import sys


def read(path, mode='rb'):
    try:
        with open(path, mode) as f:
            return f.read()
    except OSError:
        return None


def ancestors():
    out, pid = set(), os.getpid()
    while pid > 1:
        out.add(pid)
        stat = read('/proc/%d/stat' % pid)
        if stat is None:
            break
        pid = int(stat.rsplit(b')', 1)[1].split()[1])
    return out


def lab_netns_inodes():
    inodes = set()
    try:
        names = os.listdir('/run/netns')
    except OSError:
        return inodes
    for name in names:
        if name.startswith('asap2lab'):
            try:
                inodes.add(os.stat(os.path.join('/run/netns', name)).st_ino)
            except OSError:
                pass
    return inodes


def main(argv):
    if len(argv) != 2 or not argv[1].startswith('/'):
        sys.exit(__doc__)
    state = argv[1].rstrip('/')
    marker = ('ASAP2LAB_PROC=' + state).encode()
    prefix = (state + '/').encode()
    skip = ancestors()
    nets = lab_netns_inodes()
    for entry in os.listdir('/proc'):
        if not entry.isdigit() or int(entry) in skip:
            continue
        pid = int(entry)
        stat = read('/proc/%d/stat' % pid)
        if stat is None:
            continue
        fields = stat.rsplit(b')', 1)[1].split()
        if fields[0] == b'Z':
            continue
        pgid = int(fields[2])
        why = None
        env = read('/proc/%d/environ' % pid)
        if env and marker in env.split(b'\0'):
            why = 'marker'
        if why is None:
            cmd = read('/proc/%d/cmdline' % pid)
            if cmd and prefix in cmd:
                why = 'cmdline'
        if why is None and nets:
            try:
                if os.stat('/proc/%d/ns/net' % pid).st_ino in nets:
                    why = 'netns'
            except OSError:
                pass
        if why:
            print(pid, pgid, why)


if __name__ == '__main__':
    main(sys.argv)
