"""Unit tests of kube_setup's pure parts: python3 -m unittest lab/kube/test_kube_setup.py."""
import os
import re
import sys
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


if __name__ == '__main__':
    unittest.main()
