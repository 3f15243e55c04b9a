"""The fwdbench command line."""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import List, Optional

import typer
from rich.text import Text

from . import __version__
from .errors import CampaignError, FwdbenchError
from .text import clip_lines, console

app = typer.Typer(add_completion=False, no_args_is_help=True, rich_markup_mode=None,
                  help="Benchmark software data planes (Linux, XDP, DPDK, vfwd): RFC 2544 "
                       "NDR/PDR searches, load sweeps, latency, CPU and energy, with "
                       "PASTRAMI's check of whether the numbers can be trusted.")
lab_app = typer.Typer(no_args_is_help=True, help="The local netns lab, by hand.")
app.add_typer(lab_app, name="lab")
# Wide tables when output goes to a file or pipe (no terminal to fit).
# User text (file names, campaign values, store contents) is printed as typed: no markup.
out = console()
err = console(stderr=True, soft_wrap=True)      # an error is one line, never wrapped


def error_text(e: object) -> Text:
    """'error: MESSAGE', the message literal and every line of it clipped."""
    return Text.assemble(("error:", "bold red"), " ", clip_lines(str(e)))


def warn(message: str) -> None:
    err.print(Text.assemble(("warning:", "yellow"), " ", clip_lines(message)))


def fail(e: Exception, code: int = 2) -> None:
    err.print(error_text(e))
    raise typer.Exit(code)


@app.command()
def version() -> None:
    """Print fwdbench's version (and fwdgen's, when built)."""
    line = f"fwdbench {__version__}"
    try:
        from .traffic import fwdgen
        line += f", fwdgen {fwdgen.check()['fwdgen_version']}"
    except Exception:
        line += ", fwdgen not built (run 'make native')"
    out.print(line, highlight=False)


@app.command()
def plan(campaign: Path = typer.Argument(..., help="campaign file (TOML)"),
         as_json: bool = typer.Option(False, "--json", help="print the matrix as JSON"),
         offline: bool = typer.Option(False, "--offline", help="do not contact the DUT host "
                                      "of an ssh testbed")) -> None:
    """Validate a campaign and print its expanded scenario matrix, trial count and
    estimated duration. Nothing is set up; for an ssh testbed the DUT host is reached
    and looked at (user, sudo, ports), unless --offline."""
    from .campaign import load_campaign
    from .plan import fmt_total, plan_dict, plan_table
    from .plan import long_campaign_warning
    try:
        c = load_campaign(campaign)
    except FwdbenchError as e:
        fail(e)
    for w in c.warnings:
        warn(w)
    found: list[str] = []
    if not offline:
        from .testbed import testbed_class
        try:
            found = testbed_class(c.file.testbed.type).probe(c)
        except FwdbenchError as e:
            fail(e, 3)
    if as_json:
        print(json.dumps(plan_dict(c) | ({"testbed_probe": found} if found else {}), indent=2))
        return
    table, trials, secs = plan_table(c)
    out.print(table)
    out.print(f"{len(c.scenarios)} scenarios x {c.repetitions} repetitions: "
              f"{fmt_total(trials, secs)} (estimate; adaptive searches vary)")
    if (w := long_campaign_warning(secs)):
        warn(w)
    for line in found:
        out.print(f"testbed: {line}", highlight=False, markup=False, emoji=False)


