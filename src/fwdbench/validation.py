"""The one way a pydantic ``ValidationError`` becomes a :class:`CampaignError`.

Every line of the message names, in this order, the file (when known), the
context (e.g. the scenario), the full field path and what was wrong, then
what is allowed::

    c.toml: campaign.repetitons: unknown key; did you mean 'repetitions'? (allowed keys: ...)
    c.toml: scenario 3 (dut=a, profile=p64): dut[0].params.model: 'perfect' is not allowed;
        allowed values: 'ideal', 'realistic', 'trashing', 'noisy'
    dut[2].params.routes: 0 is too small; allowed: 1..1048576

The allowed keys, values and bounds come from the model that was validated,
so they never go stale.
"""
from __future__ import annotations

import difflib
import enum
import re
import types
from typing import Annotated, Any, Literal, TypeVar, Union, get_args, get_origin

import annotated_types as at
from pydantic import BaseModel, ValidationError

from .errors import CampaignError

M = TypeVar("M", bound=BaseModel)

__all__ = ["campaign_error"]

# pydantic names the member of a union that failed in the error location:
# 'str', 'int', "literal['imix']", 'list[str]', 'function-after[_fs(), int]', a model name.
_TAG_RE = re.compile(r"^[A-Za-z_][\w-]*\[.*\]$")
_SIMPLE_TAGS = {"str": str, "int": int, "float": float, "bool": bool, "bytes": bytes}

_EXPECTED = {
    "int_type": "an integer", "int_parsing": "an integer", "int_from_float": "an integer",
    "float_type": "a number", "float_parsing": "a number", "finite_number": "a finite number",
    "string_type": "a string", "bool_type": "true or false", "bool_parsing": "true or false",
    "list_type": "a list", "tuple_type": "a list", "set_type": "a list",
    "dict_type": "a table", "model_type": "a table", "model_attributes_type": "a table",
    "dataclass_type": "a table",
}
_BOUND_TYPES = {"greater_than", "greater_than_equal", "less_than", "less_than_equal"}


def parse_params(model: type[M], params: Any, where: str) -> M:
    """A DUT's ``params`` table validated as ``model``, or a CampaignError naming
    ``where`` (e.g. ``dut[0].params``) and the field."""
    if not isinstance(params, dict):
        raise CampaignError(f"{where}: must be a table of parameters, got {params!r}")
    try:
        return model.model_validate(params)
    except ValidationError as e:
        raise campaign_error(e, model, where=where) from None


def campaign_error(err: ValidationError, model: type[BaseModel] | None = None, *,
                   where: str = "", file: str | None = None,
                   context: str | None = None) -> CampaignError:
    """Turn ``err`` (from validating ``model``) into a CampaignError, one line per problem.

    ``where`` is the field path of the validated table in the campaign file
    (``"dut[0].params"``, ``"energy"``, ``""`` for the whole file); ``file``
    the campaign file; ``context`` what else locates the problem (a scenario).
    ``model`` supplies the allowed keys, values and bounds.
    """
    groups: dict[str, list[tuple[dict, _Resolved]]] = {}
    for e in err.errors():
        r = _resolve(model, e["loc"])
        if e["type"] == "union_tag_invalid":    # the path names the discriminator (type)
            r.parts.append(str((e.get("ctx") or {}).get("discriminator", "type")).strip("'"))
        path = _path(where, r.parts)
        groups.setdefault(path, []).append((e, r))
    head = [x for x in (file, context) if x]
    lines = []
    for path, errs in groups.items():
        if len(errs) > 1 and all(r.union_member for _, r in errs):
            msgs = [_union_message(errs)]
        else:
            msgs = [_message(e, r) for e, r in errs]
        lines += [": ".join([*head, path, m]) for m in msgs]
    return CampaignError("\n".join(dict.fromkeys(lines)))


# -- field paths -----------------------------------------------------------------

class _Resolved:
    """A pydantic error location resolved against the model."""

    def __init__(self) -> None:
        self.parts: list[str | int] = []     # the location without union member tags
        self.tp: Any = None                  # annotation at the location (None: unknown)
        self.constraints: list[Any] = []     # annotated_types metadata of that field
        self.parent: Any = None              # annotation of the table holding the last key
        self.union_member = False            # the location named a member of a union


