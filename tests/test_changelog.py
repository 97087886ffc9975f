"""scripts/changelog.py, which makes docs/changelog.md from main's commit subjects."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _script():
    spec = importlib.util.spec_from_file_location("changelog", ROOT / "scripts" / "changelog.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_subjects_grouped_by_day_then_area_in_log_order():
    log = "\n".join(
        [
            "2026-12-06 core: the newer core change",
            "2026-12-06 bench: a bench change",
            "2026-12-06 core: the older core change",
            "2026-12-05 a subject without an area",
            "2026-12-05 signal tests: an area of two words",
        ]
    )
    page = _script().changelog(log)
    assert page.startswith("# Changelog\n")
    body = page[page.index("## ") :].splitlines()
    assert [line for line in body if line] == [
        "## 2026-12-06",
        "- **bench**",
        "    - a bench change",
        "- **core**",
        "    - the newer core change",
        "    - the older core change",
        "## 2026-12-05",
        "- **other**",
        "    - a subject without an area",
        "- **signal tests**",
        "    - an area of two words",
    ]


def test_the_page_in_the_docs_is_the_scripts():
    """docs/changelog.md as the script writes it: its header, and days newest first."""
    page = (ROOT / "docs" / "changelog.md").read_text()
    assert page.startswith(_script().HEADER)
    days = [line[3:] for line in page.splitlines() if line.startswith("## ")]
    assert days == sorted(days, reverse=True) and days
