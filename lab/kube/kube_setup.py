"""asap2lab Kubernetes: the API objects of the lab's control plane (lab/kube/up.sh), through the
API server's REST API with the lab admin's token (no kubectl).

  python3 kube_setup.py objects HOSTS [OIDC_USER]
                                            namespaces, default service accounts, a Node per
                                            hypervisor, its OVS DaemonSet-shaped pod and the
                                            OVN-shaped variant, the RBAC of docs/kubernetes-rbac.yaml
                                            (as written) and its no-exec variant; with OIDC_USER
                                            (the API server's name for the lab issuer's user) the
                                            docs' bindings for that user too
  python3 kube_setup.py wait HOSTS TIMEOUT  every Node Ready and every lab pod Running, ready
  python3 kube_setup.py token NS SA SECONDS a service-account token (TokenRequest), on stdout
  python3 kube_setup.py delete-pod NS NAME  delete a pod (grace 0) and wait until it is gone
  python3 kube_setup.py debug-pods [--delete]
                                            the harness's node debug pods in every namespace (its
                                            labels: DEBUG_SELECTOR), one "NS/NAME NODE RUN-ID" line
                                            each; --delete deletes them and waits until they are gone
  python3 kube_setup.py toolfarm DIR TOOL...  DIR: a symlink to every program of the bin directories
                                            (TOOL_DIRS, first one wins as on a PATH) but TOOL...; no
                                            API server, no environment (lab/kube/up.sh runs it where
                                            kwok runs, so the links are that root's programs)

HOSTS is a comma-separated list of NODE=IP (Nova's service host = the node's name, and the
hypervisor's control address, where its kwok serves the kubelet API).
Environment: KUBE_SERVER (https://IP:PORT), KUBE_CA (file), KUBE_TOKEN_FILE (the admin token).
Idempotent: an object that exists is left as it is.
"""
import copy
import json
import os
import shutil
import ssl
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
RBAC_FILE = os.path.join(HERE, '..', '..', 'docs', 'kubernetes-rbac.yaml')

NAMESPACE = 'openstack'             # MOSK's (hypervisors.kubernetes.namespace's default)
RESTRICTED_NAMESPACE = 'asap2lab-restricted'   # PodSecurity "restricted": refuses the debug pod
NOEXEC_NAME = 'asap2-e2e-noexec'    # the docs' Role without pods/exec, its SA and binding
LAB_LABEL = 'asap2lab/kube'         # on every object created here

# Rockoon's OVS DaemonSet (charts/infra/openvswitch, ML2/OVS) and ovn-controller (ML2/OVN):
# the labels and container names the harness's presets select (docs/CONFIG.md, "preset").
OVS_PRESET = {'labels': {'application': 'openvswitch', 'component': 'openvswitch-vswitchd',
                         'release_group': 'openvswitch'},
              'daemonset': 'openvswitch-vswitchd-default', 'containers': ['openvswitch-vswitchd']}
OVN_PRESET = {'labels': {'application': 'openvswitch_ovn', 'component': 'controller',
                         'release_group': 'openvswitch-ovn'},
              'daemonset': 'ovn-controller-default', 'containers': ['controller', 'vswitchd']}
# Never pulled: kwok runs no container. A name of the shape MOSK's images have.
LAB_IMAGE = 'asap2lab.invalid/openstack/openvswitch:lab'

# The labels of the harness's node debug pods (e2e/remote/kube/debug.go: LabelManagedBy,
# LabelRole): what the leak check and the sweeper select them by.
DEBUG_SELECTOR = 'app.kubernetes.io/managed-by=asap2-e2e,asap2-e2e/role=node-debug'

# Where a PATH finds programs on the lab's roots (Debian 12 and 13: merged /usr, /bin and /sbin
# are links to usr/bin and usr/sbin, so tcpdump, in /usr/bin, is also /bin/tcpdump). A farm made
# of all of them less a tool lacks that tool under every name a PATH lookup could use.
TOOL_DIRS = ('/usr/local/sbin', '/usr/local/bin', '/usr/sbin', '/usr/bin', '/sbin', '/bin')
# What the OVS-shaped pods' containers lack (lab/kube/up.sh: their exec's PATH is a farm without
# them), so the harness runs them in a node debug pod.
OVS_CONTAINER_LACKS = ('tcpdump',)


