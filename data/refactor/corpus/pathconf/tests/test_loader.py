import unittest

import pytest

from pathconf.loader import dump, get, layered, load, parse


class LoaderTest(unittest.TestCase):
    def setUp(self):
        import tempfile

        self.dir = tempfile.mkdtemp()
        with open(self.dir + "/base.conf", "w") as fh:
            fh.write("# base\nhost = a\nport=1\n")
        with open(self.dir + "/local.conf", "w") as fh:
            fh.write("port = 2\n")

    def tearDown(self):
        import shutil

        shutil.rmtree(self.dir)

    def test_parse(self):
        self.assertEqual(parse("a=1\n\n# c\nb = 2"), {"a": "1", "b": "2"})

    def test_layered(self):
        self.assertEqual(
            layered(self.dir, ["base.conf", "local.conf", "none.conf"]), {"host": "a", "port": "2"}
        )

    def test_missing(self):
        with pytest.raises(FileNotFoundError):
            load(self.dir, "none.conf")
        self.assertEqual(load(self.dir, "none.conf", default={"k": "v"}), {"k": "v"})

    def test_get(self):
        self.assertEqual(get({"a": "1"}, "a"), "1")
        self.assertEqual(get({}, "a", "d"), "d")

    def test_dump_round_trip(self):
        values = layered(self.dir, ["base.conf", "local.conf"])
        path = dump(values, self.dir, "merged.conf", header="generated")
        self.assertTrue(path.endswith("merged.conf"))
        with open(path) as fh:
            self.assertEqual(fh.readline(), "# generated\n")
        self.assertEqual(load(self.dir, "merged.conf"), values)
