"""The campaign's [search] table -> validated search settings of one scenario.

Campaign files may give loads and durations with units and without the
unit suffix of the settings' field names: ``loads = ["10%", "1Mpps"]`` for
``loads_pps``, ``trial_duration = "2s"`` for ``trial_duration_s``. The
conversion needs the scenario's frame size and maximum load, so it happens
per scenario, at plan time; the stored settings are plain pps and seconds.
"""
from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ValidationError

from .errors import CampaignError
from .text import shown
from .units import UnitError, parse_duration, parse_load, parse_trial_duration
from .validation import campaign_error

# settings that are a measured trial's duration: at least units.MIN_TRIAL_DURATION_S
TRIAL_DURATIONS = ("trial_duration_s", "initial_trial_duration_s", "final_trial_duration_s",
                   "verify_duration_s")


def _models() -> dict[str, type[BaseModel]]:
    from .search.settings import BinarySettings, LatencySettings, MlrSettings, SweepSettings
    return {"sweep": SweepSettings, "binary": BinarySettings, "mlr": MlrSettings,
            "latency": LatencySettings}


def _load(v, frame_size, max_pps: float) -> float:
    return parse_load(v, frame_size=frame_size, max_pps=max_pps)


def _step(v, frame_size, max_pps: float) -> float:
    """A load increment: not capped by the maximum load; '%' is a share of it."""
    if isinstance(v, str) and v.strip().endswith("%"):
        return parse_load(v, frame_size=frame_size, max_pps=max_pps)
    return parse_load(v, frame_size=frame_size, max_pps=float("inf"))


def _convert(table: dict[str, Any], model: type[BaseModel], where: str, frame_size,
             max_pps: float) -> dict[str, Any]:
    fields = model.model_fields
    out: dict[str, Any] = {}
    if not isinstance(table, dict):
        raise CampaignError(f"{where}: must be a table of settings, got {shown(table)}")
    for key, value in table.items():
        at = f"{where}.{key}"
        name = key
        if key not in fields and key + "_pps" in fields:
            name = key + "_pps"
        elif key not in fields and key + "_s" in fields:
            name = key + "_s"
        if name in out:
            raise CampaignError(f"{at}: given twice (as {key} and {name}); keep one")
        try:
            if name.endswith("_pps") and value is not None:
                conv = _step if name.startswith("step") else _load
                if isinstance(value, list):
                    if not value:
                        raise UnitError("the list is empty; give at least one load")
                    value = [conv(v, frame_size, max_pps) for v in value]
                else:
                    value = conv(value, frame_size, max_pps)
            elif name in TRIAL_DURATIONS and value is not None:
                value = parse_trial_duration(value)
            elif name.endswith("_s") and value is not None:
                value = parse_duration(value)
            elif key == "latency" and isinstance(value, dict):
                value = _convert(value, _models()["latency"], at, frame_size, max_pps)
        except UnitError as e:
            raise CampaignError(f"{at}: {e}") from None
        out[name] = value
    return out


def validate_search(search: dict[str, Any], tag: str, *, frame_size, max_pps: float,
                    trial) -> dict[str, Any]:
    """Return the scenario's search settings as a plain dict (stored, re-read on resume)."""
    models = _models()
    if not isinstance(search, dict):
        raise CampaignError(f"{tag}: search: must be a table of settings, got {shown(search)}")
    kind = search.get("type", "sweep")
    if not isinstance(kind, str) or kind not in models or kind == "latency":
        raise CampaignError(f"{tag}: search.type: {shown(kind)} is not one of sweep, binary, mlr")
    model = models[kind]
    conv = _convert(search, model, f"{tag}: search", frame_size, max_pps)
    conv["type"] = kind
    if conv.get("pdr_fractions") is not None:
        raise CampaignError(
            f"{tag}: search.pdr_fractions: a campaign sweep cannot take fractions of a PDR "
            "found elsewhere yet; give loads (e.g. [\"10%\", \"50%\"]) or use a binary/mlr "
            "search with a latency block for loads at fractions of its PDR")
    # The campaign's [trial] duration is the default trial duration of every search
    # that has one (MLRsearch keeps CSIT's own defaults).
    if "trial_duration_s" in model.model_fields and "trial_duration_s" not in conv:
        conv["trial_duration_s"] = parse_duration(trial.duration)
    try:
        settings = model.model_validate(conv)
    except ValidationError as e:
        raise campaign_error(e, model, context=tag, where="search") from None
    return settings.model_dump(mode="json")


def search_settings(d: dict[str, Any]):
    """Rebuild the settings model from its stored dict."""
    return _models()[d["type"]].model_validate(d)