def tool_farm(dest, dirs=TOOL_DIRS, without=OVS_CONTAINER_LACKS):
    """Make dest a directory of symlinks, one per program name found in dirs (the first
    directory holding a name wins, as on a PATH; the link points to the path in that directory),
    none for the names in without. Built beside dest and renamed over it, so a PATH naming dest
    never sees half a farm. Returns (links made, names left out that some directory has)."""
    dest = os.path.abspath(dest)
    tmp = dest + '.new'
    if os.path.lexists(tmp):
        shutil.rmtree(tmp)
    os.makedirs(tmp)
    made, left_out = 0, set()
    for d in dirs:
        try:
            names = sorted(os.listdir(d))
        except FileNotFoundError:
            continue
        for name in names:
            path = os.path.join(d, name)
            if not os.access(path, os.X_OK) or os.path.isdir(path):
                continue
            if name in without:
                left_out.add(name)
                continue
            link = os.path.join(tmp, name)
            if not os.path.lexists(link):
                os.symlink(path, link)
                made += 1
    if os.path.lexists(dest):
        old = dest + '.old'
        if os.path.lexists(old):
            shutil.rmtree(old)
        os.rename(dest, old)
        os.rename(tmp, dest)
        shutil.rmtree(old)
    else:
        os.rename(tmp, dest)
    return made, sorted(left_out)


def parse_hosts(spec):
    """'compute1=198.18.0.11,compute2=198.18.0.12' -> [('compute1', '198.18.0.11'), ...]."""
    out, bad = [], []
    for item in spec.split(','):
        name, sep, ip = item.strip().partition('=')
        if not sep or not name or not ip:
            bad.append(item)
        else:
            out.append((name, ip))
    if bad or not out:
        raise ValueError('HOSTS: want NODE=IP[,NODE=IP...], bad item(s): %r' % (bad or [spec]))
    return out


def node(name, ip):
    return {'apiVersion': 'v1', 'kind': 'Node',
            'metadata': {'name': name, 'labels': {
                'kubernetes.io/hostname': name, 'kubernetes.io/os': 'linux',
                'openstack-compute-node': 'enabled', 'openvswitch': 'enabled', LAB_LABEL: 'node',
                # kwok manages the nodes carrying its own name
                'asap2lab/kwok': name},
                'annotations': {'node.alpha.kubernetes.io/ttl': '0', 'kwok.x-k8s.io/node': 'fake'}},
            'spec': {},
            'status': {'addresses': [{'type': 'InternalIP', 'address': ip},
                                     {'type': 'Hostname', 'address': name}]}}


def ds_pod(preset, node_name, namespace=NAMESPACE):
    """A pod shaped like one of preset's DaemonSet on node_name: host network, privileged."""
    labels = dict(preset['labels'])
    labels[LAB_LABEL] = 'ovs-pod'
    return {'apiVersion': 'v1', 'kind': 'Pod',
            'metadata': {'generateName': preset['daemonset'] + '-', 'namespace': namespace,
                         'labels': labels},
            'spec': {'nodeName': node_name, 'hostNetwork': True, 'dnsPolicy': 'ClusterFirstWithHostNet',
                     'automountServiceAccountToken': False,
                     'tolerations': [{'operator': 'Exists'}],
                     'containers': [{'name': c, 'image': LAB_IMAGE,
                                     'command': ['/usr/sbin/ovs-vswitchd'],
                                     'securityContext': {'privileged': True}}
                                    for c in preset['containers']]}}


def rbac_docs(text):
    """The YAML documents of docs/kubernetes-rbac.yaml, each checked for a kind and a name."""
    docs = [d for d in yaml.safe_load_all(text) if d]
    bad = [i for i, d in enumerate(docs) if not d.get('kind') or not d.get('metadata', {}).get('name')]
    if bad:
        raise ValueError('%s: document(s) %s without kind or metadata.name' % (RBAC_FILE, bad))
    return docs