def _path(where: str, parts: list[str | int]) -> str:
    out = where
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else ("." if out else "") + str(p)
    return out or "(top level)"


def _is_union(tp: Any) -> bool:
    return get_origin(tp) in (Union, types.UnionType)


def _unwrap(tp: Any, constraints: list[Any]) -> Any:
    """Strip Annotated (collecting its constraints) and Optional."""
    while True:
        if get_origin(tp) is Annotated:
            tp, *meta = get_args(tp)
            for m in meta:
                constraints.extend(getattr(m, "metadata", [m]))
            continue
        if _is_union(tp):
            args = [a for a in get_args(tp) if a is not type(None)]
            if len(args) == 1:
                tp = args[0]
                continue
        return tp


def _union_member(tp: Any, tag: str) -> Any:
    for a in get_args(tp):
        if tag in _SIMPLE_TAGS and a is _SIMPLE_TAGS[tag]:
            return a
        if tag.startswith("literal[") and get_origin(a) is Literal:
            return a
        origin = get_origin(a)
        if origin is not None and tag.startswith(getattr(origin, "__name__", "?") + "["):
            return a
        if isinstance(a, type) and a.__name__ == tag:
            return a
        if _is_model(a) and "type" in a.model_fields and \
                tag in get_args(a.model_fields["type"].annotation):
            return a        # a discriminated union's member, tagged by its ``type``
    return None


def _is_model(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, BaseModel)


def _model_field(model: type[BaseModel], key: str):
    for name, f in model.model_fields.items():
        if key in (name, f.alias, f.validation_alias):
            return f
    return None


def _resolve(model: type[BaseModel] | None, loc: tuple) -> _Resolved:
    r = _Resolved()
    tp: Any = model
    for part in loc:
        tp = _unwrap(tp, r.constraints) if tp is not None else None
        if isinstance(part, str) and _is_union(tp) and (
                part in _SIMPLE_TAGS or _TAG_RE.match(part) or _union_member(tp, part)):
            r.union_member = True
            tp = _union_member(tp, part)
            continue
        if isinstance(part, str) and tp is None and r.parts and (
                part in _SIMPLE_TAGS or _TAG_RE.match(part)):
            r.union_member = True       # no model to check against: a member tag all the same
            continue
        r.parts.append(part)
        r.parent, r.constraints = tp, []
        if _is_model(tp) and isinstance(part, str):
            f = _model_field(tp, part)
            tp = f.annotation if f is not None else None
            if f is not None:
                r.constraints = list(f.metadata)
        elif get_origin(tp) in (list, tuple, set, frozenset) and isinstance(part, int):
            args = get_args(tp)
            tp = args[0] if args else None
        elif get_origin(tp) is dict and isinstance(part, str):
            args = get_args(tp)
            tp = args[1] if len(args) == 2 else None
        else:
            tp = None
    r.tp = _unwrap(tp, r.constraints) if tp is not None else None
    return r


# -- messages ----------------------------------------------------------------------

def _show(v: Any) -> str:
    """A value as the campaign file (TOML) writes it, shortened."""
    s = str(v).lower() if isinstance(v, bool) else repr(v)
    return s if len(s) <= 60 else s[:57] + "..."


def _num(v: Any) -> str:
    if isinstance(v, float) and v.is_integer() and abs(v) < 1e15:
        return str(int(v))
    return str(v)


def _bounds(r: _Resolved, ctx: dict[str, Any] | None = None) -> str:
    b: dict[str, Any] = {}
    for c in r.constraints:
        for k in ("gt", "ge", "lt", "le"):
            if isinstance(c, (at.Gt, at.Ge, at.Lt, at.Le, at.Interval)) and \
                    getattr(c, k, None) is not None:
                b[k] = getattr(c, k)
    for k in ("gt", "ge", "lt", "le"):
        if ctx and k in ctx:
            b.setdefault(k, ctx[k])
    lo = ("ge", b["ge"]) if "ge" in b else ("gt", b["gt"]) if "gt" in b else None
    hi = ("le", b["le"]) if "le" in b else ("lt", b["lt"]) if "lt" in b else None
    if lo and hi and lo[0] == "ge" and hi[0] == "le":
        return f"{_num(lo[1])}..{_num(hi[1])}"
    ops = {"gt": ">", "ge": ">=", "lt": "<", "le": "<="}
    return " and ".join(f"{ops[k]} {_num(v)}" for k, v in (x for x in (lo, hi) if x))


