"""Unit tests of lab/kube/ci-from-nothing.sh's decisions about the Kubernetes cache: whether the
build from nothing will become the cache (adopting, which .ci/run holds its background jobs on) and
whether adopt keeps a cache. The cache is a temporary directory with stand-in binaries; the stamps
are what lab/kube/build.sh --stamps says today's recipe builds, so no Go build runs."""
import os
import shutil
import subprocess
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, 'ci-from-nothing.sh')
BINARIES = ('etcd', 'kube-apiserver', 'kwok')


def todays_stamps():
    """NAME -> the stamp build.sh writes for it today (--stamps, less the toolchain at the end)."""
    out = subprocess.run(['bash', os.path.join(HERE, 'build.sh'), '--stamps'], check=True,
                         capture_output=True, text=True).stdout
    stamps = {}
    for line in out.splitlines():
        name, rest = line.split(' ', 1)
        stamps[name] = rest.rsplit(' ', 1)[0]
    return stamps


class CacheDecisions(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix='ci-from-nothing-test.')
        self.cache = os.path.join(self.tmp, 'cache')
        self.build_dir = os.path.join(self.tmp, 'build')  # adopting never reads it

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def fill(self, stamps, skip=()):
        os.makedirs(os.path.join(self.cache, 'bin'), exist_ok=True)
        os.makedirs(os.path.join(self.cache, 'stamp'), exist_ok=True)
        for name in BINARIES:
            if name in skip:
                continue
            path = os.path.join(self.cache, 'bin', name)
            with open(path, 'w') as f:
                f.write('#!/bin/sh\n')
            os.chmod(path, 0o755)
            with open(os.path.join(self.cache, 'stamp', name), 'w') as f:
                f.write(stamps[name] + '\n')

    def run_script(self, cmd):
        env = dict(os.environ, LAB_KUBE_CACHE=self.cache)
        return subprocess.run(['bash', SCRIPT, cmd, self.build_dir], env=env,
                              capture_output=True, text=True)

    def test_no_cache_adopts(self):
        r = self.run_script('adopting')
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn('lacks a binary', r.stdout)

    def test_a_missing_binary_adopts(self):
        self.fill(todays_stamps(), skip=('kube-apiserver',))
        r = self.run_script('adopting')
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn('lacks a binary', r.stdout)

    def test_a_full_current_cache_is_kept(self):
        self.fill(todays_stamps())
        r = self.run_script('adopting')
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertEqual(r.stdout, '')
        # adopt agrees: it keeps the cache and waits for no build (none was started here).
        r = self.run_script('adopt')
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("holds all three binaries of today's recipe", r.stdout)

    def test_a_stale_stamp_adopts_and_names_the_binary(self):
        stamps = todays_stamps()
        stamps['kwok'] = 'sigs.k8s.io/kwok@v0.0.1 recipe 000000000000'
        self.fill(stamps)
        r = self.run_script('adopting')
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("kwok: cached 'sigs.k8s.io/kwok@v0.0.1 recipe 000000000000'", r.stdout)
        self.assertNotIn('etcd:', r.stdout)
        # adopt would replace it: it waits for the build, and none was started here.
        r = self.run_script('adopt')
        self.assertNotEqual(r.returncode, 0)
        self.assertIn('no build was started', r.stderr)


if __name__ == '__main__':
    unittest.main()
