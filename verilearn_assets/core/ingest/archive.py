"""Hardened archive extraction and a deterministic directory hash.

Every member is checked before a single byte is written: names (no absolute paths, no
`..`, no backslashes), types (no devices, no links leaving the target), and sizes (member,
total and compression-ratio caps against decompression bombs). Extraction then goes into
a fresh sibling directory that is renamed onto the target, so a refused or failed archive
leaves nothing behind.
"""

from __future__ import annotations

import hashlib
import os
import posixpath
import re
import shutil
import stat
import tarfile
import tempfile
import zipfile
from pathlib import Path

from verilearn_assets.core.ingest.policy import ArchiveLimits

_RATIO_FLOOR = 1024 * 1024  # small members may compress well; only big ones can be bombs
_CHUNK = 64 * 1024


class ArchiveError(ValueError):
    """An archive was refused; the message names the archive, the member and the rule."""


def archive_kind(path: Path) -> str:
    """'zip' or 'tar' from the file name (compressed tars included)."""
    name = path.name.lower()
    if name.endswith(".zip"):
        return "zip"
    if re.search(r"\.(tar|tar\.gz|tgz|tar\.bz2|tbz2|tar\.xz|txz)$", name):
        return "tar"
    raise ArchiveError(f"{path}: not a known archive type (zip, tar, tar.gz, tar.bz2, tar.xz)")


def check_member_name(archive: Path, name: str) -> str:
    """The member's normalised relative path, or ArchiveError if it could leave the target."""
    if not name or "\x00" in name:
        raise ArchiveError(f"{archive}: member {name!r}: empty name or NUL byte")
    if "\\" in name:
        raise ArchiveError(f"{archive}: member {name!r}: backslash in path (refused)")
    if name.startswith("/") or re.match(r"^[A-Za-z]:", name):
        raise ArchiveError(f"{archive}: member {name!r}: absolute path (refused)")
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise ArchiveError(f"{archive}: member {name!r}: path traversal '..' (refused)")
    if not parts:
        raise ArchiveError(f"{archive}: member {name!r}: names no file")
    return "/".join(parts)


def _link_stays_inside(base_dir: str, link: str) -> bool:
    if link.startswith("/") or "\\" in link:
        return False
    joined = posixpath.normpath(posixpath.join(base_dir, link))
    return not (joined == ".." or joined.startswith("../") or joined.startswith("/"))


def extract_archive(archive: Path, target: Path, limits: ArchiveLimits) -> list[Path]:
    """Extract `archive` into `target` (which must not exist yet); return the regular files."""
    archive = Path(archive)
    target = Path(target)
    if target.exists():
        raise ArchiveError(f"{archive}: target {target} already exists")
    kind = archive_kind(archive)
    archive_size = max(archive.stat().st_size, 1)
    target.parent.mkdir(parents=True, exist_ok=True)
    if kind == "zip":
        with zipfile.ZipFile(archive) as zf:
            members = _check_zip(archive, zf, limits, archive_size)
            _into_place(target, lambda root: _extract_zip(archive, zf, members, root, limits))
    else:
        with tarfile.open(archive, "r:*") as tf:
            members = _check_tar(archive, tf, limits, archive_size, target)
            _into_place(target, lambda root: tf.extractall(root, members=members, filter="data"))
    return sorted(p for p in target.rglob("*") if p.is_file() and not p.is_symlink())


def _into_place(target: Path, extract) -> None:
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".extract", dir=target.parent))
    try:
        extract(tmp)
        os.replace(tmp, target)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp)


def _check_sizes(
    archive: Path, name: str, size: int, compressed: int | None, total: int, limits: ArchiveLimits
) -> None:
    if size > limits.max_member_bytes:
        raise ArchiveError(
            f"{archive}: member {name!r}: {size} bytes exceeds the member cap "
            f"of {limits.max_member_bytes} (decompression bomb?)"
        )
    if total > limits.max_total_bytes:
        raise ArchiveError(
            f"{archive}: members add up to more than the cap of "
            f"{limits.max_total_bytes} bytes (decompression bomb?)"
        )
    if (
        compressed is not None
        and size > _RATIO_FLOOR
        and size / max(compressed, 1) > limits.max_ratio
    ):
        raise ArchiveError(
            f"{archive}: member {name!r}: compression ratio "
            f"{size / max(compressed, 1):.0f} exceeds {limits.max_ratio:g} "
            f"(decompression bomb?)"
        )


def _check_total_ratio(archive: Path, total: int, archive_size: int, limits: ArchiveLimits) -> None:
    if total > _RATIO_FLOOR and total / archive_size > limits.max_ratio:
        raise ArchiveError(
            f"{archive}: expands {total / archive_size:.0f}x, over the cap of "
            f"{limits.max_ratio:g} (decompression bomb?)"
        )