@app.command()
def run(campaign: Optional[Path] = typer.Argument(
            None, help="campaign file (TOML); omit with --resume"),
        resume: Optional[str] = typer.Option(
            None, "--resume", metavar="FILE|URL",
            help="continue the run stored in this results file or postgresql:// URL: "
                 "finished trials are kept, interrupted ones rerun"),
        out_path: Optional[str] = typer.Option(
            None, "--out", "-o", metavar="FILE|URL",
            help="results file (default results/<campaign>.sqlite), or a PostgreSQL URL "
                 "postgresql://USER@HOST/DB[?schema=NAME] (one campaign per schema)"),
        force: bool = typer.Option(False, "--force", help="replace an existing results file "
                                   "(PostgreSQL: drop fwdbench's tables in the schema)"),
        report: bool = typer.Option(True, "--report/--no-report",
                                    help="write the HTML report when the run ends"),
        quiet: bool = typer.Option(False, "--quiet", "-q", help="no progress output")) -> None:
    """Run a campaign: build the lab, configure each DUT, search, and store every
    trial as it ends. Ctrl-C stops cleanly; continue with --resume."""
    from .campaign import load_campaign
    from .progress import Progress
    from .runner import (campaign_from_store, default_store_path, open_for_run,
                         run_campaign, summary_lines)
    from .store import (NotAStore, display_target, is_store_url, open_store, remove_store,
                        store_target)
    if (campaign is None) == (resume is None):
        fail(FwdbenchError("give either a campaign file or --resume RESULTS.sqlite"))
    path = store_target(resume) if resume is not None else None
    try:
        if path is not None:
            if not is_store_url(path) and not path.exists():
                raise FwdbenchError(f"{resume}: no such results file")
            # a store, not a user's file: checked read-only, so nothing else is written
            open_store(path, read_only=True).close()
            store = open_store(path)
            c = campaign_from_store(store)
        else:
            c = load_campaign(campaign)
            for w in c.warnings:
                warn(w)
            path = store_target(out_path) if out_path else default_store_path(c)
            if force:
                remove_store(path)
            store = open_for_run(c, path)
        try:
            progress = Progress(quiet=quiet, trial_lines=c.file.testbed.type != "sim")
            summary = run_campaign(c, store, progress=progress,
                                   resume=resume is not None)
        finally:
            store.close()
    except KeyboardInterrupt:
        print(f"interrupted: finished trials are in the results file; continue with "
              f"'fwdbench run --resume {display_target(path)}'", file=sys.stderr)
        raise typer.Exit(130)
    except (CampaignError, NotAStore) as e:
        fail(e, 2)          # bad input: nothing was set up, nothing written
    except FwdbenchError as e:
        fail(e, 3)
    for line in summary_lines(summary):
        out.print(line, highlight=False)
    if report:
        _write_report(path, default_store_path(c).parent / f"{c.name}-report"
                      if is_store_url(path) else None)


def _write_report(db, dest: Optional[Path] = None) -> None:
    try:
        from .report.command import build_report, interrupted_note
        from .store import display_target
    except ImportError:
        return
    dest = dest or db.parent / (db.stem + "-report")
    try:
        index = build_report(db, dest)
    except KeyboardInterrupt:
        print(interrupted_note(display_target(db), dest), file=sys.stderr)
        raise typer.Exit(130)
    out.print(f"report: {index}", highlight=False)


@app.command()
def results(db: str = typer.Argument(..., help="results file (.sqlite) or postgresql:// URL"),
            as_json: bool = typer.Option(False, "--json", help="one JSON document for scripts"),
            trials: bool = typer.Option(False, "--trials", help="list every trial")) -> None:
    """Print what a campaign measured: results per scenario and repetition."""
    from .results_view import results_cmd
    from .store import store_target
    try:
        results_cmd(store_target(db), as_json=as_json, show_trials=trials, console=out)
    except FwdbenchError as e:
        fail(e)


@app.command("report")
def report_(db: str = typer.Argument(..., help="results file (.sqlite) or postgresql:// URL"),
            out_dir: Path = typer.Option(Path("out"), "--out", "-o", help="output directory")
            ) -> None:
    """Write the HTML report, figures (SVG, PDF) and data exports (CSV, Parquet)."""
    from .report.command import report_cmd
    from .store import store_target
    raise typer.Exit(report_cmd(store_target(db), out_dir))


@app.command()
def compare(a: str = typer.Argument(..., help="first results file or postgresql:// URL"),
            b: str = typer.Argument(..., help="second results file or postgresql:// URL"),
            out_dir: Path = typer.Option(Path("out-compare"), "--out", "-o")) -> None:
    """Compare two campaigns (two DUT versions, two kernels): ratios and significance."""
    from .report.command import compare_cmd
    from .store import store_target
    raise typer.Exit(compare_cmd(store_target(a), store_target(b), out_dir))


