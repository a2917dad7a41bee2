#!/usr/bin/env python3
"""Fails when a Catch2 test's name holds a character ctest cannot carry in a test name.

ctest takes the names Catch2 lists as a CMake list: a ';' splits one name into two that match
no test, so the test fails only in the tree where it is discovered, not where it was written.
Usage: test_names_check.py ROOT (the source tree)."""
import pathlib
import re
import sys

NAME = re.compile(r'TEST_CASE\(\s*"((?:[^"\\]|\\.)*)"', re.S)


def main():
    root = pathlib.Path(sys.argv[1])
    bad = []
    for path in sorted(root.rglob("*.cc")):
        parts = path.relative_to(root).parts
        if any(part.startswith("build") or part == "node_modules" for part in parts):
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        for match in NAME.finditer(text):
            if ";" in match.group(1):
                line = text.count("\n", 0, match.start()) + 1
                bad.append(f"{path.relative_to(root)}:{line}: {match.group(1)}")
    for entry in bad:
        print(f"test name holds ';' (ctest splits it in two): {entry}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
