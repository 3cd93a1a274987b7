"""A griffe extension that renders learnloop's docstrings as Markdown for the API reference.

learnloop's docstrings are written for ``pydoc`` and doctest: reST-style
roles (``:func:`name```), double-backtick literals, ``::`` literal blocks and
doctest examples (``>>>``). Markdown would read a doctest as a block quote;
this extension fences doctest examples and literal blocks as code and turns
roles into code spans. It changes nothing in the source.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

_ROLE = re.compile(r":(?:func|meth|class|mod|attr|data|obj|exc|const|math|ref|py:\w+):`~?([^`]+)`")


def _short(target: str) -> str:
    return target.split("<")[-1].rstrip(">").strip() if "<" in target else target


def _roles(line: str) -> str:
    return _ROLE.sub(lambda m: f"`{_short(m.group(1))}`", line)


def to_markdown(text: str) -> str:
    r"""Fence doctest examples and ``::`` literal blocks; roles become code spans.

    >>> to_markdown("Example::\n\n    x = 1\n\nSee :func:`~a.b.c`.").splitlines()
    ['Example:', '', '```python', 'x = 1', '```', '', 'See `a.b.c`.']
    >>> to_markdown(">" * 3 + " 1 + 1\n2").splitlines()
    ['```pycon', '>>> 1 + 1', '2', '```']
    """
    lines = text.splitlines()
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        stripped = line.lstrip()
        if stripped.startswith(">>>"):
            indent = line[: len(line) - len(stripped)]
            block = []
            while i < len(lines) and lines[i].strip():
                block.append(lines[i][len(indent):] if lines[i].startswith(indent) else lines[i].strip())
                i += 1
            out += [f"{indent}```pycon", *(f"{indent}{b}" for b in block), f"{indent}```"]
            continue
        if line.rstrip().endswith("::") and not stripped.startswith(".."):
            head = line.rstrip()[:-1]
            out.append(_roles(head[:-1] if head.endswith(" :") else head))
            i += 1
            while i < len(lines) and not lines[i].strip():
                out.append("")
                i += 1
            base = len(line) - len(stripped)
            block = []
            while i < len(lines) and (not lines[i].strip() or len(lines[i]) - len(lines[i].lstrip()) > base):
                block.append(lines[i])
                i += 1
            while block and not block[-1].strip():
                block.pop()
            if block:
                cut = min(len(b) - len(b.lstrip()) for b in block if b.strip())
                pad = " " * base
                out += [f"{pad}```python", *(f"{pad}{b[cut:]}" if b.strip() else "" for b in block), f"{pad}```", ""]
            continue
        out.append(_roles(line))
        i += 1
    return "\n".join(out)


class ReSTDocstrings(griffe.Extension):
    """Rewrite every docstring with :func:`to_markdown` once the object tree is loaded."""

    def on_object(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is None or obj.is_alias or obj.extra["learnloop"].get("markdown"):
            return
        obj.docstring.value = to_markdown(obj.docstring.value)
        obj.extra["learnloop"]["markdown"] = True