def without_exec(docs, name=NOEXEC_NAME):
    """The docs' Role, RoleBinding and ServiceAccount renamed to name, the Role with no pods/exec:
    what a cluster admin who forgot that rule would have granted."""
    kinds = {d['kind']: d for d in docs if d['kind'] in ('ServiceAccount', 'Role', 'RoleBinding')}
    missing = sorted({'ServiceAccount', 'Role', 'RoleBinding'} - set(kinds))
    if missing:
        raise ValueError('%s: no %s' % (RBAC_FILE, ', '.join(missing)))
    sa, role, rb = (copy.deepcopy(kinds[k]) for k in ('ServiceAccount', 'Role', 'RoleBinding'))
    sa['metadata']['name'] = name
    role['metadata']['name'] = name
    rules, dropped = [], 0
    for r in role['rules']:
        res = [x for x in r.get('resources', []) if x != 'pods/exec']
        dropped += len(r.get('resources', [])) - len(res)
        if res:
            rules.append(dict(r, resources=res))
    if not dropped:
        raise ValueError('%s: Role %s grants no pods/exec' % (RBAC_FILE, kinds['Role']['metadata']['name']))
    role['rules'] = rules
    rb['metadata']['name'] = name
    rb['roleRef']['name'] = name
    rb['subjects'] = [{'kind': 'ServiceAccount', 'name': name, 'namespace': sa['metadata']['namespace']}]
    return [sa, role, rb]


def for_user(docs, user, suffix='-oidc'):
    """The docs' RoleBindings and ClusterRoleBindings again, renamed with suffix, for user (a User
    as the API server names it, e.g. an OIDC user "oidc:NAME"): the harness's Role granted to a
    person as docs/kubernetes-rbac.yaml's commented subject shows."""
    out = []
    for d in docs:
        if d['kind'] in ('RoleBinding', 'ClusterRoleBinding'):
            d = copy.deepcopy(d)
            d['metadata']['name'] += suffix
            d['subjects'] = [{'apiGroup': 'rbac.authorization.k8s.io', 'kind': 'User', 'name': user}]
            out.append(d)
    if not any(d['kind'] == 'RoleBinding' for d in out):
        raise ValueError('%s: no RoleBinding to grant %s' % (RBAC_FILE, user))
    return out


def in_namespace(docs, ns):
    """The namespaced documents moved to namespace ns (subjects keep theirs)."""
    out = []
    for d in docs:
        if 'namespace' in d.get('metadata', {}):
            d = copy.deepcopy(d)
            d['metadata']['namespace'] = ns
            out.append(d)
    return out


PATHS = {  # kind -> (API prefix, plural, namespaced)
    'Namespace': ('/api/v1', 'namespaces', False),
    'Node': ('/api/v1', 'nodes', False),
    'ServiceAccount': ('/api/v1', 'serviceaccounts', True),
    'Pod': ('/api/v1', 'pods', True),
    'Role': ('/apis/rbac.authorization.k8s.io/v1', 'roles', True),
    'RoleBinding': ('/apis/rbac.authorization.k8s.io/v1', 'rolebindings', True),
    'ClusterRole': ('/apis/rbac.authorization.k8s.io/v1', 'clusterroles', False),
    'ClusterRoleBinding': ('/apis/rbac.authorization.k8s.io/v1', 'clusterrolebindings', False),
}


def collection_path(obj):
    kind = obj['kind']
    if kind not in PATHS:
        raise ValueError('kind %s: not one kube_setup.py creates (%s)' % (kind, ', '.join(sorted(PATHS))))
    prefix, plural, namespaced = PATHS[kind]
    if namespaced:
        return '%s/namespaces/%s/%s' % (prefix, obj['metadata']['namespace'], plural)
    return '%s/%s' % (prefix, plural)


