"""Reload configuration files when they change (polling their modification times)."""
import asyncio
import os.path

from pathconf.loader import layered


def stamps(directory: str, names: list) -> dict:
    out = {}
    for name in names:
        path = os.path.join(directory, name)
        out[name] = os.path.getmtime(path) if os.path.exists(path) else None
    return out


async def watch(directory: str, names: list, on_change, rounds: int, pause=None) -> int:
    """Poll `rounds` times; call `on_change(merged values)` after each change seen.

    `pause` is awaited between polls (default: a 0.5 s sleep)."""
    wait = pause if pause is not None else (lambda: asyncio.sleep(0.5))
    seen = stamps(directory, names)
    changes = 0
    for _ in range(rounds):
        await wait()
        now = stamps(directory, names)
        if now != seen:
            seen = now
            changes += 1
            on_change(layered(directory, names))
    return changes
