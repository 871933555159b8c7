"""`image_mode: bundle`: this machine's Python runtime, baked into a scratch image.

A Docker host on another machine cannot see our files, and no registry is reachable
here to pull a base image, so the jail's runtime travels as an image built from what
runs here: the interpreter (and the venv's `pyvenv.cfg`), its stdlib (minus tests and
build files), the `bundle_packages` distributions with their dependencies (from their
RECORD files), `/usr/share/zoneinfo`, the allowed binaries, every shared library these
link (found with `ldd`), and the worker code. Files keep their paths, so the jail runs
the same argv as the offline mode. The tarball is imported with the Docker API
(`docker import`), which works over tcp:// + TLS; its tag is a hash of the file list
(path, size, mtime), so a changed library rebuilds the image once per host.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import stat
import subprocess
import sys
import sysconfig
import tarfile
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement

from verilearn_assets.core.sandbox.config import SandboxConfig
from verilearn_assets.core.sandbox.jail import WORKER_DIR_IN_JAIL

WORKER_FILES = ("worker.py", "protocol.py", "runtime.py")
FORMAT = 2  # bumped when the tarball's layout changes (part of the tag)
STDLIB_SKIP = {
    "site-packages",
    "test",
    "idlelib",
    "tkinter",
    "turtledemo",
    "ensurepip",
    "lib2to3",
    "__phello__",
}
ZONEINFO = "/usr/share/zoneinfo"
# static libraries, optimized bytecode (-O is never used) and Tk (no display in a jail)
SKIP_SUFFIXES = (".a", ".opt-1.pyc", ".opt-2.pyc")


class BundleError(RuntimeError):
    """The bundle cannot be built (a listed distribution is not installed, ...)."""


def _distribution_closure(names: list[str]) -> list[metadata.Distribution]:
    """The named distributions and everything they require (no extras), installed here."""
    seen: dict[str, metadata.Distribution] = {}
    todo = list(names)
    while todo:
        name = todo.pop()
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError as exc:
            raise BundleError(
                f"configs/sandbox.yaml docker.bundle_packages: {name!r} is not installed in "
                f"{sys.prefix}"
            ) from exc
        key = dist.metadata["Name"].lower().replace("_", "-")
        if key in seen:
            continue
        seen[key] = dist
        for raw in dist.requires or []:
            req = Requirement(raw)
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                todo.append(req.name)
    return list(seen.values())


def _preload_distributions(modules: list[str]) -> list[str]:
    """Distributions providing the preloaded modules (so `preload` always imports)."""
    providers = metadata.packages_distributions()
    out: list[str] = []
    for module in modules:
        top = module.split(".")[0]
        if importlib.util.find_spec(top) is None:
            raise BundleError(f"configs/sandbox.yaml preload: module {module!r} is not installed")
        out += providers.get(top, [])  # stdlib modules have no distribution
    return out


def _walk(root: str, skip: set[str] | None = None) -> list[str]:
    files: list[str] = []
    for parent, dirs, names in os.walk(root):
        if skip and parent == root:
            dirs[:] = [d for d in dirs if d not in skip and not d.startswith("config-")]
        files += [
            os.path.join(parent, n)
            for n in names
            if not n.endswith(SKIP_SUFFIXES) and not n.startswith("_tkinter")
        ]
    return files


def runtime_files(config: SandboxConfig) -> list[str]:
    """Host paths (files or symlinks) the jail's runtime needs, shared libraries aside."""
    files = [sys.executable, os.path.realpath(sys.executable)]
    cfg = Path(sys.prefix) / "pyvenv.cfg"
    if cfg.is_file():
        files.append(str(cfg))
    stdlib = sysconfig.get_paths()["stdlib"]
    files += _walk(stdlib, STDLIB_SKIP)
    names = list(config.docker.bundle_packages) + _preload_distributions(config.preload)
    for dist in _distribution_closure(names):
        for entry in dist.files or []:
            path = str(dist.locate_file(entry))
            if not os.path.isfile(path) or "/bin/" in path or "/tests/" in path:
                continue  # scripts and the packages' own test suites stay out
            files.append(path)
            if path.endswith(".py"):
                cached = importlib.util.cache_from_source(path)
                if os.path.isfile(cached):
                    files.append(cached)
    if os.path.isdir(ZONEINFO):
        files += _walk(ZONEINFO)
    for binary in config.allowed_binaries:
        if not os.path.exists(binary):
            raise BundleError(f"configs/sandbox.yaml allowed_binaries: {binary} does not exist")
        files.append(binary)
    return sorted(set(files))


def _is_elf(path: str) -> bool:
    try:
        with open(path, "rb") as fh:
            return fh.read(4) == b"\x7fELF"
    except OSError:
        return False


