"""asap2lab Kubernetes: deploy/'s manifests as a MOSK cluster takes them, and a Job's pod run for real.

The lab's control plane has an API server but no scheduler, controller manager or kubelet that runs
containers (kwok fakes the nodes). So the lab applies the manifests to the API server as an engineer
would (server-side apply), reads the Job back as the API server stored it (defaults filled in,
admission passed), and runs that Job's pod template with podman the way a kubelet would run it:
host network, the user and groups, read-only root, dropped capabilities, the Secrets' files with
their mode and the fsGroup, the service account's token, CA and namespace at the standard path with
KUBERNETES_SERVICE_HOST/PORT (in-cluster credentials, no kubeconfig), the PVC and emptyDirs as
directories. What a kubelet does that this does not: resource limits (the lab's cgroups are hybrid),
image pulls (the image is loaded), probes and restarts (the Job has none).

  python3 podrun.py apply [--image IMG] [--args JSON] [--set-env NAME=VALUE ...] FILE...
        server-side apply (field manager asap2lab) of every document of FILE...; --image and --args
        replace the first container's image and args of a Job or CronJob (kubectl set image's part),
        --set-env one of its env values; one "applied KIND NS/NAME (uid, resourceVersion)" line each
  python3 podrun.py secret NS NAME FILE...     server-side apply of Secret NS/NAME holding FILE...
                                               (each under its base name)
  python3 podrun.py podman NS JOB ROOT NAME SERVER
        the Job as stored; writes its Secrets' files and the service account's token under ROOT
        and prints the podman run arguments (one per line) of its pod template for a container
        named NAME, the service host and port from SERVER (IP:PORT); the last line is
        "# grace SECONDS" (terminationGracePeriodSeconds)
  python3 podrun.py delete NS KIND/NAME...     delete those objects and wait until the API server has none
                                               of them (exit 1 naming any left)

Environment: KUBE_SERVER (https://IP:PORT), KUBE_CA (file), KUBE_TOKEN_FILE (the admin token).
"""
import base64
import json
import os
import re
import sys
import time
import urllib.parse

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kube_setup import PATHS, api_from_env  # noqa: E402

FIELD_MANAGER = 'asap2lab'
KINDS = dict(PATHS)
KINDS.update({
    'Secret': ('/api/v1', 'secrets', True),
    'PersistentVolumeClaim': ('/api/v1', 'persistentvolumeclaims', True),
    'Job': ('/apis/batch/v1', 'jobs', True),
    'CronJob': ('/apis/batch/v1', 'cronjobs', True),
})
SA_DIR = '/var/run/secrets/kubernetes.io/serviceaccount'


def object_path(kind, ns, name):
    if kind not in KINDS:
        raise ValueError('kind %s: not one podrun.py applies (%s)' % (kind, ', '.join(sorted(KINDS))))
    prefix, plural, namespaced = KINDS[kind]
    if namespaced:
        if not ns:
            raise ValueError('%s %s: no metadata.namespace' % (kind, name))
        return '%s/namespaces/%s/%s/%s' % (prefix, ns, plural, name)
    return '%s/%s/%s' % (prefix, plural, name)


def pod_template(obj):
    """The pod template of a Job or CronJob (None for other kinds)."""
    if obj.get('kind') == 'Job':
        return obj['spec']['template']
    if obj.get('kind') == 'CronJob':
        return obj['spec']['jobTemplate']['spec']['template']
    return None


def edit(obj, image=None, args=None, env=None):
    """obj with its first container's image, args and env values replaced (Job, CronJob only)."""
    tpl = pod_template(obj)
    if tpl is None:
        return obj
    c = tpl['spec']['containers'][0]
    if image:
        c['image'] = image
    if args is not None:
        c['args'] = list(args)
    for name, value in (env or {}).items():
        for e in c.setdefault('env', []):
            if e['name'] == name:
                e['value'] = value
                break
        else:
            c['env'].append({'name': name, 'value': value})
    return obj


