"""Prints docs/changelog.md from git's history: main's commit subjects (merges left out), grouped by day (newest
first) and by the area each subject names before its colon (alphabetically), in the log's order within an area.

    python scripts/changelog.py > docs/changelog.md
"""

from __future__ import annotations

import subprocess
import sys
from collections import defaultdict

HEADER = """# Changelog

fastvec has no releases yet. This is the history of `main`, from the commit subjects
(`git log --format='%ad %s' --date=short`), grouped by day and by the area each subject names;
the commit bodies say why and what was measured. Made by `python scripts/changelog.py`.
"""


def changelog(log: str) -> str:
    """The page for ``log``: lines of ``git log --no-merges --format='%ad %s' --date=short``, newest first."""
    days: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for line in log.splitlines():
        if not line.strip():
            continue
        day, _, subject = line.partition(" ")
        area, colon, text = subject.partition(": ")
        if not colon:  # no area named: the subject as it is
            area, text = "other", subject
        days[day][area.strip()].append(text.strip())
    out = [HEADER]
    for day in sorted(days, reverse=True):
        out.append(f"## {day}\n")
        for area in sorted(days[day]):
            out.append(f"- **{area}**")
            out.extend(f"    - {text}" for text in days[day][area])
        out.append("")
    return "\n".join(out)


def main() -> int:
    log = subprocess.run(
        ["git", "log", "--no-merges", "--format=%ad %s", "--date=short"], capture_output=True, text=True, check=True
    ).stdout
    sys.stdout.write(changelog(log))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
