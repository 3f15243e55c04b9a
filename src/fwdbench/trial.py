"""The result of one trial: one offered load for one duration.

Counts are integers; rates and ratios are derived properties (see
methodology.md, "Trial quantities"). Searches, the store and the report all
consume this type; the fwdgen wrapper and the sim DUT produce it.
"""
from __future__ import annotations

from dataclasses import dataclass, field, asdict
from typing import Any


@dataclass(frozen=True)
class LatencySummary:
    samples: int
    min_ns: float
    mean_ns: float
    p50_ns: float
    p90_ns: float
    p99_ns: float
    p999_ns: float
    max_ns: float
    jitter_ns: float          # RFC 3550 interarrival jitter [ns]
    hdr: str | None = None    # HdrHistogram V2 compressed, base64 [ns]


@dataclass(frozen=True)
class StreamResult:
    """One direction (stream) of a trial."""
    stream_id: int
    tx_port: str
    rx_port: str
    intended_pps: float       # [pps]
    intended_packets: int
    tx_packets: int
    tx_bytes: int             # L2 bytes without FCS
    rx_packets: int
    rx_bytes: int
    # None: not measured (the generator does not count it, e.g. TRex's load
    # streams carry no sequence numbers); never read None as 0
    reordered: int | None = 0
    duplicated: int | None = 0
    achieved_tx_pps: float = 0.0   # [pps]
    tx_limited: bool = False
    latency: LatencySummary | None = None

    @property
    def lost(self) -> int:
        return max(self.intended_packets - self.rx_packets, 0)


@dataclass
class TrialResult:
    intended_load_pps: float   # per stream [pps]
    duration_s: float          # measured part [s]
    streams: list[StreamResult]
    backend: str = "sim"
    warmup_s: float = 0.0
    raw: dict[str, Any] = field(default_factory=dict)          # generator JSON as returned
    dut_counters: dict[str, Any] = field(default_factory=dict)  # before/after deltas
    meters: dict[str, Any] = field(default_factory=dict)        # CPU and energy
    warnings: list[str] = field(default_factory=list)

    @property
    def intended_packets(self) -> int:
        return sum(s.intended_packets for s in self.streams)

    @property
    def tx_packets(self) -> int:
        return sum(s.tx_packets for s in self.streams)

    @property
    def rx_packets(self) -> int:
        return sum(s.rx_packets for s in self.streams)

    @property
    def lost(self) -> int:
        return sum(s.lost for s in self.streams)

    @property
    def sent_nothing(self) -> bool:
        """The trial was to send no packet, or sent none: it measured nothing."""
        return self.intended_packets <= 0 or self.tx_packets <= 0

    @property
    def loss_ratio(self) -> float:
        """PLR = (tx_intended - rx) / tx_intended over all streams. A trial that
        was to send nothing measured nothing: it counts as total loss (1.0), so
        no search takes it for a pass."""
        n = self.intended_packets
        return min(self.lost / n, 1.0) if n > 0 else 1.0

    @property
    def delivery_ratio(self) -> float:
        return 1.0 - self.loss_ratio

    @property
    def forwarding_rate_pps(self) -> float:
        """rx / T per stream, averaged over streams [pps]."""
        if not self.streams or self.duration_s <= 0:
            return 0.0
        return self.rx_packets / self.duration_s / len(self.streams)

    @property
    def generator_limited(self) -> bool:
        return any(s.tx_limited for s in self.streams)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
