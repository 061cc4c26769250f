"""Unit tests of gotest_failures on real `go test` output (lab/lib/testdata/gotest/README)."""
import os
import re
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import gotest_failures  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def recorded(name):
    with open(os.path.join(HERE, 'testdata', 'gotest', name)) as f:
        return f.readlines()


class RecordedMakeTest(unittest.TestCase):
    def test_each_failed_package_once_with_what_to_run(self):
        got = gotest_failures.failures(recorded('make-test-go1.26.txt'))
        self.assertEqual([g[0] for g in got], [
            'example.com/gtl/broken', 'example.com/gtl/fail', 'example.com/gtl/panicky', 'example.com/gtl/slow'])
        by_pkg = {pkg: (run, why) for pkg, run, why in got}
        # Only the failed top-level tests: not TestGamma (passed), not the subtest, not a message
        # that quotes "--- FAIL:" (TestBeta's, indented).
        self.assertEqual(by_pkg['example.com/gtl/fail'][0], '^(TestAlpha|TestBeta|TestDelta_x)$')
        self.assertEqual(by_pkg['example.com/gtl/fail'][1], 'TestAlpha, TestBeta, TestDelta_x failed')
        # A panic ends the package: TestNeverRan did not run, so all of it runs again.
        self.assertEqual(by_pkg['example.com/gtl/panicky'][0], '')
        self.assertIn('panicked in TestBoom', by_pkg['example.com/gtl/panicky'][1])
        self.assertEqual(by_pkg['example.com/gtl/slow'][0], '')
        self.assertIn('timed out', by_pkg['example.com/gtl/slow'][1])
        self.assertEqual(by_pkg['example.com/gtl/broken'], ('', 'did not build'))

    def test_patterns_select_exactly_the_named_tests(self):
        # The pattern is go test's -run: one level, anchored, so TestAlpha does not bring
        # TestAlphaBeta along. Checked with Python's re, whose syntax these patterns share with RE2.
        run = gotest_failures.failures(recorded('make-test-go1.26.txt'))[1][1]
        for name, want in [('TestAlpha', True), ('TestDelta_x', True), ('TestAlphaBeta', False),
                           ('TestGamma', False), ('XTestBeta', False)]:
            self.assertEqual(bool(re.search(run, name)), want, name)


class RecordedRace(unittest.TestCase):
    def test_race_named(self):
        got = gotest_failures.failures(recorded('race-go1.26.txt'))
        self.assertEqual(got, [('example.com/race/r', '^(TestRacy)$', 'TestRacy failed (a data race reported)')])


class Edges(unittest.TestCase):
    def test_nothing_failed(self):
        self.assertEqual(gotest_failures.failures(['ok  \texample.com/a\t0.1s\n', '?   \texample.com/b\t[no test files]\n']), [])

    def test_failed_without_a_test_line(self):
        # e.g. TestMain's os.Exit(1)
        self.assertEqual(gotest_failures.failures(['FAIL\n', 'FAIL\texample.com/a\t0.1s\n']),
                         [('example.com/a', '', 'failed naming no test')])

    def test_a_package_does_not_inherit_the_previous_ones_failures(self):
        lines = ['--- FAIL: TestA (0.1s)\n', 'FAIL\n', 'FAIL\texample.com/a\t0.1s\n',
                 'ok  \texample.com/b\t0.1s\n', 'FAIL\texample.com/c\t0.1s\n']
        self.assertEqual(gotest_failures.failures(lines), [
            ('example.com/a', '^(TestA)$', 'TestA failed'), ('example.com/c', '', 'failed naming no test')])

    def test_printed_for_a_shell_read(self):
        # Three tab-separated fields, the whole package as "-": bash's read would collapse an empty one.
        p = subprocess.run([sys.executable, os.path.join(HERE, 'gotest_failures.py'),
                            os.path.join(HERE, 'testdata', 'gotest', 'make-test-go1.26.txt')],
                           capture_output=True, text=True, check=True)
        rows = [line.split('\t') for line in p.stdout.splitlines()]
        self.assertEqual([len(r) for r in rows], [3, 3, 3, 3])
        self.assertEqual([r[1] for r in rows], ['-', '^(TestAlpha|TestBeta|TestDelta_x)$', '-', '-'])

    def test_unreadable_log_named(self):
        p = subprocess.run([sys.executable, os.path.join(HERE, 'gotest_failures.py'), '/nonexistent/test.log'],
                           capture_output=True, text=True)
        self.assertEqual(p.returncode, 2)
        self.assertIn('/nonexistent/test.log', p.stderr)


if __name__ == '__main__':
    unittest.main()
