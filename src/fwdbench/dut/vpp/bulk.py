"""Many API requests of one kind, fast: the FIB of 2^20 routes.

vpp_papi packs, sends, receives and decodes every message in Python (about
0.35 ms each here: 2^20 routes took 362 s). A FIB install sends one message
kind whose bytes differ only in the prefix and the context, so this module
packs one request with vpp_papi, finds where the prefix and the context
sit by packing two that differ only there, and patches a copy for each
route. The first requests are checked byte for byte against vpp_papi's own
packing, so a VPP whose message layout differs fails loudly instead of
installing wrong routes. It talks VPP's socket API (16-byte header, then the
big-endian message) on a connection of its own, many messages per send,
``window`` unanswered at most, and reads only each reply's context and
retval.
"""
from __future__ import annotations

import ipaddress
import socket
import struct
import time
from collections.abc import Iterable
from typing import Any

from ...errors import DutError

HEADER = struct.Struct(">QII")            # VPP socket transport: (0, length, 0)
REPLY = struct.Struct(">HIi")             # _vl_msg_id, context, retval
SOCKCLNT_CREATE_ID = 15                   # fixed: sent before the message table is known
BATCH = 256                               # messages per sendall
CHECKED = 3                               # requests checked against vpp_papi's packing


def _set(d: dict, path: list[str], value: Any) -> dict:
    out = dict(d)
    if len(path) == 1:
        out[path[0]] = value
    else:
        out[path[0]] = _set(d[path[0]], path[1:], value)
    return out


class BulkSender:
    def __init__(self, client, socket_path: str, timeout: float = 30.0):
        self.client = client
        self.path = socket_path
        self.timeout = timeout
        self.sock: socket.socket | None = None
        self.index = 0
        self._buf = b""

    def __enter__(self) -> "BulkSender":
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(self.timeout)
        self.sock.connect(self.path)
        create = self.client.messages["sockclnt_create"]
        self._send(create.pack({"_vl_msg_id": SOCKCLNT_CREATE_ID, "context": 1,
                                "name": "fwdbench-bulk"}))
        reply, _ = self.client.messages["sockclnt_create_reply"].unpack(self._read_one())
        if reply.response != 0:
            raise DutError(f"vpp: a second API connection was refused ({reply.response})")
        self.index = reply.index
        return self

    def __exit__(self, *exc) -> None:
        if self.sock is None:
            return
        try:
            delete = self.client.messages["sockclnt_delete"]
            idx = self.client.transport.get_msg_index(f"sockclnt_delete_{delete.crc[2:]}")
            self._send(delete.pack({"_vl_msg_id": idx, "client_index": self.index,
                                    "context": 2, "index": self.index}))
        except Exception:
            pass
        self.sock.close()
        self.sock = None

    # -- transport ---------------------------------------------------------------
    def _send(self, msg: bytes) -> None:
        self.sock.sendall(HEADER.pack(0, len(msg), 0) + msg)

    def _read_one(self) -> bytes:
        while True:
            msg = self._take()
            if msg is not None:
                return msg
            self._fill()

    def _fill(self) -> None:
        data = self.sock.recv(1 << 20)
        if not data:
            raise DutError("vpp: the API connection closed (VPP exited?)")
        self._buf += data

    def _take(self) -> bytes | None:
        if len(self._buf) < HEADER.size:
            return None
        _, n, _ = HEADER.unpack_from(self._buf)
        if len(self._buf) < HEADER.size + n:
            return None
        msg = self._buf[HEADER.size:HEADER.size + n]
        self._buf = self._buf[HEADER.size + n:]
        return msg

    # -- the template -------------------------------------------------------------
    def _template(self, name: str, base: dict[str, Any], path: list[str], v6: bool):
        msg = self.client.messages[name]
        self.msg_index = self.client.transport.get_msg_index(f"{name}_{msg.crc[2:]}")
        if self.msg_index <= 0:
            raise DutError(f"vpp: this VPP has no API message {name!r}")
        net = ipaddress.IPv6Network if v6 else ipaddress.IPv4Network
        width = 16 if v6 else 4
        head = {"_vl_msg_id": self.msg_index, "client_index": self.index}
        lo = msg.pack({**_set(base, path, net((0, 0))), **head, "context": 0x11111111})
        hi = msg.pack({**_set(base, path, net((b"\xff" * width, width * 8))), **head,
                       "context": 0x22222222})
        ctx = lo.find(b"\x11" * 4)
        diff = [i for i in range(len(lo)) if lo[i] != hi[i] and not ctx <= i < ctx + 4]
        if ctx < 0 or hi[ctx:ctx + 4] != b"\x22" * 4 or len(diff) != width + 1 \
                or diff[:width] != list(range(diff[0], diff[0] + width)):
            raise DutError(f"vpp: unexpected layout of {name} (cannot bulk-install)")
        return msg, lo, ctx, diff[0], diff[-1], net

    def send_prefixes(self, name: str, base: dict[str, Any], field: str,
                      prefixes: Iterable[tuple[bytes, int]], *, v6: bool,
                      window: int = 8192) -> int:
        """``name`` once per (address bytes, prefix length) of ``prefixes``, with
        ``base`` as every other argument and the prefix at ``field`` (dotted)."""
        path = field.split(".")
        msg, tmpl, ctx_off, addr_off, len_off, net = self._template(name, base, path, v6)
        width = len_off - addr_off if v6 else 4
        pack_ctx = struct.Struct(">I").pack
        sent = answered = 0
        first_bad: tuple[int, int] | None = None
        out = bytearray()
        started = time.monotonic()

        def drain(block: bool) -> None:
            nonlocal answered, first_bad
            if block:
                self._fill()
            else:
                self.sock.setblocking(False)
                try:
                    while True:
                        data = self.sock.recv(1 << 20)
                        if not data:
                            raise DutError("vpp: the API connection closed (VPP exited?)")
                        self._buf += data
                except BlockingIOError:
                    pass
                finally:
                    self.sock.settimeout(self.timeout)
            while (m := self._take()) is not None:
                _, context, retval = REPLY.unpack_from(m)
                answered += 1
                if retval and first_bad is None:
                    first_bad = (context, retval)

        for addr, plen in prefixes:
            sent += 1
            b = bytearray(tmpl)
            b[ctx_off:ctx_off + 4] = pack_ctx(sent)
            b[addr_off:addr_off + width] = addr
            b[len_off] = plen
            if sent <= CHECKED:
                want = msg.pack({**_set(base, path, net((addr, plen))), "context": sent,
                                 "_vl_msg_id": self.msg_index, "client_index": self.index})
                if bytes(b) != want:
                    raise DutError(f"vpp: {name}: the patched message differs from "
                                   f"vpp_papi's packing (cannot bulk-install)")
            out += HEADER.pack(0, len(b), 0)
            out += b
            if sent % BATCH == 0:
                self.sock.sendall(out)
                out = bytearray()
                drain(block=False)
                while sent - answered >= window:
                    drain(block=True)
        if out:
            self.sock.sendall(out)
        while answered < sent:
            if time.monotonic() - started > 600:
                raise DutError(f"vpp: {name}: {answered} of {sent} answered after 600 s")
            drain(block=True)
        if first_bad:
            raise DutError(f"vpp: {name} #{first_bad[0]} refused: retval {first_bad[1]}")
        return sent
