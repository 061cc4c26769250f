"""Unit tests of phase_why (make lab's summary: why a phase failed) on recorded output.

The JUnit reports are Ginkgo's, recorded on the lab (tools/checkrun/testdata/README); the fault
matrix's files are suites/faults/run.sh's, recorded on the lab (lab/lib/testdata/faults/README).
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import phase_why  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def checkrun(name):
    return os.path.join(ROOT, 'tools', 'checkrun', 'testdata', name, 'junit.xml')


class JUnit(unittest.TestCase):
    def test_a_failed_spec_with_the_cause_gomega_wrapped(self):
        got = phase_why.junit(checkrun('refused'))
        self.assertEqual(len(got), 1)
        # The spec, then the error's own first line with the line after its colon: not Gomega's
        # "Expected success, but got an error:" nor the error's type.
        self.assertTrue(got[0].startswith('failed: [It] Complementary offload checks proves the traffic is offloaded'), got[0])
        self.assertIn(': expected path asap2 (offloaded), but 12 of 12 checks disagree: representor: software', got[0])
        self.assertNotIn('Expected success', got[0])
        self.assertNotIn('errors.errorString', got[0])
        self.assertLessEqual(len(got[0]), phase_why.WIDTH)

    def test_passed_and_skipped_specs_say_nothing(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, 'junit.xml')
            with open(checkrun('refused'), encoding='utf-8') as f:
                text = f.read()
            # The same report with its failed spec marked passed and its failure removed.
            start = text.index('<failure ')
            text = text[:start] + text[text.index('</failure>') + len('</failure>'):]
            with open(path, 'w', encoding='utf-8') as f:
                f.write(text.replace('status="failed"', 'status="passed"'))
            self.assertEqual(phase_why.junit(path), [])

    def test_an_unreadable_report_is_said_not_silent(self):
        with tempfile.TemporaryDirectory() as d:
            out = subprocess.run([sys.executable, os.path.join(HERE, 'phase_why.py'), 'junit', os.path.join(d, 'none.xml')],
                                 capture_output=True, text=True)
            self.assertEqual(out.returncode, 2)
            self.assertIn('cause not read', out.stdout)
            self.assertIn('none.xml', out.stdout)


def recorded_faults():
    return os.path.join(HERE, 'testdata', 'faults')


class Faults(unittest.TestCase):
    def test_the_failed_row_what_it_said_and_the_harness_error_it_quoted(self):
        got = phase_why.faults(recorded_faults())
        # The four rows that passed say nothing.
        self.assertEqual(got, [
            'row TestFaults/hypervisor/ssh-frozen-in-checks (1 s): no outcome recorded',
            '  vanish_test.go:133: the phase never began: harness.log did not match "checks start .* after the tcp flow" within 8m0s (exited: true)',
            '  ERROR: cloud clients: cloud: tenant entry "asap2lab": authenticate at http://198.18.0.1:5000/v3: Post "http://198.18.0.1:5000/v3/auth/tokens": EOF',
        ])

    def test_messages_belong_to_the_row_named_before_them(self):
        with open(os.path.join(recorded_faults(), 'go-test.log'), encoding='utf-8') as f:
            said = phase_why.row_messages(f)
        # Streamed side by side: each row's lines under its own === NAME/CONT header.
        self.assertTrue(said['TestFaults/datapath/network-cut'][0][0].startswith('vanish_test.go:68: br-int of every hypervisor'))
        self.assertTrue(any('data port deleted' in m for m, _ in said['TestFaults/datapath/port-deleted']))
        self.assertFalse(any('data port deleted' in m for m, _ in said['TestFaults/datapath/network-cut']))

    def test_a_row_the_matrix_never_recorded_comes_from_the_log(self):
        # A row that timed out or panicked has no matrix line: the same run without matrix.json.
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(recorded_faults(), 'go-test.log'), encoding='utf-8') as f:
                log = f.read()
            with open(os.path.join(d, 'go-test.log'), 'w', encoding='utf-8') as f:
                f.write(log)
            got = phase_why.faults(d)
        self.assertEqual(len(got), 3)
        self.assertTrue(got[0].startswith('row TestFaults/hypervisor/ssh-frozen-in-checks failed after 1 s without a matrix line'), got[0])
        self.assertIn('EOF', got[2])

    def test_leftovers_are_named_unless_every_run_left_none(self):
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(recorded_faults(), 'matrix.json'), encoding='utf-8') as f:
                rows = json.load(f)
            failed = [r for r in rows if not r['passed']][0]
            failed['leftovers'] = 'none; 2 ports (asap2e2e-r1-vm0-data, asap2e2e-r1-vm1-data)'
            with open(os.path.join(d, 'matrix.json'), 'w', encoding='utf-8') as f:
                json.dump(rows, f)
            self.assertIn('; leftovers: none; 2 ports (asap2e2e-r1-vm0-data', phase_why.faults(d)[0])
            failed['leftovers'] = 'none; none'
            with open(os.path.join(d, 'matrix.json'), 'w', encoding='utf-8') as f:
                json.dump(rows, f)
            self.assertNotIn('leftovers', phase_why.faults(d)[0])

    def test_a_go_test_timeout_outside_every_row_is_said(self):
        # go test's -timeout panics with no row's --- FAIL line and no matrix.json written.
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(recorded_faults(), 'go-test.log'), encoding='utf-8') as f:
                log = [l for l in f if '--- FAIL' not in l]
            log.append('panic: test timed out after 40m0s\n')
            with open(os.path.join(d, 'go-test.log'), 'w', encoding='utf-8') as f:
                f.writelines(log)
            self.assertEqual(phase_why.faults(d), ['panic: test timed out after 40m0s'])

    def test_nothing_to_read_is_an_error(self):
        with tempfile.TemporaryDirectory() as d:
            with self.assertRaises(FileNotFoundError):
                phase_why.faults(d)

    def test_the_summary_is_bounded(self):
        lines = [f'row {i}' for i in range(phase_why.LIMIT + 3)]
        out = subprocess.run([sys.executable, '-c', 'import sys; sys.path.insert(0, sys.argv[1]); import phase_why; '
                              'phase_why.faults = lambda d: [f"row {i}" for i in range(phase_why.LIMIT + 3)]; '
                              'sys.exit(phase_why.main(["x", "faults", "d"]))', HERE], capture_output=True, text=True)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(out.stdout.splitlines(), lines[:phase_why.LIMIT] + ['... and 3 more'])


if __name__ == '__main__':
    unittest.main()
