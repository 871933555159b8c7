import os
import os.path

from pathconf.search import any_readable, existing, search_path, search_upward


def test_search_upward(tmp_path):
    deep = tmp_path / "a" / "b" / "c"
    deep.mkdir(parents=True)
    (tmp_path / "a" / "app.conf").write_text("x=1\n")
    found = search_upward(str(deep), "app.conf")
    assert found == os.path.join(str(tmp_path), "a", "app.conf")
    assert search_upward(str(deep), "app.conf", stop=str(deep / "..")) is None
    assert search_upward(str(deep), "none.conf", stop=str(tmp_path)) is None


def test_search_path_and_existing(tmp_path):
    first, second = tmp_path / "one", tmp_path / "two"
    first.mkdir()
    second.mkdir()
    (second / "app.conf").write_text("")
    env = {"PATHCONF_DIRS": os.pathsep.join([str(first), "", str(second)])}
    dirs = search_path(env, home="/home/me")
    assert dirs == ["/etc/pathconf", "/home/me/.config/pathconf", str(first), str(second)]
    assert search_path({}, home="/h")[-1] == "/h/.config/pathconf"
    assert existing(dirs + [str(second)], "app.conf") == [str(second / "app.conf")]
    assert any_readable(existing(dirs, "app.conf"))
    assert not any_readable([])
