"""Unit tests of kube_setup's pure parts: python3 -m unittest lab/kube/test_kube_setup.py."""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import kube_setup  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..')


def config_md_presets():
    """docs/CONFIG.md's preset table: name -> (selector dict, container)."""
    out = {}
    with open(os.path.join(ROOT, 'docs', 'CONFIG.md')) as f:
        for line in f:
            m = re.match(r'\| `(\w+)` \| ML2/\w+ .*\| `([^`]+)` \| `([^`]+)` \|\s*$', line)
            if m:
                sel = dict(term.split('=', 1) for term in m.group(2).split(','))
                out[m.group(1)] = (sel, m.group(3))
    return out


def selects(selector, labels):
    return all(labels.get(k) == v for k, v in selector.items())


class PodShapeTest(unittest.TestCase):
    def test_presets_of_config_md_select_the_lab_pods(self):
        presets = config_md_presets()
        self.assertEqual(sorted(presets), ['ovn', 'ovs'])
        for name, shape in (('ovs', kube_setup.OVS_PRESET), ('ovn', kube_setup.OVN_PRESET)):
            sel, container = presets[name]
            pod = kube_setup.ds_pod(shape, 'compute1')
            self.assertTrue(selects(sel, pod['metadata']['labels']), (name, sel, pod['metadata']['labels']))
            self.assertIn(container, [c['name'] for c in pod['spec']['containers']], name)
            self.assertEqual(pod['spec']['nodeName'], 'compute1')
            self.assertTrue(pod['spec']['hostNetwork'])
        # each preset selects its own pod only: a MOSK cloud has one of them, the lab both
        ovs_sel, _ = presets['ovs']
        ovn_pod = kube_setup.ds_pod(kube_setup.OVN_PRESET, 'compute1')
        self.assertFalse(selects(ovs_sel, ovn_pod['metadata']['labels']))


class RBACTest(unittest.TestCase):
    def docs(self):
        with open(kube_setup.RBAC_FILE) as f:
            return kube_setup.rbac_docs(f.read())

    def test_noexec_role_is_the_docs_role_without_pods_exec(self):
        docs = self.docs()
        role = [d for d in docs if d['kind'] == 'Role'][0]
        sa, noexec, rb = kube_setup.without_exec(docs)
        granted = {(res, v) for r in role['rules'] for res in r['resources'] for v in r['verbs']}
        left = {(res, v) for r in noexec['rules'] for res in r['resources'] for v in r['verbs']}
        self.assertIn(('pods/exec', 'create'), granted)
        self.assertEqual(left, {g for g in granted if g[0] != 'pods/exec'})
        self.assertEqual(rb['roleRef']['name'], noexec['metadata']['name'])
        self.assertEqual(rb['subjects'], [{'kind': 'ServiceAccount', 'name': sa['metadata']['name'],
                                           'namespace': 'openstack'}])
        # the docs' own objects are untouched
        self.assertEqual(role['metadata']['name'], 'asap2-e2e')

    def test_a_role_without_exec_is_an_error(self):
        docs = self.docs()
        _, noexec, _ = kube_setup.without_exec(docs)
        docs = [noexec if d['kind'] == 'Role' else d for d in docs]
        with self.assertRaisesRegex(ValueError, 'grants no pods/exec'):
            kube_setup.without_exec(docs)

    def test_in_namespace_keeps_subjects(self):
        moved = kube_setup.in_namespace(self.docs(), 'asap2lab-restricted')
        self.assertEqual(sorted(d['kind'] for d in moved), ['Role', 'RoleBinding', 'ServiceAccount'])
        rb = [d for d in moved if d['kind'] == 'RoleBinding'][0]
        self.assertEqual(rb['metadata']['namespace'], 'asap2lab-restricted')
        self.assertEqual(rb['subjects'][0]['namespace'], 'openstack')

    def test_for_user_binds_the_docs_roles_to_the_user(self):
        docs = self.docs()
        bound = kube_setup.for_user(docs, 'oidc:asap2lab-re')
        want = {(d['kind'], d['metadata']['name'] + '-oidc', d['roleRef']['name'])
                for d in docs if d['kind'] in ('RoleBinding', 'ClusterRoleBinding')}
        self.assertEqual({(d['kind'], d['metadata']['name'], d['roleRef']['name']) for d in bound}, want)
        self.assertIn(('RoleBinding', 'asap2-e2e-oidc', 'asap2-e2e'), want)
        for d in bound:
            self.assertEqual(d['subjects'], [{'apiGroup': 'rbac.authorization.k8s.io', 'kind': 'User',
                                              'name': 'oidc:asap2lab-re'}])
        # the docs' own bindings keep their service account
        self.assertEqual([d for d in docs if d['kind'] == 'RoleBinding'][0]['subjects'][0]['kind'], 'ServiceAccount')
        with self.assertRaisesRegex(ValueError, 'no RoleBinding'):
            kube_setup.for_user([d for d in docs if d['kind'] != 'RoleBinding'], 'oidc:x')

    def test_bad_documents_named(self):
        with self.assertRaisesRegex(ValueError, r'document\(s\) \[1\]'):
            kube_setup.rbac_docs('kind: Role\nmetadata: {name: a}\n---\nkind: Role\nmetadata: {}\n')


