"""Unit tests for guestctl's pure parts (no root, no OVS): python3 -m unittest lab/guest/test_guestctl.py

Inputs are written here by hand, shaped like what lab/nova/asap2lab_driver.py sends
(see the spec in guestctl.py's docstring)."""
import json
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import guestctl  # noqa: E402

UUID = '3c5abc79-9c93-4708-bc80-38288605da8d'
PORT1 = '1581fe53-c7ae-4ec0-9cba-0ce4c1d84d7d'
PORT2 = '982e7372-933e-4631-a806-d007098932b1'


def spec(**over):
    s = {'uuid': UUID, 'hostname': 'vm-a', 'authorized_keys': 'ssh-ed25519 AAAA test',
         'nics': [{'port_id': PORT1, 'mac': 'FA:16:3E:00:00:01', 'mtu': 8950, 'ips': ['198.18.10.5/24'],
                   'gateway': '198.18.10.1'},
                  {'port_id': PORT2, 'mac': 'fa:16:3e:00:00:02', 'bridge': 'br-int', 'ips': []}]}
    s.update(over)
    return json.dumps(s)


class ParseSpec(unittest.TestCase):
    def test_valid_defaults_and_naming(self):
        got = guestctl.parse_spec(spec())
        self.assertEqual(got['mode'], 'veth')
        self.assertEqual([n['name'] for n in got['nics']], ['eth0', 'eth1'])
        self.assertEqual(got['nics'][0]['ovs_port'], 'rep1581fe53-c7')
        self.assertEqual(got['nics'][0]['mac'], 'fa:16:3e:00:00:01')
        self.assertEqual(got['nics'][0]['bridge'], 'br-int')
        self.assertEqual(got['nics'][1]['mtu'], 1500)
        self.assertEqual(got['nova'], {})
        self.assertLessEqual(len(got['nics'][0]['ovs_port']), 15)

    def test_hostname_defaults_from_uuid(self):
        got = guestctl.parse_spec(spec(hostname=None))
        self.assertEqual(got['hostname'], 'asap2lab-vm-3c5abc79')

    def test_all_problems_reported_at_once(self):
        bad = json.loads(spec(mode='sriov', uuid='nope'))
        bad['nics'][0].update(mac='zz', mtu=20, ips=['198.18.10.5'], gateway='x')
        bad['nics'][1]['port_id'] = PORT1  # same rep name as nics[0]
        with self.assertRaises(guestctl.GuestError) as cm:
            guestctl.parse_spec(json.dumps(bad))
        msg = str(cm.exception)
        for want in ("mode must be one of veth|internal, got 'sriov'", "uuid must be a UUID, got 'nope'",
                     "nics[0].mac", "nics[0].mtu", "nics[0].ips: '198.18.10.5'", "nics[0].gateway 'x'",
                     "nics[1].port_id %s collides" % PORT1):
            self.assertIn(want, msg)

    def test_ipv6_and_garbage_rejected(self):
        with self.assertRaises(guestctl.GuestError):
            guestctl.parse_spec(spec(nics=[{'port_id': PORT1, 'mac': 'fa:16:3e:00:00:01',
                                            'ips': ['2001:db8::5/64']}]))
        for data in ('', '[]', '{"uuid": 1}', '{', 'null', spec(nics=[]), spec(nics=[7])):
            with self.assertRaises(guestctl.GuestError, msg=data):
                guestctl.parse_spec(data)

    def test_routes_validated(self):
        ok = guestctl.parse_spec(spec(nics=[{'port_id': PORT1, 'mac': 'fa:16:3e:00:00:01',
                                             'routes': [{'cidr': '198.18.20.0/24', 'gateway': '198.18.10.254'}]}]))
        self.assertEqual(ok['nics'][0]['routes'][0]['gateway'], '198.18.10.254')
        with self.assertRaises(guestctl.GuestError):
            guestctl.parse_spec(spec(nics=[{'port_id': PORT1, 'mac': 'fa:16:3e:00:00:01',
                                            'routes': [{'cidr': '198.18.20.0/24'}]}]))


class ProcStartTime(unittest.TestCase):
    def test_own_process_has_a_start_time(self):
        self.assertIsInstance(guestctl.proc_start_time(os.getpid()), int)

    def test_missing_process(self):
        self.assertIsNone(guestctl.proc_start_time(2 ** 22 + 1))  # above pid_max's maximum


if __name__ == '__main__':
    unittest.main()
