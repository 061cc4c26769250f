#!/usr/bin/env python3
"""phase_why.py junit FILE | faults DIR: why a make lab phase failed, in a few lines for its summary.

make lab's summary is the end of a long log, and often all that a CI report keeps of it. A failed
phase's line there says which phase; these lines say which spec or fault row failed and what it said
(lab/job.sh's PHASE_WHY). Each mode prints at most LIMIT lines, nothing when it finds no failure;
exit status 2 when its input cannot be read, so the summary says the cause is unknown rather than
nothing.

  junit FILE  the failed, panicked, interrupted or timed-out specs of a Ginkgo JUnit report: the
              spec's name and the first line of its failure message (Ginkgo's "[FAILED]" text).
  faults DIR  the failed rows of suites/faults/run.sh's DIR/matrix.json: the row, its outcome and
              leftovers as the matrix table has them, and from DIR/go-test.log what the row said
              last and the harness's ERROR line it quoted; rows go test failed that the matrix never
              recorded (a timeout, a panic) from DIR/go-test.log alone.
"""
import json
import os
import re
import sys
import xml.etree.ElementTree as ET

LIMIT = 8
WIDTH = 200
# Ginkgo's testcase status values that are not a pass or a skip.
_BAD = {'failed', 'panicked', 'interrupted', 'timedout', 'aborted'}
_FAILED_ROW = re.compile(r'^\s*--- FAIL: (TestFaults/\S+) \(([\d.]+)s\)')
# go test -v's header of the lines that follow: whose they are.
_WHOSE = re.compile(r'^=== (?:RUN|CONT|NAME|PAUSE)\s+(\S+)')
# A message of t.Log/t.Error and kin: four spaces, file:line, then the text (its continuation lines
# are indented by eight).
_MESSAGE = re.compile(r'^    (\w+\.go:\d+: .*)')


def _cut(s, width=WIDTH):
    s = ' '.join(s.split())
    return s if len(s) <= width else s[:width - 1] + '…'


def _first_line(message):
    """The message's first line of its own (not Gomega's wrapper); a line ending in ':' with the next."""
    lines = [l.strip() for l in message.splitlines()]
    lines = [l.removeprefix('[FAILED] ') for l in lines if l and not l.startswith(('<*', '{', '}', 's: '))]
    lines = [l for l in lines if l != 'Expected success, but got an error:']
    if not lines:
        return ''
    if lines[0].endswith(':') and len(lines) > 1:
        return lines[0] + ' ' + lines[1]
    return lines[0]


def junit(path):
    """[line] for each spec of the JUnit report at path that did not pass (nor was skipped)."""
    root = ET.parse(path).getroot()
    out = []
    for case in root.iter('testcase'):
        status = case.get('status', '')
        failure = case.find('failure')
        if failure is None:
            failure = case.find('error')
        if status not in _BAD and failure is None:
            continue
        name = case.get('name', '?')
        msg = ''
        if failure is not None:
            msg = _first_line(failure.get('message') or failure.text or '')
        out.append(_cut(f'{status or "failed"}: {name}' + (f': {msg}' if msg else '')))
    return out


def row_messages(lines):
    """{row: [(message, [continuation lines])]} of go test -v's log lines, by the header before them.

    go test -v streams each t.Log/t.Error as it is made, under a "=== NAME row" line when another
    test printed last; a failure's message is not marked apart from a log's, so what a row said
    last, and any harness ERROR line it quoted, stand for why it failed.
    """
    said, whose = {}, None
    for line in lines:
        line = line.rstrip('\n')
        m = _WHOSE.match(line)
        if m:
            whose = m.group(1)
            continue
        if line.lstrip().startswith('--- '):
            whose = None
            continue
        m = _MESSAGE.match(line)
        if m and whose:
            said.setdefault(whose, []).append((m.group(1), []))
        elif whose and line.startswith('        ') and said.get(whose):
            said[whose][-1][1].append(line.strip())
    return said


def _why_row(messages):
    """At most two lines: the row's last message, and the first harness ERROR line it quoted."""
    if not messages:
        return []
    out = ['  ' + _cut(messages[-1][0])]
    for _, cont in messages:
        for line in cont:
            if 'ERROR: ' in line:
                out.append('  ' + _cut(line[line.index('ERROR: '):]))
                return out
    return out


def faults(directory):
    """[line] for each failed row of the fault matrix written into directory."""
    out, recorded = [], set()
    said = {}
    log = os.path.join(directory, 'go-test.log')
    if os.path.exists(log):
        with open(log, encoding='utf-8', errors='replace') as f:
            said = row_messages(f)
    matrix = os.path.join(directory, 'matrix.json')
    if os.path.exists(matrix):
        with open(matrix, encoding='utf-8') as f:
            rows = json.load(f) or []
        for row in rows:
            recorded.add(row.get('name'))
            if row.get('passed'):
                continue
            line = f'row {row.get("name")} ({row.get("seconds", 0):.0f} s): {row.get("outcome") or "no outcome recorded"}'
            # The matrix writes "none" per run of the row ("none; none" for two runs).
            if row.get('leftovers') and set(row['leftovers'].split('; ')) != {'none'}:
                line += f'; leftovers: {row["leftovers"]}'
            out.append(_cut(line))
            out.extend(_why_row(said.get(row.get('name'))))
    panic = ''
    if os.path.exists(log):
        with open(log, encoding='utf-8', errors='replace') as f:
            for line in f:
                m = _FAILED_ROW.match(line)
                if m and m.group(1) not in recorded:
                    recorded.add(m.group(1))
                    out.append(f'row {m.group(1)} failed after {float(m.group(2)):.0f} s without a matrix line (see {log})')
                    out.extend(_why_row(said.get(m.group(1))))
                elif not out and line.startswith('panic: '):
                    # go test's own end (a timeout, a panic outside any row): no row says it.
                    panic = _cut(line.strip())
        if not out and panic:
            out.append(panic)
    elif not os.path.exists(matrix):
        raise FileNotFoundError(f'{directory}: neither matrix.json nor go-test.log')
    return out


def main(argv):
    if len(argv) != 3 or argv[1] not in ('junit', 'faults'):
        print(__doc__.strip().splitlines()[0], file=sys.stderr)
        return 2
    try:
        lines = junit(argv[2]) if argv[1] == 'junit' else faults(argv[2])
    except (OSError, ET.ParseError, ValueError) as e:
        print(f'cause not read: {e}')
        return 2
    for line in lines[:LIMIT]:
        print(line)
    if len(lines) > LIMIT:
        print(f'... and {len(lines) - LIMIT} more')
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
