"""Unit tests of cloud_setup's pure parts: python3 -m unittest discover -s lab/lib -p 'test_*.py'."""
import json
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import cloud_setup  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def recorded_rows():
    rows = []
    with open(os.path.join(HERE, 'testdata', 'compute_nodes-pci_stats-epoxy.tsv')) as f:
        for line in f:
            if line.startswith('#') or not line.strip():
                continue
            host, stats = line.rstrip('\n').split('\t', 1)
            rows.append((host, stats))
    return rows


class NodeOfTest(unittest.TestCase):
    def test_domain(self):
        self.assertEqual(cloud_setup.node_of('compute1', ''), 'compute1')
        self.assertEqual(cloud_setup.node_of('compute1', 'asap2lab.test'), 'compute1.asap2lab.test')


class PciVfsTest(unittest.TestCase):
    def test_recorded_epoxy_pools(self):
        rows = recorded_rows()
        self.assertEqual([h for h, _ in rows], ['compute1', 'compute2'])
        for host, stats in rows:
            self.assertEqual(cloud_setup.pci_vfs(stats), 8, host)

    def test_no_pool_or_other_device_is_zero(self):
        self.assertEqual(cloud_setup.pci_vfs(None), 0)
        self.assertEqual(cloud_setup.pci_vfs(''), 0)
        _, stats = recorded_rows()[0]
        other = json.loads(stats)
        pool = other['nova_object.data']['objects'][0]['nova_object.data']
        pool['product_id'] = '1018'
        self.assertEqual(cloud_setup.pci_vfs(json.dumps(other)), 0)
        pool['product_id'], pool['count'] = '101e', 0
        self.assertEqual(cloud_setup.pci_vfs(json.dumps(other)), 0, 'a pool with every VF taken')

    def test_pools_add_up(self):
        _, stats = recorded_rows()[0]
        two = json.loads(stats)
        objs = two['nova_object.data']['objects']
        objs.append(json.loads(json.dumps(objs[0])))
        objs[1]['nova_object.data']['count'] = 3
        self.assertEqual(cloud_setup.pci_vfs(json.dumps(two)), 11)

    def test_bare_list_of_older_rows(self):
        self.assertEqual(cloud_setup.pci_vfs('[{"vendor_id": "15b3", "product_id": "101e", "count": 2}]'), 2)


if __name__ == '__main__':
    unittest.main()