def apply(api, obj):
    md = obj['metadata']
    path = object_path(obj['kind'], md.get('namespace'), md['name'])
    q = urllib.parse.urlencode({'fieldManager': FIELD_MANAGER, 'force': 'true'})
    _, got = api.call('PATCH', path + '?' + q, obj, content_type='application/apply-patch+yaml')
    gm = got.get('metadata', {})
    return 'applied %s %s%s (uid %s, resourceVersion %s)' % (
        obj['kind'], (md.get('namespace') + '/') if md.get('namespace') else '', md['name'],
        gm.get('uid'), gm.get('resourceVersion'))


def secret(ns, name, files):
    data = {}
    for f in files:
        with open(f, 'rb') as fh:
            data[os.path.basename(f)] = base64.b64encode(fh.read()).decode()
    return {'apiVersion': 'v1', 'kind': 'Secret', 'type': 'Opaque',
            'metadata': {'name': name, 'namespace': ns, 'labels': {'app.kubernetes.io/name': 'asap2-e2e'}},
            'data': data}


class Refused(ValueError):
    """The pod template asks for something the lab cannot run as a kubelet would."""


def field(meta, spec, path):
    """The downward API's value of fieldPath path for a pod of metadata meta (None: not there)."""
    m = re.fullmatch(r"metadata\.(labels|annotations)\['([^']+)'\]", path)
    if m:
        return (meta.get(m.group(1)) or {}).get(m.group(2))
    simple = {'metadata.name': meta.get('name'), 'metadata.namespace': meta.get('namespace'),
              'metadata.uid': meta.get('uid'), 'spec.serviceAccountName': spec.get('serviceAccountName')}
    return simple.get(path)


def podman_args(spec, name, dirs, server, sa_dir, meta=None):
    """The podman run arguments of pod spec (a Job's template.spec), as a kubelet would run it.

    dirs maps a volume's name to the host directory the lab prepared for it (Secrets' files
    written, the PVC's directory); emptyDirs become tmpfs. server is the API server's IP:PORT,
    sa_dir the host directory holding token, ca.crt and namespace, meta the pod's metadata (what
    env fieldRefs read: the Job controller's labels and annotations). Every problem is listed at
    once (Refused)."""
    problems = []
    cs = spec.get('containers') or []
    if len(cs) != 1:
        problems.append('%d containers (the lab runs one)' % len(cs))
    if spec.get('initContainers'):
        problems.append('init containers (the lab runs none)')
    if not spec.get('hostNetwork'):
        problems.append('hostNetwork is not true (the lab has no pod network)')
    if problems:
        raise Refused('; '.join(problems))
    c = cs[0]
    psc = spec.get('securityContext') or {}
    csc = c.get('securityContext') or {}
    uid = csc.get('runAsUser', psc.get('runAsUser'))
    gid = csc.get('runAsGroup', psc.get('runAsGroup'))
    if csc.get('runAsNonRoot', psc.get('runAsNonRoot')) and (uid is None or uid == 0):
        problems.append('runAsNonRoot with runAsUser %s' % uid)
    a = ['--name', name, '--network', 'host', '--pull', 'never', '--read-only-tmpfs=false']
    if uid is not None:
        a += ['--user', '%d:%d' % (uid, gid if gid is not None else uid)]
    if psc.get('fsGroup') is not None:
        a += ['--group-add', str(psc['fsGroup'])]
    for g in psc.get('supplementalGroups') or []:
        a += ['--group-add', str(g)]
    if csc.get('readOnlyRootFilesystem'):
        a.append('--read-only')
    if csc.get('allowPrivilegeEscalation') is False:
        a += ['--security-opt', 'no-new-privileges']
    caps = csc.get('capabilities') or {}
    for cap in caps.get('drop') or []:
        a += ['--cap-drop', cap]
    for cap in caps.get('add') or []:
        a += ['--cap-add', cap]
    if csc.get('privileged'):
        problems.append('a privileged container')
    for e in c.get('env') or []:
        if 'value' in e:
            a += ['--env', '%s=%s' % (e['name'], e['value'])]
            continue
        fp = ((e.get('valueFrom') or {}).get('fieldRef') or {}).get('fieldPath')
        v = field(meta or {}, spec, fp) if fp else None
        if v is None:
            problems.append('env %s: %s (the lab sets values and the pod metadata\'s fieldRefs)' % (
                e.get('name'), ('fieldRef %s: not in the pod\'s metadata' % fp) if fp else 'valueFrom other than fieldRef'))
            continue
        a += ['--env', '%s=%s' % (e['name'], v)]
    host, _, port = server.rpartition(':')
    a += ['--env', 'KUBERNETES_SERVICE_HOST=' + host, '--env', 'KUBERNETES_SERVICE_PORT=' + port]
    if spec.get('automountServiceAccountToken', True):
        a += ['--volume', '%s:%s:ro' % (sa_dir, SA_DIR)]
    vols = {v['name']: v for v in spec.get('volumes') or []}
    for m in c.get('volumeMounts') or []:
        v = vols.get(m['name'])
        if v is None:
            problems.append('volumeMount %s: no such volume' % m['name'])
            continue
        if 'emptyDir' in v:
            a += ['--tmpfs', '%s:rw,mode=1777' % m['mountPath']]
        elif 'secret' in v or 'persistentVolumeClaim' in v or 'configMap' in v:
            if m['name'] not in dirs:
                problems.append('volume %s: the lab prepared no directory for it' % m['name'])
                continue
            ro = m.get('readOnly') or 'secret' in v or 'configMap' in v
            a += ['--volume', '%s:%s%s' % (dirs[m['name']], m['mountPath'], ':ro' if ro else '')]
        else:
            problems.append('volume %s: kind %s (the lab knows emptyDir, secret, configMap, persistentVolumeClaim)'
                            % (m['name'], ', '.join(k for k in v if k != 'name')))
    if c.get('command'):
        a += ['--entrypoint', json.dumps(c['command'])]
    if problems:
        raise Refused('; '.join(problems))
    return a + [c['image']] + list(c.get('args') or [])