def _allowed_values(r: _Resolved) -> list[Any] | None:
    tp = r.tp
    if get_origin(tp) is Literal:
        return list(get_args(tp))
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return [m.value for m in tp]
    return None


def _did_you_mean(word: Any, choices: list[str]) -> str:
    if not isinstance(word, str):
        return ""
    close = difflib.get_close_matches(word, choices, n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""


def _allowed_keys(r: _Resolved) -> list[str]:
    parent = r.parent
    if _is_model(parent):
        return [f.alias or name for name, f in parent.model_fields.items()]
    return []


def _expected(e: dict, r: _Resolved) -> str:
    """What the field takes, as a phrase: 'an integer', "'auto'", 'one of ...'."""
    if e["type"] in ("literal_error", "enum"):
        values = _allowed_values(r)
        if values is not None:
            return " or ".join(repr(v) for v in values) if len(values) <= 2 else \
                "one of " + ", ".join(repr(v) for v in values)
        return e.get("ctx", {}).get("expected", "another value")
    if e["type"] in _EXPECTED:
        return _EXPECTED[e["type"]]
    return e["msg"].removeprefix("Input should be ").removeprefix("Value error, ")


def _union_message(errs: list[tuple[dict, _Resolved]]) -> str:
    e0 = errs[0][0]
    alts = list(dict.fromkeys(_expected(e, r) for e, r in errs))
    return f"{_show(e0.get('input'))} is not valid; expected {' or '.join(alts)}"


def _message(e: dict, r: _Resolved) -> str:
    kind, ctx, inp = e["type"], e.get("ctx") or {}, e.get("input")
    msg = e["msg"]
    if kind == "extra_forbidden":
        keys = _allowed_keys(r)
        if not keys:
            return "unknown key (check the spelling)"
        key = r.parts[-1] if r.parts else ""
        return f"unknown key{_did_you_mean(key, keys)} (allowed keys: {', '.join(keys)})"
    if kind == "missing":
        return "required but missing"
    if kind == "union_tag_invalid":
        tags = re.findall(r"'([^']*)'", str(ctx.get("expected_tags", "")))
        return (f"{_show(ctx.get('tag'))} is not allowed{_did_you_mean(ctx.get('tag'), tags)} "
                f"(allowed values: {', '.join(repr(t) for t in tags)})")
    if kind in ("literal_error", "enum"):
        values = _allowed_values(r)
        if values is not None:
            shown = ", ".join(repr(v) for v in values)
            hint = _did_you_mean(inp, [v for v in values if isinstance(v, str)])
        else:
            shown, hint = ctx.get("expected", msg.removeprefix("Input should be ")), ""
        return f"{_show(inp)} is not allowed{hint} (allowed values: {shown})"
    if kind in _BOUND_TYPES:
        small = kind.startswith("greater")
        return (f"{_show(inp)} is too {'small' if small else 'large'}; "
                f"allowed: {_bounds(r, ctx)}")
    if kind in _EXPECTED:
        out = f"{_show(inp)} is not {_EXPECTED[kind]}"
        b = _bounds(r)
        return out + (f"; allowed: {b}" if b else "")
    if kind == "too_short":
        return f"has {ctx.get('actual_length')} item(s); give at least {ctx.get('min_length')}"
    if kind == "too_long":
        return f"has {ctx.get('actual_length')} item(s); give at most {ctx.get('max_length')}"
    msg = msg.removeprefix("Value error, ").removeprefix("Assertion failed, ")
    msg = re.sub(r"^Input should be ", "must be ", msg)
    if inp is not None and not isinstance(inp, (dict, list)) and repr(inp) not in msg:
        msg += f" (got {_show(inp)})"
    return msg
