"""A package client's run (`pip download`, `npm pack`) in a bubblewrap jail with the network.

Why a jail: `pip download` of a source distribution prepares its metadata, which runs the
sdist's build backend (its `setup.py`) on the machine. Pinned bytes are not trusted bytes: a
hostile `setup.py` must neither write the host nor read what the user keeps in HOME. So the
client runs with the network shared (it asks its index) but sees the host read-only and
only in part: the system and runtime folders, the client's own configuration files (in a
private HOME), local index folders its settings name; the one folder it may write is the
destination, and /tmp and HOME are private tmpfs. The user's HOME (`~/.ssh`, tokens, the
verilearn home) is not mapped.

The jailed user is uid 65534 in a user namespace of its own that maps to the caller's uid:
every file the caller owns looks like its own inside, so nothing is mapped wholesale where
private files live (`/etc` as a whole: `/etc/shadow`; HOME); only named paths are.
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import urlsplit

from verilearn_assets.core.isolation.run import Completed, run_jailed
from verilearn_assets.core.isolation.spec import (
    Bind,
    JailSpec,
    Limits,
    Tmpfs,
    outermost,
    python_runtime_paths,
)

HOME_IN_JAIL = "/tmp/home"
# system folders (read-only); /etc only by the entries a client reads
SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/opt")
ETC = (
    "/etc/ssl", "/etc/ca-certificates", "/etc/resolv.conf", "/etc/hosts", "/etc/nsswitch.conf",
    "/etc/host.conf", "/etc/gai.conf", "/etc/services", "/etc/protocols", "/etc/passwd",
    "/etc/group", "/etc/alternatives", "/etc/localtime", "/etc/mime.types",
    "/etc/pip.conf", "/etc/xdg/pip", "/etc/npmrc",
)  # fmt: skip
# the client's own configuration in the user's HOME: where it asks (index, registry, cert)
USER_CONFIG = {
    "pip": (".config/pip/pip.conf", ".pip/pip.conf"),
    "npm": (".npmrc",),
}
# variables that say where a client asks and how (its index, proxy, certificates)
PASSED_PREFIXES = ("PIP_", "npm_config_", "NPM_CONFIG_")
PASSED = (
    "http_proxy", "https_proxy", "no_proxy", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY",
    "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "NODE_EXTRA_CA_CERTS", "LANG",
)  # fmt: skip
INDEX_VARIABLES = ("PIP_FIND_LINKS", "PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_CONSTRAINT")
LIMITS = Limits(pids=256, memory_mb=4096, file_size_mb=512, no_core=True)
TMPFS_MB = 2048


def local_paths(value: str) -> list[str]:
    """Local folders or files a client setting names (`/opt/wheels`, `file:///x/simple`):
    mapped read-only so a local index answers in the jail as outside."""
    out = []
    for word in value.split():
        path = urlsplit(word).path if word.startswith("file:") else word
        if path.startswith("/") and os.path.exists(path):
            out.append(os.path.realpath(path))
    return out


def client_env(manager: str, home: str = HOME_IN_JAIL) -> dict[str, str]:
    """The jail's environment: a private HOME and tmp, the caller's client settings."""
    env = {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": home,
        "TMPDIR": "/tmp",
        "XDG_CACHE_HOME": f"{home}/.cache",
        "XDG_CONFIG_HOME": f"{home}/.config",
        "npm_config_cache": f"{home}/.npm",
        "npm_config_update_notifier": "false",
    }
    for key, value in os.environ.items():
        if key.startswith(PASSED_PREFIXES) or key in PASSED:
            env.setdefault(key, value)
    if manager == "npm":  # npm's own cache stays private whatever the caller said
        env["npm_config_cache"] = f"{home}/.npm"
    return env


def fetch_spec(manager: str, argv: list[str], directory: Path, timeout_s: float) -> JailSpec:
    """The jail one client run gets: `directory` writable (at its own path), the network."""
    env = client_env(manager)
    read = [p for p in (*SYSTEM, *ETC) if os.path.exists(p)]
    read += python_runtime_paths()
    for key in INDEX_VARIABLES:
        read += local_paths(env.get(key, ""))
    config_file = os.environ.get("PIP_CONFIG_FILE")
    if manager == "pip" and config_file and os.path.isfile(config_file):
        read.append(os.path.realpath(config_file))
    read = outermost(read)
    binds = [Bind(p, p) for p in read]  # the destination's writable bind comes last: it wins
    user_home = Path(os.path.expanduser("~"))
    for rel in USER_CONFIG.get(manager, ()):
        found = user_home / rel
        if found.is_file():
            binds.append(Bind(str(found), f"{HOME_IN_JAIL}/{rel}"))
            if manager == "pip":  # its local index folders (`find-links = /opt/wheels`)
                binds += [Bind(p, p) for p in _config_paths(found) if p not in read]
    binds.append(Bind(str(directory), str(directory), writable=True))
    return JailSpec(
        argv=argv,
        binds=binds,
        env=env,
        tmpfs=[Tmpfs("/tmp", TMPFS_MB)],
        chdir=str(directory),
        network=True,
        limits=LIMITS,
        time_limit_s=timeout_s,
    )


def run_client(manager: str, argv: list[str], directory: Path, timeout_s: float) -> Completed:
    """Run the client once in its jail (RuntimeError when bubblewrap is missing)."""
    spec = fetch_spec(manager, argv, directory, timeout_s)
    return run_jailed(
        spec, output_cap_bytes=200_000, cgroup_prefix="verilearn-fetch", label="package fetch"
    )


def _config_paths(config: Path) -> list[str]:
    """Local folders a pip config file names (`find-links = /opt/wheels`), mapped read-only;
    a file the caller cannot read names none."""
    try:
        text = config.read_text(errors="replace")
    except OSError:
        return []
    out = []
    for line in text.splitlines():
        _, sep, value = line.partition("=")
        if sep:
            out += [p for p in local_paths(value) if not p.startswith(os.path.expanduser("~"))]
    return out