def write_secret(dest, sec, mode, fs_group):
    """The Secret's files as a kubelet writes them: mode (defaultMode), group fsGroup."""
    os.makedirs(dest, exist_ok=True)
    os.chmod(dest, 0o755)
    for k, v in (sec.get('data') or {}).items():
        p = os.path.join(dest, k)
        with open(p, 'wb') as fh:
            fh.write(base64.b64decode(v))
        os.chmod(p, mode)
        if fs_group is not None:
            os.chown(p, 0, fs_group)


def prepare(api, ns, job, root, server, ca):
    """Reads Job ns/job back, writes what its pod mounts under root; (spec, dirs, sa_dir)."""
    _, stored = api.call('GET', object_path('Job', ns, job))
    spec = pod_template(stored)['spec']
    fs_group = (spec.get('securityContext') or {}).get('fsGroup')
    dirs = {}
    for v in spec.get('volumes') or []:
        d = os.path.join(root, 'volumes', v['name'])
        if 'secret' in v:
            _, sec = api.call('GET', object_path('Secret', ns, v['secret']['secretName']))
            write_secret(d, sec, v['secret'].get('defaultMode', 0o644), fs_group)
            dirs[v['name']] = d
        elif 'persistentVolumeClaim' in v:
            claim = v['persistentVolumeClaim']['claimName']
            api.call('GET', object_path('PersistentVolumeClaim', ns, claim))  # it must exist
            os.makedirs(d, exist_ok=True)
            if fs_group is not None:  # the volume's group is the fsGroup, setgid
                os.chown(d, 0, fs_group)
                os.chmod(d, 0o2775)
            dirs[v['name']] = d
    sa = spec.get('serviceAccountName') or 'default'
    body = {'apiVersion': 'authentication.k8s.io/v1', 'kind': 'TokenRequest',
            'spec': {'expirationSeconds': 3607}}
    _, got = api.call('POST', '/api/v1/namespaces/%s/serviceaccounts/%s/token' % (ns, sa), body)
    sa_dir = os.path.join(root, 'serviceaccount')
    os.makedirs(sa_dir, exist_ok=True)
    with open(ca) as fh:
        files = {'token': got['status']['token'], 'ca.crt': fh.read(), 'namespace': ns}
    for k, v in files.items():
        p = os.path.join(sa_dir, k)
        with open(p, 'w') as fh:
            fh.write(v)
        os.chmod(p, 0o644)
    return stored, spec, dirs, sa_dir


