"""The trial runner: scenarios x repetitions -> searches -> trials -> store.

Every trial is committed when it ends. Resume is exact: searches are
deterministic functions of the trial results they are given, so on resume
the stored trials of a repetition are replayed into the same search, in
order, and only the trials that are missing are run.
"""
from __future__ import annotations

import itertools
import signal
import time
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from . import __version__
from .campaign import Campaign, Scenario, build_campaign
from .errors import FwdbenchError
from .host import host_facts
from .intent import TrialIntent
from .progress import Progress
from .search.result import Measure
from .search_config import search_settings
from .store import ResultsStore, is_store_url, open_store
from .testbed import open_testbed
from .trial import TrialResult
from .units import parse_duration


class ResumeMismatch(FwdbenchError):
    pass


@dataclass
class RunSummary:
    store_path: Path
    scenarios: int
    repetitions_done: int
    trials_run: int
    trials_replayed: int
    interrupted_marked: int
    seconds: float
    lab_description: dict = field(default_factory=dict)


@contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM unwinds like Ctrl-C, so every teardown path runs."""
    def handler(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")
    old_term = signal.signal(signal.SIGTERM, handler)
    old_hup = signal.signal(signal.SIGHUP, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old_term)
        signal.signal(signal.SIGHUP, old_hup)


def default_store_path(campaign: Campaign, results_dir: Path = Path("results")) -> Path:
    return results_dir / f"{campaign.name}.sqlite"


def open_for_run(campaign: Campaign, store_path: Path | str) -> ResultsStore:
    """A store for a new run: a SQLite path or a PostgreSQL URL with no campaign yet."""
    if not is_store_url(store_path):
        store_path = Path(store_path)
        store_path.parent.mkdir(parents=True, exist_ok=True)
    st = open_store(store_path)
    if st.campaign() is not None:
        st.close()
        raise FwdbenchError(
            f"{st.path} already holds results of campaign "
            f"'{campaign.name}'; continue it with 'fwdbench run --resume {st.path}', "
            f"or write elsewhere with --out (or replace it with --force)")
    return st


def campaign_from_store(store: ResultsStore) -> Campaign:
    c = store.campaign()
    if c is None:
        raise FwdbenchError(f"{store.path} holds no campaign; start one with 'fwdbench run FILE'")
    import tomllib
    return build_campaign(tomllib.loads(c["config_text"]), c["source_path"], c["config_text"])


def register_scenarios(store: ResultsStore, campaign: Campaign, host: dict) -> dict[int, int]:
    """Write campaign + scenario rows (first run) or check them (resume); idx -> scenario id."""
    existing = store.scenarios()
    if not existing:
        cid = store.create_campaign(
            name=campaign.name, source_path=campaign.path, config_text=campaign.text,
            config=campaign.file.model_dump(mode="json"), host=host, tool_version=__version__)
        ids = {}
        for sc in campaign.scenarios:
            ids[sc.idx] = store.add_scenario(
                cid, sc.idx, sc.name, sc.dut.name, sc.dut.type, sc.dut.params,
                sc.profile.model_dump(mode="json"), sc.search, sc.axes, sc.max_load_pps)
        return ids
    if [s["name"] for s in existing] != [sc.name for sc in campaign.scenarios]:
        raise ResumeMismatch(f"{store.path}: the stored scenarios differ from the campaign's "
                             "expansion (fwdbench or the campaign changed); start a new run")
    return {s["idx"]: s["id"] for s in existing}


class ScenarioRun:
    """Runs trials of one scenario, replaying stored ones on resume."""

    def __init__(self, store: ResultsStore, scenario: Scenario, scenario_id: int, execute,
                 progress: Progress):
        self.store = store
        self.sc = scenario
        self.sid = scenario_id
        self.execute = execute          # trialrun.Execute
        self.progress = progress
        self.ran = 0
        self.replayed = 0

    def measure_for(self, rep: int) -> Measure:
        replay = self.store.done_trials(self.sid, rep)
        seq = itertools.count()

        def measure(duration_s: float, load_pps: float, intent: TrialIntent) -> TrialResult:
            k = next(seq)
            if k < len(replay):
                t = replay[k]
                if t.seq != k or abs(t.intended_load_pps - load_pps) > 1e-6 * max(1.0, load_pps) \
                        or abs(t.duration_s - duration_s) > 1e-9:
                    raise ResumeMismatch(
                        f"resume: trial {k} of '{self.sc.name}' repetition {rep} was "
                        f"{t.intended_load_pps:.0f} pps x {t.duration_s} s, the search now asks "
                        f"{load_pps:.0f} pps x {duration_s} s; the search is not replaying "
                        "deterministically; start a new run")
                self.replayed += 1
                return t.result
            return self._run(rep, k, intent, duration_s, load_pps)

        return measure

    def warmup_trial(self, load_pps: float) -> TrialResult:
        dur = max(parse_duration(self.sc.trial.warmup), 1.0)
        return self._run(-1, -1, TrialIntent.warmup("warm-up trial after DUT setup (CSIT)"),
                         dur, load_pps)

    def _run(self, rep: int, seq: int, intent: TrialIntent, duration_s: float,
             load_pps: float) -> TrialResult:
        tid = self.store.begin_trial(self.sid, rep, seq, intent, duration_s, load_pps)
        self.progress.trial_started(load_pps, duration_s, intent.kind)
        try:
            # CSIT-style latency trials run a latency stream beside the load.
            result = self.execute(duration_s, load_pps, (rep + 1) * 1_000_000 + seq + 1,
                                  intent.kind == "latency")
        except KeyboardInterrupt:
            # Left as 'running': the next resume marks it interrupted and reruns it.
            raise
        except Exception as e:
            self.store.fail_trial(tid, f"{type(e).__name__}: {e}")
            raise
        if result.sent_nothing:
            result.warnings.append(
                "the trial sent no packet (load x duration too small, or the generator "
                "failed to send): it measured nothing and counts as a total loss")
        self.store.finish_trial(tid, result)
        self.ran += 1
        self.progress.trial_done(result)
        return result


def run_campaign(campaign: Campaign, store: ResultsStore, *, progress: Progress,
                 resume: bool = False) -> RunSummary:
    from .search import run_search

    t0 = time.monotonic()
    interrupted = store.mark_interrupted() if resume else 0
    host = host_facts()
    ids = register_scenarios(store, campaign, host)
    reps = campaign.repetitions
    todo = [(sc, r) for sc in campaign.scenarios for r in range(reps)
            if not store.repetition_done(ids[sc.idx], r)]
    progress.start(campaign, todo, total=len(campaign.scenarios) * reps)
    ran = replayed = done = 0
    lab_desc: dict = {}
    with sigterm_as_interrupt(), ExitStack() as stack:
        backend = stack.enter_context(open_testbed(campaign))
        lab_desc = backend.describe()
        # Where the traffic ran (CPU placement, tuning, generator) is part of the host facts;
        # a resumed run records its own testbed under its start time.
        key = "testbed" if not resume else f"testbed_resumed_{int(time.time())}"
        store.update_host({key: lab_desc})
        by_scenario: dict[int, list[int]] = {}
        for sc, r in todo:
            by_scenario.setdefault(sc.idx, []).append(r)
        for note in backend.notes:
            progress.note(note)
        for name, why in backend.unavailable.items():
            progress.note(f"skipping dut {name!r} (optional, not available here): {why}")
        if lab_desc.get("memif_fallback"):
            progress.note(lab_desc["memif_fallback"] + "; rebuild with VPP_SRC=<VPP release "
                          "tarball> for memif")
        for sc in campaign.scenarios:
            if sc.idx not in by_scenario or sc.dut.name in backend.unavailable:
                continue
            sid = ids[sc.idx]
            with backend.scenario(sc) as (execute, describe):
                store.set_describe(sid, describe)
                run = ScenarioRun(store, sc, sid, execute, progress)
                if sc.trial.warmup_trial:
                    run.warmup_trial(_warmup_load(sc))
                for rep in by_scenario[sc.idx]:
                    progress.repetition(sc, rep)
                    settings = search_settings(sc.search)
                    result = run_search(settings, run.measure_for(rep), sc.max_load_pps)
                    store.save_results(sid, rep, goals_for_store(result))
                    done += 1
                ran += run.ran
                replayed += run.replayed
    progress.finish()
    return RunSummary(store.path, len(campaign.scenarios), done, ran, replayed, interrupted,
                      time.monotonic() - t0, lab_desc)


def goals_for_store(result) -> list[tuple[float | None, float | None, dict]]:
    """Search result -> result rows: (loss ratio, load found, record) per loss goal,
    plus the search record (loss ratio None)."""
    return [(g.loss_ratio, g.load_pps, g.to_dict()) for g in result.goals] + [
        (None, None, result.to_dict())]


def _warmup_load(sc: Scenario) -> float:
    loads = sc.search.get("loads_pps")
    return max(loads) if loads else 0.5 * sc.max_load_pps


def summary_lines(s: RunSummary) -> list[str]:
    return [
        f"results: {s.store_path}",
        f"repetitions finished: {s.repetitions_done}, trials run: {s.trials_run}"
        + (f", replayed from the store: {s.trials_replayed}" if s.trials_replayed else "")
        + (f", interrupted trials rerun: {s.interrupted_marked}" if s.interrupted_marked else ""),
        f"took {s.seconds:.1f} s",
    ]