@app.command()
def analyze(files: List[str] = typer.Argument(..., help="PASTRAMI measurement files, CSV "
                                                        "(load,repetition,tx,rx), results files "
                                                        "or postgresql:// results URLs"),
            rule: str = typer.Option("paper", "--rule", help="PASTRAMI rule: 'paper' (default) "
                                     "or 'published-code' (the authors' notebook labels)"),
            as_json: bool = typer.Option(False, "--json", help="one JSON object per experiment"),
            out_dir: Optional[Path] = typer.Option(None, "--out", "-o",
                                                   help="write one figure per experiment here")
            ) -> None:
    """PDR@0.5%, saturation and PASTRAMI's GOOD/BAD verdict for load-loss data."""
    from .analysis.command import analyze_cmd
    from .store import store_target
    raise typer.Exit(analyze_cmd([store_target(f) for f in files], rule=rule, as_json=as_json, out_dir=out_dir))


@app.command()
def meters() -> None:
    """List the energy meters on this host and why the others are unavailable."""
    from .meters import meters_cmd
    raise typer.Exit(meters_cmd())


@lab_app.command("up")
def lab_up(gen_cpu: int = typer.Option(0, help="generator CPU"),
           dut_cpu: int = typer.Option(1, help="DUT CPU"),
           tuning: bool = typer.Option(True, "--tuning/--no-tuning",
                                       help="GRO + threaded NAPI pinned per side")) -> None:
    """Build a lab and leave it up (remove it with 'fwdbench lab down ID')."""
    from .lab import Lab, LabConfig
    try:
        lab = Lab.up(LabConfig(gen_cpu=gen_cpu, dut_cpu=dut_cpu, kernel_tuning=tuning,
                               persistent=True))
    except FwdbenchError as e:
        fail(e, 3)
    out.print(f"lab {lab.run_id}: namespaces {lab.tg_ns} and {lab.dut_ns}", highlight=False)


@lab_app.command("status")
def lab_status() -> None:
    """List fwdbench labs on this host: owner process, whether it is alive, namespaces."""
    import time as _time

    from rich.table import Table

    from .lab import list_labs
    labs = list_labs()
    if not labs:
        out.print("no fwdbench labs on this host")
        return
    t = Table()
    for col in ("id", "owner", "state", "namespaces", "age"):
        t.add_column(col)
    for lab in labs:
        if not lab.has_state:
            state = "unknown (no state file: not removed by --all)"
        elif lab.persistent:
            state = "persistent (fwdbench lab up)"
        else:
            state = "running" if lab.alive else "leftover of a crashed run"
        age = f"{_time.time() - lab.created:.0f}s" if lab.created else "-"
        t.add_row(lab.run_id, str(lab.owner_pid or "-"), state, " ".join(lab.namespaces) or "-",
                  age)
    out.print(t)


@lab_app.command("down")
def lab_down(run_id: Optional[str] = typer.Argument(None, help="lab id (see 'lab status')"),
             all_: bool = typer.Option(False, "--all", help="remove leftovers of crashed runs "
                                       "(labs whose owner process is gone), and only those")
             ) -> None:
    """Remove a lab, or with --all every leftover of a crashed run."""
    from .lab import down_all, down_lab
    if all_:
        from .dut.dpdk_host import sweep_stale_hugepages, sweep_stale_runtime_dirs
        removed = down_all()
        out.print(f"removed {len(removed)} leftover lab(s)" +
                  (": " + ", ".join(removed) if removed else ""), highlight=False)
        # testpmd's on this host: runtime dirs nobody locks, reservations of dead owners
        dirs, huge = sweep_stale_runtime_dirs(), sweep_stale_hugepages()
        if dirs or huge:
            out.print("removed what crashed testpmd runs left: "
                      + "; ".join(([f"DPDK runtime directories {', '.join(dirs)}"] if dirs else [])
                                  + ([f"the hugepages reserved for {', '.join(huge)}"]
                                     if huge else [])), highlight=False, markup=False)
    elif run_id:
        try:
            down_lab(run_id)
        except FwdbenchError as e:
            fail(e)
        out.print(f"removed lab {run_id}", highlight=False)
    else:
        fail(FwdbenchError("give a lab id or --all"))


def main() -> None:
    try:
        app()
    except FwdbenchError as e:
        err.print(error_text(e))
        sys.exit(2)


if __name__ == "__main__":
    main()