# Finalizers that only kube-controller-manager removes; the lab runs none, so podrun removes them
# itself once the object is being deleted, as that controller would for an object nothing uses.
CONTROLLER_FINALIZERS = {'kubernetes.io/pvc-protection', 'foregroundDeletion', 'orphan'}


def delete(api, ns, refs, timeout=60):
    """Deletes each KIND/NAME of refs and waits until the API server no longer has it; returns
    the problems (an object still there after timeout, a finalizer no one removes)."""
    problems = []
    for ref in refs:
        kind, _, name = ref.partition('/')
        path = object_path(kind, ns, name)
        # Background: the lab has no garbage collector to finish a foreground deletion.
        api.call('DELETE', path, {'propagationPolicy': 'Background'}, ok=(200, 202, 404))
        deadline = time.monotonic() + timeout
        while True:
            code, obj = api.call('GET', path, ok=(200, 404))
            if code == 404:
                print('deleted %s %s/%s' % (kind, ns, name))
                break
            fins = (obj.get('metadata') or {}).get('finalizers') or []
            if fins and set(fins) <= CONTROLLER_FINALIZERS:
                api.call('PATCH', path, {'metadata': {'finalizers': None}},
                         content_type='application/merge-patch+json')
                print('removed finalizer(s) %s of %s %s/%s (no kube-controller-manager in the lab)' % (
                    ', '.join(fins), kind, ns, name))
                continue
            if time.monotonic() > deadline:
                problems.append('%s %s/%s still there after %ss (finalizers: %s)' % (kind, ns, name, timeout, fins or 'none'))
                break
            time.sleep(0.5)
    return problems


def main(argv):
    if len(argv) < 2 or argv[1] not in ('apply', 'secret', 'podman', 'delete'):
        sys.exit(__doc__)
    api = api_from_env('podrun')
    cmd, args = argv[1], argv[2:]
    if cmd == 'apply':
        image, cargs, env, files = None, None, {}, []
        while args:
            a = args.pop(0)
            if a == '--image':
                image = args.pop(0)
            elif a == '--args':
                cargs = json.loads(args.pop(0))
            elif a == '--set-env':
                k, _, v = args.pop(0).partition('=')
                env[k] = v
            else:
                files.append(a)
        for f in files:
            with open(f) as fh:
                for obj in yaml.safe_load_all(fh):
                    if obj:
                        print(apply(api, edit(obj, image, cargs, env)))
    elif cmd == 'secret' and len(args) >= 3:
        print(apply(api, secret(args[0], args[1], args[2:])))
    elif cmd == 'podman' and len(args) == 5:
        ns, job, root, name, server = args
        try:
            stored, spec, dirs, sa_dir = prepare(api, ns, job, root, server, os.environ['KUBE_CA'])
            meta = dict(pod_template(stored).get('metadata') or {}, name=name, namespace=ns)
            for a in podman_args(spec, name, dirs, server, sa_dir, meta):
                print(a)
        except Refused as e:
            sys.exit('podrun: Job %s/%s: %s' % (ns, job, e))
        print('# grace %d' % spec.get('terminationGracePeriodSeconds', 30))
    elif cmd == 'delete' and len(args) >= 2:
        problems = delete(api, args[0], args[1:])
        if problems:
            sys.exit('podrun: ' + '; '.join(problems))
    else:
        sys.exit(__doc__)


if __name__ == '__main__':
    main(sys.argv)
