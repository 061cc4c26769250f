#!/usr/bin/env python3
"""gotest_failures.py LOG: what to run again of a failed `go test` (make test's, make race's log).

One line per package that failed, tab-separated:

    PACKAGE <TAB> RUN <TAB> WHY

RUN is a `go test -run` pattern naming the package's failed top-level tests (^(TestA|TestB)$), or
"-" when the whole package must run again: it panicked or timed out (the tests after the one that
did never ran), it did not build, or it failed naming no test. WHY says which, in words for a log.
Nothing is printed when no package failed. Exit status 2 when LOG cannot be read.

go test prints a package's output in one piece when the package ends, after `go vet`'s and before
the next package's, closed by its own line: "ok  <TAB>PKG<TAB>...", "FAIL<TAB>PKG<TAB>..." or
"FAIL<TAB>PKG [build failed]". The lines since the previous such line are that package's.
"""
import re
import sys

# A package's closing line: ok, FAIL or ? (no test files), a tab, the import path.
_CLOSING = re.compile(r'^(ok|FAIL|\?)\s*\t(\S+)(.*)$')
# A failed top-level test: at column 0 (a subtest's line is indented, a message's too).
_FAILED_TEST = re.compile(r'^--- FAIL: (\S+) \(')


def failures(lines):
    """[(package, run_pattern, why)] for every failed package, in the log's order."""
    out = []
    tests, panicked, timed_out, raced = [], False, False, False
    for line in lines:
        line = line.rstrip('\n')
        m = _FAILED_TEST.match(line)
        if m:
            if m.group(1) not in tests:
                tests.append(m.group(1))
            continue
        if line.startswith('panic: test timed out after'):
            timed_out = True
        elif line.startswith('panic: '):
            panicked = True
        elif line.startswith('WARNING: DATA RACE'):
            raced = True
        m = _CLOSING.match(line)
        if not m:
            continue
        status, pkg, rest = m.groups()
        if status == 'FAIL':
            out.append(_verdict(pkg, rest, tests, panicked, timed_out, raced))
        tests, panicked, timed_out, raced = [], False, False, False
    return out


def _verdict(pkg, rest, tests, panicked, timed_out, raced):
    if '[build failed]' in rest or '[setup failed]' in rest:
        return pkg, '', 'did not build' if 'build' in rest else 'setup failed'
    if timed_out:
        return pkg, '', 'timed out (go test -timeout): the tests after the one running never ran'
    if panicked:
        return pkg, '', 'panicked in %s: the tests after it never ran' % (tests[-1] if tests else 'its tests')
    if not tests:
        return pkg, '', 'failed naming no test'
    why = ', '.join(tests) + ' failed'
    if raced:
        why += ' (a data race reported)'
    return pkg, '^(' + '|'.join(re.escape(t) for t in tests) + ')$', why


def main(argv):
    if len(argv) != 2:
        print('usage: gotest_failures.py LOG', file=sys.stderr)
        return 2
    try:
        with open(argv[1], encoding='utf-8', errors='replace') as f:
            rows = failures(f)
    except OSError as e:
        print('gotest_failures.py: %s: %s' % (argv[1], e.strerror), file=sys.stderr)
        return 2
    for pkg, run, why in rows:
        # "-", not an empty field: a shell's read collapses two tabs into one.
        print('%s\t%s\t%s' % (pkg, run or '-', why))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
