"""SIGTERM/SIGHUP end a `signals_end_the_block` block even inside an event loop's guards."""

from __future__ import annotations

import asyncio
import os
import signal
import time

import pytest

from tts_kit.serve.launch import Stopped, signals_end_the_block


def test_a_signal_inside_an_event_loop_callback_ends_the_block():
    """asyncio runs callbacks (and socket writes) under ``except BaseException``, letting
    only SystemExit and KeyboardInterrupt through: a `Stopped` raised there by the signal
    handler was logged as "Exception in callback" and the loop ran on (serve-sweep under
    SIGTERM in CI kept running until killed)."""
    ran_on: list[bool] = []

    def in_callback() -> None:
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(0.2)  # the handler runs here, inside the loop's guard

    async def main() -> None:
        asyncio.get_running_loop().call_soon(in_callback)
        await asyncio.sleep(1.0)
        ran_on.append(True)

    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(Stopped) as info, signals_end_the_block():
        asyncio.run(main())
    assert info.value.signum == signal.SIGTERM and not ran_on
    assert signal.getsignal(signal.SIGTERM) == before  # the old handler is back
