"""The testbed's topology as the scenarios used it, drawn as inline SVG.

One drawing per link kind in use: the generator's side and the DUT's side
with the two links between them, veth pairs (addresses of the lab's plan),
memif interfaces (a control socket each, shared memory, the roles) or, on
the ssh testbed, the cabled ports of the tester and the DUT host, and the
DUTs that used it. Every label is escaped: DUT names are user text.
"""
from __future__ import annotations

from typing import Any
from xml.sax.saxutils import escape

from ..lab.addressing import PORTS

W, H = 720, 190


def topologies(scenarios, placement: dict[str, Any]) -> list[dict[str, Any]]:
    """[{link, duts, svg}] for each link kind the scenarios used, veth first."""
    by_link: dict[str, list[str]] = {}
    roles: dict[str, str] = {}
    sockets: dict[int, list[str]] = {}      # per port: the memif sockets' file names
    for s in scenarios:
        d = s.describe or {}
        link = d.get("link") or ("veth" if placement.get("testbed") == "netns" else None)
        if link is None:
            continue
        names = by_link.setdefault(link, [])
        dut = d.get("dut") and s.dut_name
        if dut and dut not in names:
            names.append(dut)
        for i, m in enumerate(d.get("memif") or []):
            roles[s.dut_name] = m.get("dut_role", "slave")
            name = str(m.get("socket") or "").rsplit("/", 1)[-1]
            if name and name not in sockets.setdefault(i, []):
                sockets[i].append(name)
    out = []
    for link in sorted(by_link, key=lambda k: (k != "veth", k)):
        out.append({"link": link, "duts": by_link[link],
                    "svg": _svg(link, by_link[link], placement, roles, sockets)})
    return out


def _box(x: int, title: str, lines: list[str]) -> str:
    body = "".join(f'<text x="{x + 12}" y="{62 + 18 * i}" class="t">{escape(t)}</text>'
                   for i, t in enumerate(lines))
    return (f'<rect x="{x}" y="20" width="230" height="150" rx="8" class="box"/>'
            f'<text x="{x + 12}" y="42" class="h">{escape(title)}</text>{body}')


GENERATOR_NAMES = {"fwdgen": "fwdgen", "trex": "TRex"}


def _svg(link: str, duts: list[str], placement: dict[str, Any], roles: dict[str, str],
         sockets: dict[int, list[str]] | None = None) -> str:
    gen_cpu, dut_cpu = placement.get("gen_cpu"), placement.get("dut_cpu")
    ssh = placement.get("testbed") == "ssh"     # two hosts, cabled NIC ports
    gen = placement.get("generator") or "fwdgen"
    gen = GENERATOR_NAMES.get(gen, gen)
    left = _box(10, "generator", [f"{gen}, CPU {gen_cpu if gen_cpu is not None else '?'}",
                                   f"tester {placement.get('tester_host') or '?'}" if ssh else
                                   "netns fb-<run>-tg" if link == "veth" else "memif: no kernel",
                                   ])
    shown = duts[:4] + ([f"... and {len(duts) - 4} more"] if len(duts) > 4 else [])
    if ssh:
        shown = [f"on {placement.get('dut_host') or '?'} (SSH)"] + shown[:3]
    right = _box(W - 240, f"DUT, CPU {dut_cpu if dut_cpu is not None else '?'}", shown)
    links = []
    cabled = placement.get("ports") or []
    for i, p in enumerate(PORTS):
        y = 75 + 55 * i
        if ssh and i < len(cabled):
            tg, dut, ip4 = cabled[i]
            label = f"{tg} ⇄ {dut} {ip4}  (cabled ports)"
        elif link == "veth":
            label = f"{p.tg.ifname} {p.tg.ip4} ⇄ {p.dut.ifname} {p.dut.ip4}  (veth)"
        else:
            mixed = sorted(set(roles.get(d, "slave") for d in duts))
            dut_role = mixed[0] if len(mixed) == 1 else "/".join(mixed)
            names = (sockets or {}).get(i) or [f"{p.tg.ifname}.sock"]
            label = (f"{' / '.join(names)}: shared memory (DUT {dut_role})  "
                     f"{p.flows4.split('/')[0]}…")
        links.append(f'<line x1="240" y1="{y}" x2="{W - 240}" y2="{y}" class="l {link}"/>'
                     f'<text x="{W / 2}" y="{y - 7}" class="t" text-anchor="middle">'
                     f'{escape(label)}</text>')
    return (f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {W} {H}" '
            f'width="{W}" height="{H}" role="img" class="topology" '
            f'aria-label="{escape(link)} topology">'
            f'<style>.box{{fill:#f6f8fa;stroke:#555}}.h{{font:600 14px sans-serif}}'
            f'.t{{font:12px sans-serif}}.l{{stroke:#333;stroke-width:2}}'
            f'.memif{{stroke-dasharray:6 3}}</style>'
            f'{left}{right}{"".join(links)}</svg>')