def shared_libraries(files: list[str]) -> list[str]:
    """Every shared library the ELF files among `files` load (as `ldd` resolves them)."""
    elves = [f for f in files if (f.endswith(".so") or ".so." in f or os.access(f, os.X_OK))]
    elves = [os.path.realpath(f) for f in elves if _is_elf(f)]
    libs: set[str] = set()
    for i in range(0, len(elves), 200):
        done = subprocess.run(
            ["ldd", *elves[i : i + 200]], capture_output=True, text=True, check=False
        )
        for line in done.stdout.splitlines():
            line = line.strip()
            if "=>" in line:
                target = line.split("=>", 1)[1].strip().split(" (")[0].strip()
            else:
                target = line.split(" (")[0].strip()
            if target.startswith("/") and os.path.exists(target):
                libs.add(target)
    return sorted(libs - set(files))


_MANIFESTS: dict[tuple[tuple[str, ...], ...], list[str]] = {}


def bundle_manifest(config: SandboxConfig) -> list[str]:
    """Every host path of the bundle; listed once per process and selection (running `ldd`
    over the libraries takes seconds), while the tag still stats every file each time."""
    key = (
        tuple(config.docker.bundle_packages),
        tuple(config.preload),
        tuple(config.allowed_binaries),
    )
    if key not in _MANIFESTS:
        files = runtime_files(config)
        _MANIFESTS[key] = sorted(set(files) | set(shared_libraries(files)))
    return list(_MANIFESTS[key])


def bundle_tag(manifest: list[str]) -> str:
    """A hash of the bundle's content (paths, sizes, mtimes, and the worker code)."""
    digest = hashlib.sha256(f"bundle-format-{FORMAT}\n".encode())
    for path in manifest:
        st = os.lstat(path)
        digest.update(f"{path}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    here = Path(__file__).resolve().parent
    for name in WORKER_FILES:
        digest.update((here / name).read_bytes())
    return digest.hexdigest()[:16]


class _TarWriter:
    """Adds host paths at their own place, symlinks along the way kept as symlinks."""

    def __init__(self, tar: tarfile.TarFile) -> None:
        self.tar = tar
        self.seen: set[str] = set()

    def _info(self, name: str, kind: bytes, mode: int) -> tarfile.TarInfo:
        info = tarfile.TarInfo(name.lstrip("/"))
        info.type, info.mode, info.uid, info.gid, info.mtime = kind, mode, 0, 0, 0
        return info

    def add(self, path: str) -> None:
        path = os.path.normpath(path)
        if path == "/":
            return
        parent = os.path.dirname(path)
        self.add(parent)
        name = os.path.join(os.path.realpath(parent), os.path.basename(path))
        if name in self.seen:
            return
        self.seen.add(name)
        st = os.lstat(name)
        if stat.S_ISLNK(st.st_mode):
            link = os.readlink(name)
            info = self._info(name, tarfile.SYMTYPE, 0o777)
            info.linkname = link
            self.tar.addfile(info)
            self.add(os.path.join(os.path.dirname(name), link))
        elif stat.S_ISDIR(st.st_mode):
            self.tar.addfile(self._info(name, tarfile.DIRTYPE, 0o755))
        elif stat.S_ISREG(st.st_mode):
            info = self._info(name, tarfile.REGTYPE, (st.st_mode & 0o755) | 0o444)
            info.size = st.st_size
            info.mtime = int(st.st_mtime)  # .pyc files are valid only for their source's mtime
            with open(name, "rb") as fh:
                self.tar.addfile(info, fh)

    def add_as(self, source: str, name: str) -> None:
        """A host file at another path in the image (the worker code)."""
        parts = Path(name).parent.parts[1:]
        for i in range(1, len(parts) + 1):
            directory = "/" + "/".join(parts[:i])
            if directory not in self.seen:
                self.seen.add(directory)
                self.tar.addfile(self._info(directory, tarfile.DIRTYPE, 0o755))
        info = self._info(name, tarfile.REGTYPE, 0o444)
        info.size = os.path.getsize(source)
        with open(source, "rb") as fh:
            self.tar.addfile(info, fh)


def write_bundle(manifest: list[str], out: str) -> None:
    """The image's root file system as a tarball at `out`."""
    here = Path(__file__).resolve().parent
    with tarfile.open(out, "w") as tar:
        writer = _TarWriter(tar)
        for directory in ("/workspace", "/tmp", "/dev", "/proc", "/etc"):
            writer.seen.add(directory)
            tar.addfile(writer._info(directory, tarfile.DIRTYPE, 0o755))
        for path in manifest:
            writer.add(path)
        for name in WORKER_FILES:
            writer.add_as(str(here / name), f"{WORKER_DIR_IN_JAIL}/{name}")