class API:
    def __init__(self, server, ca, token):
        self.server = server.rstrip('/')
        self.ctx = ssl.create_default_context(cafile=ca)
        self.token = token

    def call(self, method, path, body=None, ok=(200, 201, 202), content_type='application/json'):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.server + path, data=data, method=method, headers={
            'Authorization': 'Bearer ' + self.token, 'Content-Type': content_type,
            'Accept': 'application/json'})
        try:
            with urllib.request.urlopen(req, context=self.ctx, timeout=30) as r:
                return r.status, json.loads(r.read() or b'{}')
        except urllib.error.HTTPError as e:
            payload = e.read()
            try:
                payload = json.loads(payload)
            except ValueError:
                payload = {'message': payload.decode(errors='replace')}
            if e.code in ok:
                return e.code, payload
            raise RuntimeError('%s %s: HTTP %d: %s' % (method, path, e.code, payload.get('message', payload)))

    def create(self, obj):
        """Create obj unless an object of its name exists; True when created."""
        code, _ = self.call('POST', collection_path(obj), obj, ok=(200, 201, 202, 409))
        return code != 409

    def list(self, path):
        return self.call('GET', path)[1].get('items', [])


def api_from_env(prog):
    """The API of KUBE_SERVER, KUBE_CA and KUBE_TOKEN_FILE; exits naming any not set."""
    missing = [k for k in ('KUBE_SERVER', 'KUBE_CA', 'KUBE_TOKEN_FILE') if not os.environ.get(k)]
    if missing:
        sys.exit('%s: environment %s not set' % (prog, ', '.join(missing)))
    with open(os.environ['KUBE_TOKEN_FILE']) as f:
        return API(os.environ['KUBE_SERVER'], os.environ['KUBE_CA'], f.read().strip())


def objects(api, hosts, oidc_user=None):
    created = []

    def make(obj):
        if api.create(obj):
            created.append('%s %s' % (obj['kind'], obj['metadata'].get('name')))
    for ns, labels in ((NAMESPACE, {}),
                       (RESTRICTED_NAMESPACE, {'pod-security.kubernetes.io/enforce': 'restricted',
                                               'pod-security.kubernetes.io/enforce-version': 'latest'})):
        labels = dict(labels, **{LAB_LABEL: 'namespace'})
        make({'apiVersion': 'v1', 'kind': 'Namespace', 'metadata': {'name': ns, 'labels': labels}})
        # no controller-manager: the service-account controller's work by hand
        make({'apiVersion': 'v1', 'kind': 'ServiceAccount', 'metadata': {'name': 'default', 'namespace': ns}})
    with open(RBAC_FILE) as f:
        docs = rbac_docs(f.read())
    for d in (docs + without_exec(docs) + in_namespace(docs, RESTRICTED_NAMESPACE) +
              (for_user(docs, oidc_user) if oidc_user else [])):
        make(d)
    for name, ip in hosts:
        make(node(name, ip))
    have = api.list('/api/v1/namespaces/%s/pods?labelSelector=%s' % (NAMESPACE, LAB_LABEL + '%3Dovs-pod'))
    for name, _ in hosts:
        for preset in (OVS_PRESET, OVN_PRESET):
            if any(p['spec'].get('nodeName') == name and
                   all(p['metadata'].get('labels', {}).get(k) == v for k, v in preset['labels'].items())
                   and not p['metadata'].get('deletionTimestamp') for p in have):
                continue
            obj = ds_pod(preset, name)
            _, got = api.call('POST', collection_path(obj), obj)
            created.append('Pod %s on %s' % (got['metadata']['name'], name))
    print('kube_setup: created %d objects%s' % (len(created), (': ' + ', '.join(created)) if created else ''))


def node_ready(n):
    return any(c.get('type') == 'Ready' and c.get('status') == 'True'
               for c in n.get('status', {}).get('conditions', []))


def pod_ready(p):
    st = p.get('status', {})
    cs = st.get('containerStatuses', [])
    return (st.get('phase') == 'Running' and not p['metadata'].get('deletionTimestamp')
            and len(cs) == len(p['spec']['containers']) and all(c.get('ready') for c in cs))


