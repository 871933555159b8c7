import asyncio
import os

from pathconf.watch import stamps, watch


def test_watch_reloads_on_change(tmp_path):
    (tmp_path / "base.conf").write_text("host = a\n")
    seen = []
    tick = {"n": 0}

    async def pause():
        # a fake clock: each poll, the second file changes on the second round only
        tick["n"] += 1
        if tick["n"] == 2:
            (tmp_path / "local.conf").write_text("host = b\n")
            os.utime(tmp_path / "local.conf", (1000, 1000))

    changes = asyncio.run(watch(str(tmp_path), ["base.conf", "local.conf"], seen.append, 4, pause))
    assert changes == 1
    assert seen == [{"host": "b"}]
    assert stamps(str(tmp_path), ["local.conf", "x.conf"]) == {"local.conf": 1000, "x.conf": None}
