"""VPP's binary API through vpp_papi (PyPI ``vpp-papi``), loaded with the API
definitions of the VPP in use.

``VppApi.connect(socket, api_files)`` waits until VPP answers; ``call(name,
**args)`` sends one request and raises DutError naming the call when VPP
says no; ``bulk(name, args_iter)`` pipelines many requests of one kind (the
FIB: 2^20 routes), ``window`` in flight, and checks every reply; ``cli(cmd)``
runs a CLI command through the API (``cli_inband``), for the few things
the binary API has no message for (the packet generator's streams).
"""
from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

from ...errors import DutError

CONNECT_TIMEOUT_S = 30.0


class VppApi:
    def __init__(self, client, socket: str):
        self.client = client
        self.socket = socket

    @classmethod
    def connect(cls, socket: str, api_files: list[str], *, name: str = "fwdbench",
                timeout: float = CONNECT_TIMEOUT_S, alive=lambda: True,
                read_timeout: float = 10.0) -> "VppApi":
        """Connect to VPP's API socket, retrying until it answers within ``timeout``;
        ``alive()`` False (VPP exited) ends the wait at once."""
        try:
            from vpp_papi import VPPApiClient
        except ImportError:
            raise DutError("vpp: the Python package vpp-papi is missing "
                           "(pip install vpp-papi; `make setup` installs it)") from None
        if not api_files:
            raise DutError("vpp: no API definitions (*.api.json) found for this VPP")
        deadline = time.monotonic() + timeout
        last: Exception | None = None
        while time.monotonic() < deadline and alive():
            client = VPPApiClient(apifiles=api_files, use_socket=True, server_address=socket,
                                  read_timeout=read_timeout, async_thread=False)
            try:
                client.connect(name)
                api = cls(client, socket)
                api.call("show_version")
                return api
            except (OSError, DutError) as e:      # socket not there yet, or refused
                last = e
                try:
                    client.disconnect()
                except Exception:
                    pass
            except Exception as e:                # vpp_papi's own errors
                last = e
                try:
                    client.disconnect()
                except Exception:
                    pass
            time.sleep(0.1)
        why = "VPP exited" if not alive() else f"no answer within {timeout:g} s"
        raise DutError(f"vpp: API socket {socket}: {why}" + (f" ({last})" if last else ""))

    def close(self) -> None:
        try:
            self.client.disconnect()
        except Exception:
            pass

    def call(self, _msg: str, /, **args: Any):
        """One request ``_msg``; the reply (or the list of details of a dump)."""
        fn = getattr(self.client.api, _msg, None)
        if fn is None:
            raise DutError(f"vpp: this VPP has no API message {_msg!r} (a plugin missing?)")
        try:
            r = fn(**args)
        except DutError:
            raise
        except Exception as e:
            raise DutError(f"vpp: {_msg}: {type(e).__name__}: {e}") from None
        retval = getattr(r, "retval", 0)
        if retval:
            raise DutError(f"vpp: {_msg}({_short(args)}) failed: retval {retval}")
        return r

    def cli(self, cmd: str) -> str:
        """Run a CLI command through the API; its output. Only for what has no message."""
        try:
            r = self.client.api.cli_inband(cmd=cmd)
        except Exception as e:
            raise DutError(f"vpp: CLI {cmd[:80]!r}: {type(e).__name__}: {e}") from None
        if r.retval:
            raise DutError(f"vpp: CLI {cmd[:200]!r} failed: {r.reply.strip()[:300]}")
        return r.reply

    def bulk_prefixes(self, name: str, base: dict[str, Any], field: str,
                      prefixes: Iterable[tuple[bytes, int]], *, v6: bool) -> int:
        """``name`` once per (address bytes, length) of ``prefixes``, every other
        argument from ``base``, the prefix at ``field`` (e.g. ``route.prefix``),
        pipelined and checked (bulk.py); returns how many were installed."""
        from .bulk import BulkSender
        try:
            with BulkSender(self.client, self.socket) as sender:
                return sender.send_prefixes(name, base, field, prefixes, v6=v6)
        except DutError:
            raise
        except Exception as e:          # the socket went away: VPP died under us
            raise DutError(f"vpp: {name} (bulk): {type(e).__name__}: {e}") from None


def _short(args: dict[str, Any]) -> str:
    s = ", ".join(f"{k}={v!r}" for k, v in args.items())
    return s if len(s) <= 200 else s[:197] + "..."