def wait(api, hosts, timeout):
    deadline = time.monotonic() + timeout
    want = {n for n, _ in hosts}
    while True:
        state = ''
        try:
            nodes = {n['metadata']['name']: n for n in api.list('/api/v1/nodes')}
            pods = api.list('/api/v1/namespaces/%s/pods?labelSelector=%s' % (NAMESPACE, LAB_LABEL + '%3Dovs-pod'))
            not_ready = sorted(n for n in want if n not in nodes or not node_ready(nodes[n]))
            pods_not = sorted('%s(%s)' % (p['metadata']['name'], p.get('status', {}).get('phase'))
                              for p in pods if not pod_ready(p))
            on = {p['spec'].get('nodeName') for p in pods}
            no_pod = sorted(want - on)
            state = 'nodes not Ready %s, pods not ready %s, nodes without pods %s' % (not_ready, pods_not, no_pod)
            if not not_ready and not pods_not and not no_pod:
                print('kube_setup: ready: nodes %s Ready, %d pods Running and ready' % (sorted(want), len(pods)))
                return
        except (RuntimeError, OSError) as e:
            state = 'API error: %s' % e
        if time.monotonic() > deadline:
            sys.exit('kube_setup: not ready after %ss: %s' % (timeout, state))
        time.sleep(0.5)


def token(api, ns, sa, seconds):
    body = {'apiVersion': 'authentication.k8s.io/v1', 'kind': 'TokenRequest',
            'spec': {'expirationSeconds': int(seconds)}}
    _, got = api.call('POST', '/api/v1/namespaces/%s/serviceaccounts/%s/token' % (ns, sa), body)
    tok = got.get('status', {}).get('token')
    if not tok:
        raise RuntimeError('TokenRequest for %s/%s: no token in the answer' % (ns, sa))
    print(tok)


def delete_pod(api, ns, name, timeout=60):
    api.call('DELETE', '/api/v1/namespaces/%s/pods/%s?gracePeriodSeconds=0' % (ns, name), ok=(200, 202, 404))
    deadline = time.monotonic() + timeout
    while api.call('GET', '/api/v1/namespaces/%s/pods/%s' % (ns, name), ok=(200, 404))[0] != 404:
        if time.monotonic() > deadline:
            sys.exit('kube_setup: pod %s/%s still there %ss after its delete' % (ns, name, timeout))
        time.sleep(0.5)


def debug_pods(api, delete=False, timeout=60):
    """The harness's node debug pods in every namespace, as (ns, name, node, run id); deleted
    (and waited for) with delete."""
    sel = urllib.parse.quote(DEBUG_SELECTOR, safe='=,')
    out = []
    for p in api.list('/api/v1/pods?labelSelector=' + sel):
        md = p['metadata']
        out.append((md['namespace'], md['name'], p['spec'].get('nodeName', ''),
                    md.get('labels', {}).get('asap2-e2e/run-id', '')))
    if delete:
        for ns, name, _, _ in out:
            delete_pod(api, ns, name, timeout)
    return out


def main(argv):
    if len(argv) < 2 or argv[1] not in ('objects', 'wait', 'token', 'delete-pod', 'debug-pods', 'toolfarm'):
        sys.exit(__doc__)
    if argv[1] == 'toolfarm':
        if len(argv) < 4:
            sys.exit(__doc__)
        made, left_out = tool_farm(argv[2], without=tuple(argv[3:]))
        missing = sorted(set(argv[3:]) - set(left_out))
        print('kube_setup: %s: %d programs linked, left out %s%s' % (
            argv[2], made, ', '.join(left_out) or 'nothing',
            ('; not found in %s anyway: %s' % (':'.join(TOOL_DIRS), ', '.join(missing))) if missing else ''))
        return
    api = api_from_env('kube_setup')
    cmd, args = argv[1], argv[2:]
    if cmd == 'objects' and len(args) in (1, 2):
        objects(api, parse_hosts(args[0]), *args[1:])
    elif cmd == 'wait' and len(args) == 2:
        wait(api, parse_hosts(args[0]), float(args[1]))
    elif cmd == 'token' and len(args) == 3:
        token(api, *args)
    elif cmd == 'delete-pod' and len(args) == 2:
        delete_pod(api, *args)
    elif cmd == 'debug-pods' and args in ([], ['--delete']):
        pods = debug_pods(api, delete=bool(args))
        for ns, name, node_name, run_id in pods:
            print('%s/%s %s %s%s' % (ns, name, node_name or '-', run_id or '-', ' deleted' if args else ''))
        print('kube_setup: %d debug pod(s) (%s)%s' % (len(pods), DEBUG_SELECTOR, ', deleted' if args and pods else ''),
              file=sys.stderr)
    else:
        sys.exit(__doc__)


if __name__ == '__main__':
    main(sys.argv)
