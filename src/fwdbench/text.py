"""User values in messages: shown shortened, and never read as markup.

A campaign file, a data file or a store can hold any text; an error that
echoes a 100 KB value or a value of ``[/bold]`` must still be one short,
literal line. Every message that shows a user value goes through
:func:`shown` (or :func:`clip` for free text); every terminal output goes
through :func:`console` (Rich with markup off, so ``[link=...]`` prints as
typed and never becomes a hyperlink).
"""
from __future__ import annotations

import sys
from typing import Any

SHOWN_CHARS = 60          # a value in a message: its repr, at most this long
LINE_CHARS = 1000         # any one line of an error message, at most this long


def shown(value: Any, limit: int = SHOWN_CHARS) -> str:
    """``repr(value)`` (TOML-style ``true``/``false`` for booleans), cut to
    ``limit`` characters with the length of what was left out."""
    if isinstance(value, bool):
        return str(value).lower()
    try:
        s = repr(value)
    except (ValueError, RecursionError):      # a huge int, a deep structure
        s = f"<{type(value).__name__}>"
    return clip(s, limit)


def clip(text: str, limit: int = LINE_CHARS) -> str:
    """``text`` cut in the middle to at most ``limit`` characters."""
    if len(text) <= limit:
        return text
    keep = max(limit - 30, 10)
    head, tail = keep * 2 // 3, keep // 3
    return f"{text[:head]}...({len(text) - head - tail} chars)...{text[len(text) - tail:]}"


def clip_lines(text: str, limit: int = LINE_CHARS) -> str:
    """Every line of a (multi-line) message cut to ``limit`` characters."""
    return "\n".join(clip(line, limit) for line in str(text).splitlines() or [""])


def console(*, stderr: bool = False, **kw: Any):
    """A Rich console that prints user text literally: no markup, no
    highlighting; wide tables when not on a terminal (no terminal to fit)."""
    from rich.console import Console
    stream = sys.stderr if stderr else sys.stdout
    kw.setdefault("width", None if stream.isatty() else 160)
    return Console(stderr=stderr, markup=False, highlight=False, **kw)