def _check_zip(
    archive: Path, zf: zipfile.ZipFile, limits: ArchiveLimits, archive_size: int
) -> list[tuple[zipfile.ZipInfo, str]]:
    infos = zf.infolist()
    if len(infos) > limits.max_members:
        raise ArchiveError(f"{archive}: {len(infos)} members, over the cap of {limits.max_members}")
    seen: set[str] = set()
    total = 0
    out = []
    for info in infos:
        rel = check_member_name(archive, info.filename)
        mode = info.external_attr >> 16
        if stat.S_ISLNK(mode):
            raise ArchiveError(
                f"{archive}: member {info.filename!r}: symlink (zip links are refused)"
            )
        if stat.S_IFMT(mode) and not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
            raise ArchiveError(
                f"{archive}: member {info.filename!r}: device or special file (refused)"
            )
        if info.flag_bits & 0x1:
            raise ArchiveError(f"{archive}: member {info.filename!r}: encrypted (refused)")
        if rel in seen:
            raise ArchiveError(f"{archive}: member {info.filename!r}: duplicate name")
        seen.add(rel)
        total += info.file_size
        _check_sizes(archive, info.filename, info.file_size, info.compress_size, total, limits)
        out.append((info, rel))
    _check_total_ratio(archive, total, archive_size, limits)
    return out


def _extract_zip(
    archive: Path,
    zf: zipfile.ZipFile,
    members: list[tuple[zipfile.ZipInfo, str]],
    root: Path,
    limits: ArchiveLimits,
) -> None:
    root_real = os.path.realpath(root)
    for info, rel in members:
        dest = root / rel
        if not os.path.realpath(dest).startswith(root_real + os.sep):
            raise ArchiveError(
                f"{archive}: member {info.filename!r}: resolves outside the target (refused)"
            )
        if info.is_dir():
            dest.mkdir(parents=True, exist_ok=True)
            continue
        dest.parent.mkdir(parents=True, exist_ok=True)
        written = 0
        with zf.open(info) as src, open(dest, "xb") as out:
            while chunk := src.read(_CHUNK):
                written += len(chunk)
                if written > info.file_size or written > limits.max_member_bytes:
                    raise ArchiveError(
                        f"{archive}: member {info.filename!r}: inflates past "
                        f"its declared size (decompression bomb?)"
                    )
                out.write(chunk)


def _check_tar(
    archive: Path, tf: tarfile.TarFile, limits: ArchiveLimits, archive_size: int, target: Path
) -> list[tarfile.TarInfo]:
    total = 0
    seen: set[str] = set()
    out: list[tarfile.TarInfo] = []
    for member in tf:  # headers are read one by one: a bomb stops at its first big header
        if len(out) >= limits.max_members:
            raise ArchiveError(f"{archive}: more than {limits.max_members} members")
        rel = check_member_name(archive, member.name)
        if member.isdev() or not (
            member.isfile() or member.isdir() or member.issym() or member.islnk()
        ):
            raise ArchiveError(
                f"{archive}: member {member.name!r}: device or special file (refused)"
            )
        if member.issym() and not _link_stays_inside(posixpath.dirname(rel), member.linkname):
            raise ArchiveError(
                f"{archive}: member {member.name!r}: symlink to "
                f"{member.linkname!r} points outside the target (refused)"
            )
        if member.islnk() and not _link_stays_inside("", member.linkname):
            raise ArchiveError(
                f"{archive}: member {member.name!r}: hardlink to "
                f"{member.linkname!r} points outside the target (refused)"
            )
        if member.isfile() and rel in seen:
            raise ArchiveError(f"{archive}: member {member.name!r}: duplicate name")
        seen.add(rel)
        if member.isfile():
            total += member.size
            _check_sizes(archive, member.name, member.size, None, total, limits)
        try:  # the standard library's own rules, as a second opinion
            tarfile.data_filter(member, str(target))
        except tarfile.FilterError as exc:
            raise ArchiveError(f"{archive}: member {member.name!r}: {exc} (refused)") from exc
        out.append(member)
    _check_total_ratio(archive, total, archive_size, limits)
    return out


def directory_hash(root: Path) -> str:
    """sha256 over sorted relative paths, entry types and file contents (not mtimes)."""
    root = Path(root)
    h = hashlib.sha256()
    entries = sorted(root.rglob("*"), key=lambda p: p.relative_to(root).as_posix())
    for path in entries:
        rel = path.relative_to(root).as_posix()
        if path.is_symlink():
            h.update(f"L\x00{rel}\x00{os.readlink(path)}\n".encode())
        elif path.is_dir():
            h.update(f"D\x00{rel}\n".encode())
        elif path.is_file():
            h.update(f"F\x00{rel}\x00{file_sha256(path)}\n".encode())
        else:
            raise ArchiveError(f"{root}: {rel} is neither file, directory nor symlink")
    return h.hexdigest()


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(1024 * 1024):
            h.update(chunk)
    return h.hexdigest()
