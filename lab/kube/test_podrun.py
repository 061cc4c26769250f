"""Tests of podrun.py's pure parts: deploy/'s real manifests into podman's arguments."""
import copy
import os
import sys
import unittest

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import podrun  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..')


def load(name):
    with open(os.path.join(ROOT, 'deploy', name)) as fh:
        return [d for d in yaml.safe_load_all(fh) if d]


def pairs(args, flag):
    return [args[i + 1] for i, a in enumerate(args[:-1]) if a == flag]


class PodmanArgs(unittest.TestCase):
    def setUp(self):
        self.job = load('job.yaml')[0]
        self.spec = self.job['spec']['template']['spec']
        self.dirs = {'config': '/x/config', 'clouds': '/x/clouds', 'results': '/x/results'}

    def args(self, spec=None):
        return podrun.podman_args(spec or self.spec, 'run1', self.dirs, '198.18.0.1:16443', '/x/sa')

    def test_job_as_a_kubelet_runs_it(self):
        a = self.args()
        self.assertEqual(pairs(a, '--network'), ['host'])
        self.assertEqual(pairs(a, '--user'), ['65532:65532'])
        self.assertEqual(pairs(a, '--group-add'), ['65532'])  # the fsGroup
        self.assertIn('--read-only', a)
        self.assertEqual(pairs(a, '--cap-drop'), ['ALL'])
        self.assertEqual(pairs(a, '--security-opt'), ['no-new-privileges'])
        vols = pairs(a, '--volume')
        self.assertIn('/x/sa:/var/run/secrets/kubernetes.io/serviceaccount:ro', vols)
        self.assertIn('/x/config:/etc/asap2-e2e:ro', vols)
        self.assertIn('/x/clouds:/etc/openstack:ro', vols)
        self.assertIn('/x/results:/results', vols)  # the PVC: writable
        self.assertEqual(sorted(pairs(a, '--tmpfs')), ['/home/asap2:rw,mode=1777', '/tmp:rw,mode=1777'])
        env = pairs(a, '--env')
        self.assertIn('KUBERNETES_SERVICE_HOST=198.18.0.1', env)
        self.assertIn('KUBERNETES_SERVICE_PORT=16443', env)
        self.assertIn('ASAP2E2E_TERMINATION_GRACE=600s', env)
        # the image, then the container's args, last
        c = self.spec['containers'][0]
        n = len(c['args'])
        self.assertEqual(a[-n - 1:], [c['image']] + c['args'])

    def test_edit_sets_image_args_env(self):
        job = podrun.edit(copy.deepcopy(self.job), 'localhost/asap2-e2e:v1', ['run', 'perf'], {'ASAP2E2E_TERMINATION_GRACE': '300s', 'NEW': 'x'})
        c = job['spec']['template']['spec']['containers'][0]
        self.assertEqual(c['image'], 'localhost/asap2-e2e:v1')
        self.assertEqual(c['args'], ['run', 'perf'])
        env = {e['name']: e['value'] for e in c['env']}
        self.assertEqual(env['ASAP2E2E_TERMINATION_GRACE'], '300s')
        self.assertEqual(env['NEW'], 'x')

    def test_cronjob_and_indexed_job_templates(self):
        for name in ('cronjob.yaml', 'fleet-indexed-job.yaml'):
            for d in load(name):
                tpl = podrun.pod_template(d)
                if tpl is not None:
                    # what the Job controller puts on an Indexed Job's pod
                    meta = {'annotations': {'batch.kubernetes.io/job-completion-index': '2'},
                            'labels': {'batch.kubernetes.io/controller-uid': 'u-1'}}
                    a = podrun.podman_args(tpl['spec'], 'n', {
                        v['name']: '/d/' + v['name'] for v in tpl['spec'].get('volumes', [])}, '198.18.0.1:16443', '/x/sa', meta)
                    self.assertEqual(pairs(a, '--network'), ['host'], name)
                    if name == 'fleet-indexed-job.yaml':
                        env = pairs(a, '--env')
                        self.assertIn('JOB_COMPLETION_INDEX=2', env)
                        self.assertIn('ASAP2E2E_RUN_GROUP=u-1', env)
                        with self.assertRaisesRegex(podrun.Refused, r"env JOB_COMPLETION_INDEX: fieldRef .*job-completion-index'\]: not in the pod's metadata"):
                            podrun.podman_args(tpl['spec'], 'n', {
                                v['name']: '/d/' + v['name'] for v in tpl['spec'].get('volumes', [])}, '198.18.0.1:16443', '/x/sa')

    def test_refuses_every_problem_at_once(self):
        s = copy.deepcopy(self.spec)
        s['containers'][0]['env'].append({'name': 'SECRET', 'valueFrom': {'secretKeyRef': {'name': 'x', 'key': 'y'}}})
        s['containers'][0]['securityContext']['privileged'] = True
        s['volumes'].append({'name': 'host', 'hostPath': {'path': '/'}})
        s['containers'][0]['volumeMounts'].append({'name': 'host', 'mountPath': '/host'})
        s['containers'][0]['volumeMounts'].append({'name': 'nosuch', 'mountPath': '/n'})
        with self.assertRaises(podrun.Refused) as e:
            self.args(s)
        msg = str(e.exception)
        for want in ('env SECRET: valueFrom', 'a privileged container', 'volume host: kind hostPath',
                     'volumeMount nosuch: no such volume'):
            self.assertIn(want, msg)

    def test_refuses_a_pod_network_and_root(self):
        s = copy.deepcopy(self.spec)
        s['hostNetwork'] = False
        with self.assertRaisesRegex(podrun.Refused, 'hostNetwork'):
            self.args(s)
        s = copy.deepcopy(self.spec)
        s['securityContext']['runAsUser'] = 0
        with self.assertRaisesRegex(podrun.Refused, 'runAsNonRoot with runAsUser 0'):
            self.args(s)

    def test_secret_object(self):
        p = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'podrun.py')
        s = podrun.secret('openstack', 'cfg', [p])
        self.assertEqual(s['metadata']['namespace'], 'openstack')
        self.assertEqual(list(s['data']), ['podrun.py'])

    def test_object_path(self):
        self.assertEqual(podrun.object_path('Job', 'openstack', 'j'), '/apis/batch/v1/namespaces/openstack/jobs/j')
        with self.assertRaisesRegex(ValueError, 'no metadata.namespace'):
            podrun.object_path('Secret', None, 's')
        with self.assertRaisesRegex(ValueError, 'kind Deployment'):
            podrun.object_path('Deployment', 'x', 'y')


if __name__ == '__main__':
    unittest.main()
