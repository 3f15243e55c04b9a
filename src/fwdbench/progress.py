"""Live progress of a run: scenario i/N, current load, last loss ratio, ETA.

On a terminal it is a rich progress bar; otherwise one plain line per
repetition and per trial (no colour, no control characters).
"""
from __future__ import annotations

import sys
import time

from rich.console import Console
from rich.progress import (BarColumn, MofNCompleteColumn, Progress as RichProgress,
                           TextColumn, TimeElapsedColumn, TimeRemainingColumn)

from .units import fmt_pps


class Progress:
    def __init__(self, console: Console | None = None, quiet: bool = False,
                 trial_lines: bool = True):
        from .text import console as make_console
        self.console = console or make_console(stderr=True)
        self.trial_lines = trial_lines
        self.live = self.console.is_terminal and not quiet
        self.quiet = quiet
        self._bar: RichProgress | None = None
        self._task = None
        self.scenario_label = ""
        self.last = ""
        self.n_done = 0

    def start(self, campaign, todo, total: int) -> None:
        self.total = total
        already = total - len(todo)
        if self.live:
            self._bar = RichProgress(
                TextColumn("{task.fields[scenario]}", markup=False, style="bold"), BarColumn(),
                MofNCompleteColumn(), TextColumn("{task.fields[status]}", markup=False),
                TimeElapsedColumn(), TimeRemainingColumn(),
                console=self.console, transient=False)
            self._bar.start()
            self._task = self._bar.add_task("run", total=total, completed=already,
                                            scenario="", status="")
        elif not self.quiet:
            print(f"campaign {campaign.name}: {total} repetitions, {already} already done",
                  file=sys.stderr, flush=True)
        self._t0 = time.monotonic()

    def repetition(self, sc, rep: int) -> None:
        self.scenario_label = f"[{sc.idx + 1}] {sc.name} rep {rep + 1}"
        if self._bar is not None:
            if self.n_done:
                self._bar.advance(self._task)
            self._bar.update(self._task, scenario=self.scenario_label)
        elif not self.quiet:
            print(f"scenario {self.scenario_label}", file=sys.stderr, flush=True)
        self.n_done += 1

    def note(self, text: str) -> None:
        """One line for the user (plain text: never markup)."""
        if self.quiet:
            return
        if self._bar is not None:
            self.console.print(text, markup=False, highlight=False)
        else:
            print(text, file=sys.stderr, flush=True)

    def trial_started(self, load_pps: float, duration_s: float, kind: str) -> None:
        status = f"{kind} {fmt_pps(load_pps)} x {duration_s:g}s  last: {self.last}"
        if self._bar is not None:
            self._bar.update(self._task, status=status)

    def trial_done(self, result) -> None:
        self.last = f"loss {result.loss_ratio:.3%}"
        if self._bar is None and not self.quiet and self.trial_lines:
            print(f"  trial {fmt_pps(result.intended_load_pps)} x {result.duration_s:g}s: "
                  f"tx {result.tx_packets} rx {result.rx_packets} loss {result.loss_ratio:.4%}"
                  + (" (generator-limited)" if result.generator_limited else ""),
                  file=sys.stderr, flush=True)

    def finish(self) -> None:
        if self._bar is not None:
            self._bar.update(self._task, completed=self.total, status="done")
            self._bar.stop()
            self._bar = None
