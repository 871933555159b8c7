"""Hardened extraction: each malicious archive is built here, refused with a clear error,
and leaves nothing behind, inside or outside the target."""

from __future__ import annotations

import io
import os
import tarfile
import zipfile
from pathlib import Path

import pytest

from verilearn_assets.core.ingest.archive import ArchiveError, directory_hash, extract_archive
from verilearn_assets.core.ingest.policy import ArchiveLimits

LIMITS = ArchiveLimits()


def _tree(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*")}


def _refused(archive: Path, match: str, limits: ArchiveLimits = LIMITS) -> None:
    """Extraction is refused with `match`, and the directory holding it is unchanged."""
    before = _tree(archive.parent)
    target = archive.parent / "out"
    with pytest.raises(ArchiveError, match=match) as info:
        extract_archive(archive, target, limits)
    assert str(archive) in str(info.value)
    assert _tree(archive.parent) == before
    assert not target.exists()


def _zip(path: Path, members: list[tuple[zipfile.ZipInfo | str, bytes]]) -> Path:
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for info, data in members:
            zf.writestr(info, data)
    return path


def _tar(
    path: Path, members: list[tuple[tarfile.TarInfo, bytes | None]], mode: str = "w:gz"
) -> Path:
    with tarfile.open(path, mode) as tf:
        for info, data in members:
            if data is not None:
                info.size = len(data)
                tf.addfile(info, io.BytesIO(data))
            else:
                tf.addfile(info)
    return path


def _info(name: str, kind: bytes = tarfile.REGTYPE, linkname: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = linkname
    info.mode = 0o644
    return info


# --- refused -------------------------------------------------------------------------


def test_zip_slip_is_refused(tmp_path: Path) -> None:
    archive = _zip(tmp_path / "slip.zip", [("ok.csv", b"a\n1\n"), ("../evil.txt", b"owned")])
    _refused(archive, r"'\.\./evil\.txt': path traversal")
    assert not (tmp_path.parent / "evil.txt").exists()


def test_zip_absolute_and_backslash_names_are_refused(tmp_path: Path) -> None:
    _refused(
        _zip(tmp_path / "abs.zip", [(zipfile.ZipInfo("/tmp/evil.txt"), b"x")]), "absolute path"
    )
    _refused(_zip(tmp_path / "bs.zip", [("..\\evil.txt", b"x")]), "backslash")


def test_zip_symlink_member_is_refused(tmp_path: Path) -> None:
    info = zipfile.ZipInfo("link")
    info.external_attr = 0o120777 << 16
    _refused(_zip(tmp_path / "link.zip", [(info, b"/etc/passwd")]), "symlink")


def test_tar_with_dotdot_is_refused(tmp_path: Path) -> None:
    archive = _tar(
        tmp_path / "dots.tar.gz",
        [(_info("data/ok.csv"), b"a\n1\n"), (_info("data/../../evil.txt"), b"owned")],
    )
    _refused(archive, r"path traversal")
    assert not (tmp_path.parent / "evil.txt").exists()


def test_tar_with_absolute_path_is_refused(tmp_path: Path) -> None:
    outside = tmp_path / "abs_evil.txt"
    archive = _tar(tmp_path / "abs.tar", [(_info(str(outside)), b"owned")], mode="w")
    _refused(archive, "absolute path")
    assert not outside.exists()


def test_tar_symlink_escape_is_refused(tmp_path: Path) -> None:
    archive = _tar(
        tmp_path / "sym.tar.gz",
        [
            (_info("data/link", tarfile.SYMTYPE, "../../.."), None),
            (_info("data/link/evil.txt"), b"owned"),
        ],
    )
    _refused(archive, r"symlink to '\.\./\.\./\.\.' points outside")
    archive = _tar(tmp_path / "symabs.tar.gz", [(_info("etc", tarfile.SYMTYPE, "/etc"), None)])
    _refused(archive, r"symlink to '/etc' points outside")


def test_tar_hardlink_escape_is_refused(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("secret")
    archive = _tar(
        tmp_path / "hard.tar.gz", [(_info("data/hl", tarfile.LNKTYPE, "../secret.txt"), None)]
    )
    _refused(archive, r"hardlink to '\.\./secret\.txt' points outside")
    archive = _tar(tmp_path / "hardabs.tar.gz", [(_info("hl", tarfile.LNKTYPE, str(secret)), None)])
    _refused(archive, "hardlink to .* points outside")
    assert secret.read_text() == "secret"


def test_tar_device_file_is_refused(tmp_path: Path) -> None:
    dev = _info("data/null", tarfile.CHRTYPE)
    dev.devmajor, dev.devminor = 1, 3
    _refused(_tar(tmp_path / "dev.tar", [(dev, None)], mode="w"), "device or special file")
    fifo = _info("data/pipe", tarfile.FIFOTYPE)
    _refused(_tar(tmp_path / "fifo.tar", [(fifo, None)], mode="w"), "device or special file")


def test_zip_bomb_is_refused_by_ratio(tmp_path: Path) -> None:
    archive = _zip(tmp_path / "bomb.zip", [("zeros.csv", b"0" * (8 * 1024 * 1024))])
    assert archive.stat().st_size < 100_000  # it really is a bomb
    _refused(archive, r"compression ratio \d+ exceeds 200 \(decompression bomb\?\)")


def test_tar_bomb_is_refused_by_ratio_and_total(tmp_path: Path) -> None:
    archive = _tar(tmp_path / "bomb.tar.gz", [(_info("zeros.csv"), b"0" * (8 * 1024 * 1024))])
    _refused(archive, r"expands \d+x, over the cap of 200")
    many = _tar(
        tmp_path / "many.tar",
        [(_info(f"f{i}.bin"), os.urandom(400_000)) for i in range(3)],
        mode="w",
    )
    _refused(
        many,
        "members add up to more than the cap of 1000000 bytes",
        ArchiveLimits(max_total_bytes=1_000_000),
    )
    _refused(many, "more than 2 members", ArchiveLimits(max_members=2))


# --- accepted ------------------------------------------------------------------------


def test_good_zip_and_tar_extract(tmp_path: Path) -> None:
    z = _zip(
        tmp_path / "good.zip",
        [("data/", b""), ("data/a.csv", b"a\n1\n"), ("b.tsv", b"x\ty\n1\t2\n")],
    )
    files = extract_archive(z, tmp_path / "zout", LIMITS)
    assert [p.relative_to(tmp_path / "zout").as_posix() for p in files] == ["b.tsv", "data/a.csv"]
    assert (tmp_path / "zout" / "data" / "a.csv").read_bytes() == b"a\n1\n"

    t = _tar(
        tmp_path / "good.tar.xz",
        [(_info("x/b.csv"), b"b\n2\n"), (_info("x/alias.csv", tarfile.SYMTYPE, "b.csv"), None)],
        mode="w:xz",
    )
    files = extract_archive(t, tmp_path / "tout", LIMITS)
    assert [p.name for p in files] == ["b.csv"]  # the internal symlink is kept, not listed
    assert os.readlink(tmp_path / "tout" / "x" / "alias.csv") == "b.csv"


def test_existing_target_is_not_overwritten(tmp_path: Path) -> None:
    z = _zip(tmp_path / "good.zip", [("a.csv", b"a\n1\n")])
    (tmp_path / "out").mkdir()
    with pytest.raises(ArchiveError, match="already exists"):
        extract_archive(z, tmp_path / "out", LIMITS)


def test_directory_hash_is_deterministic(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    for root, order in ((a, ["x/1.csv", "2.csv"]), (b, ["2.csv", "x/1.csv"])):
        for name in order:
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_text(f"content of {name}\n")
    assert directory_hash(a) == directory_hash(b)
    (b / "2.csv").write_text("content of 2.csv!\n")
    assert directory_hash(a) != directory_hash(b)
    (b / "2.csv").write_text("content of 2.csv\n")
    (b / "2.csv").rename(b / "3.csv")
    assert directory_hash(a) != directory_hash(b)
