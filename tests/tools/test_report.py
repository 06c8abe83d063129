#!/usr/bin/env python3
"""The end of `make test` and `make test-deep`: the tier's total time and its ten slowest
tests, from cargo-nextest's JUnit report (.config/nextest.toml). Prints what it knows and
exits 0 whatever happened: the tier's own status is the make target's.

    test_report.py --tier gate --start EPOCH --status N --junit PATH [--slowest 10]
"""

import argparse
import os
import sys
import time
import xml.etree.ElementTree as ET


def duration(seconds):
    """`27 min 13 s`, or `41.2 s` under a minute."""
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, rest = divmod(int(round(seconds)), 60)
    return f"{minutes} min {rest} s"


def cases(junit):
    """(suite, name, seconds, outcome) of each test case of the report."""
    root = ET.parse(junit).getroot()
    suites = [root] if root.tag == "testsuite" else root.iter("testsuite")
    for suite in suites:
        for case in suite.iter("testcase"):
            if case.find("failure") is not None or case.find("error") is not None:
                outcome = "FAILED"
            elif case.find("skipped") is not None:
                outcome = "skipped"
            else:
                outcome = "passed"
            seconds = float(case.get("time") or 0.0)
            yield suite.get("name", ""), case.get("name", ""), seconds, outcome


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tier", required=True, choices=["gate", "deep"])
    parser.add_argument("--start", required=True, type=int, help="when the tier began (epoch s)")
    parser.add_argument("--status", required=True, type=int, help="the tier's exit status")
    parser.add_argument("--junit", required=True, help="cargo-nextest's JUnit report")
    parser.add_argument("--slowest", type=int, default=10)
    args = parser.parse_args()

    command = {"gate": "make test", "deep": "make test-deep"}[args.tier]
    took = time.time() - args.start
    verdict = "passed" if args.status == 0 else f"FAILED (exit {args.status})"
    print()
    print(f"{command} ({args.tier} tier): {verdict} in {duration(took)}")

    # A report older than this run is an earlier run's: the tests did not run this time.
    fresh = os.path.exists(args.junit) and os.path.getmtime(args.junit) >= args.start
    if not fresh:
        print(f"  no test results from this run ({args.junit} not written): it stopped before the tests")
        return 0
    try:
        found = list(cases(args.junit))
    except (ET.ParseError, OSError) as err:
        print(f"  the test report {args.junit} could not be read: {err}")
        return 0
    ran = [c for c in found if c[3] != "skipped"]
    failed = [c for c in found if c[3] == "FAILED"]
    busy = sum(c[2] for c in ran)
    print(
        f"  {len(ran)} tests, {len(failed)} failed; {duration(busy)} of test time"
        f" over the run's {duration(took)}"
    )
    for suite, name, seconds, _ in failed:
        print(f"  FAILED  {suite} {name}")
    print(f"  the {min(args.slowest, len(ran))} slowest:")
    for suite, name, seconds, outcome in sorted(ran, key=lambda c: -c[2])[: args.slowest]:
        mark = "" if outcome == "passed" else f"  ({outcome})"
        print(f"  {seconds:8.1f} s  {suite} {name}{mark}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
