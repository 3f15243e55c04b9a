"""Latency histograms: decode fwdgen's HdrHistograms and merge them into one CDF."""
from __future__ import annotations

import numpy as np

from .types import CDF_POINTS


def hdr_values_counts(b64: str) -> tuple[np.ndarray, np.ndarray]:
    """Decode one HdrHistogram (V2, compressed, base64): recorded values and counts."""
    from hdrh.histogram import HdrHistogram

    h = HdrHistogram.decode(b64)
    counts = np.ctypeslib.as_array(h.counts)[: h.counts_len].astype(np.int64)
    idx = np.nonzero(counts)[0]
    if idx.size == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    shift = int(h.sub_bucket_half_count_magnitude)
    half = int(h.sub_bucket_half_count)
    bucket = (idx >> shift) - 1
    sub = (idx & (half - 1)) + half
    low = bucket < 0
    sub = np.where(low, sub - half, sub)
    bucket = np.where(low, 0, bucket)
    values = sub.astype(np.int64) << (bucket + int(h.unit_magnitude)).astype(np.int64)
    return values, counts[idx]


def merged_cdf(hdrs: list[str]) -> tuple[np.ndarray, np.ndarray] | None:
    """CDF of the union of several histograms, thinned to CDF_POINTS points."""
    vs, cs = [], []
    for b64 in hdrs:
        try:
            v, c = hdr_values_counts(b64)
        except Exception:      # a corrupt histogram must not stop the report
            continue
        vs.append(v)
        cs.append(c)
    if not vs:
        return None
    values = np.concatenate(vs)
    counts = np.concatenate(cs)
    if values.size == 0:
        return None
    uniq, inv = np.unique(values, return_inverse=True)
    summed = np.bincount(inv, weights=counts)
    cum = np.cumsum(summed)
    p = cum / cum[-1]
    if uniq.size > CDF_POINTS:
        # evenly in p, and in log(1 - p) so the tail keeps its shape
        keep = np.unique(np.concatenate([
            [0],
            np.searchsorted(p, np.linspace(0, 1, CDF_POINTS // 2)).clip(0, uniq.size - 1),
            np.searchsorted(p, 1 - np.logspace(0, -6, CDF_POINTS // 2)).clip(0, uniq.size - 1),
            [uniq.size - 1]]))
        uniq, p = uniq[keep], p[keep]
    return uniq.astype(float), p
