"""A Griffe extension for the API reference: fastvec's docstrings are reST-flavoured, with doctests
outside any "Examples:" section, which Markdown would read as block quotes (and `x["a"]["b"]` in them as
a link). Fence each doctest block as `pycon` so it renders as code."""

from __future__ import annotations

from typing import Any

import griffe


def _fence_doctests(text: str) -> str:
    out: list[str] = []
    in_doctest = False
    for line in text.split("\n"):
        starts = line.lstrip().startswith(">>>")
        if starts and not in_doctest:
            out.append("```pycon")
            in_doctest = True
        elif in_doctest and not line.strip():
            out.append("```")
            in_doctest = False
        out.append(line)
    if in_doctest:
        out.append("```")
    return "\n".join(out)


class FenceDoctests(griffe.Extension):
    def on_object(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = _fence_doctests(obj.docstring.value)