class HostsTest(unittest.TestCase):
    def test_parse(self):
        self.assertEqual(kube_setup.parse_hosts('compute1=198.18.0.11,compute2=198.18.0.12'),
                         [('compute1', '198.18.0.11'), ('compute2', '198.18.0.12')])

    def test_bad_items_all_named(self):
        with self.assertRaisesRegex(ValueError, r"\['compute1', '=198.18.0.12'\]"):
            kube_setup.parse_hosts('compute1,=198.18.0.12,compute3=198.18.0.13')

    def test_paths(self):
        self.assertEqual(kube_setup.collection_path(kube_setup.ds_pod(kube_setup.OVS_PRESET, 'c1')),
                         '/api/v1/namespaces/openstack/pods')
        self.assertEqual(kube_setup.collection_path({'kind': 'ClusterRole', 'metadata': {'name': 'x'}}),
                         '/apis/rbac.authorization.k8s.io/v1/clusterroles')
        with self.assertRaisesRegex(ValueError, 'kind Deployment'):
            kube_setup.collection_path({'kind': 'Deployment', 'metadata': {'name': 'x'}})


class DebugSelectorTest(unittest.TestCase):
    def test_the_harness_labels(self):
        """DEBUG_SELECTOR is e2e/remote/kube's debug pod labels (managed-by, role)."""
        with open(os.path.join(ROOT, 'e2e', 'remote', 'kube', 'debug.go')) as f:
            consts = dict(re.findall(r'^\s*(\w+)\s*=\s*"([^"]*)"', f.read(), re.M))
        want = '%s=%s,%s=%s' % (consts['LabelManagedBy'], consts['ManagedBy'], consts['LabelRole'], consts['RoleNodeDebug'])
        self.assertEqual(kube_setup.DEBUG_SELECTOR, want)


class ToolFarmTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix='asap2lab-t-farm-')
        self.addCleanup(shutil.rmtree, self.tmp)

    def prog(self, d, name, mode=0o755):
        os.makedirs(os.path.join(self.tmp, d), exist_ok=True)
        path = os.path.join(self.tmp, d, name)
        with open(path, 'w') as f:
            f.write('#!/bin/sh\n')
        os.chmod(path, mode)
        return path

    def test_first_directory_wins_and_the_tools_are_left_out(self):
        a1 = self.prog('a', 'sh')
        self.prog('b', 'sh')
        b_tc = self.prog('b', 'tc')
        self.prog('a', 'tcpdump')
        self.prog('b', 'tcpdump')
        self.prog('b', 'README', 0o644)
        os.makedirs(os.path.join(self.tmp, 'b', 'subdir'))
        dirs = [os.path.join(self.tmp, d) for d in ('a', 'missing', 'b')]
        farm = os.path.join(self.tmp, 'farm')
        made, left = kube_setup.tool_farm(farm, dirs, ('tcpdump',))
        self.assertEqual((made, left), (2, ['tcpdump']))
        self.assertEqual(sorted(os.listdir(farm)), ['sh', 'tc'])
        self.assertEqual(os.readlink(os.path.join(farm, 'sh')), a1)
        self.assertEqual(os.readlink(os.path.join(farm, 'tc')), b_tc)
        # made again over the old one (a program gone, one new): nothing of the old farm is left
        os.remove(b_tc)
        self.prog('b', 'ip')
        self.assertEqual(kube_setup.tool_farm(farm, dirs, ('tcpdump',)), (2, ['tcpdump']))
        self.assertEqual(sorted(os.listdir(farm)), ['ip', 'sh'])
        self.assertEqual(sorted(os.listdir(self.tmp)), ['a', 'b', 'farm'])

    def test_a_path_of_the_farm_lacks_tcpdump_for_real(self):
        """On this machine's own bin directories: tcpdump is 'not found' (exit 127) through the
        farm, and the other programs run."""
        if not shutil.which('tcpdump', path=':'.join(kube_setup.TOOL_DIRS)):
            self.skipTest('no tcpdump on this machine: nothing to leave out')
        farm = os.path.join(self.tmp, 'farm')
        kube_setup.tool_farm(farm)
        env = dict(os.environ, PATH=farm)
        r = subprocess.run(['/bin/sh', '-c', 'tcpdump --version'], env=env, capture_output=True, text=True)
        self.assertEqual(r.returncode, 127, r.stderr)
        self.assertIn('not found', r.stderr)
        r = subprocess.run(['/bin/sh', '-c', 'timeout -s INT 5 true && ls --version && setsid true'],
                           env=env, capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        # the host's own PATH still has it
        r = subprocess.run(['/bin/sh', '-c', 'tcpdump --version'], capture_output=True, text=True,
                           env=dict(os.environ, PATH=':'.join(kube_setup.TOOL_DIRS)))
        self.assertEqual(r.returncode, 0, r.stderr)


if __name__ == '__main__':
    unittest.main()
