"""Language toolchains of the refactor jail: one place that knows, per language, the test
runner's allowlisted name, the binary it resolves to, the host paths the jail maps
read-only for it, its environment (HOME and every cache in the jail's own /tmp, no
network client configured) and its limits.

Why here and not in the jail: the jail (`jail.py`, `docker_jail.py`) and the runner
(`runner.py`) each ask this module through one small hook (`resolve`, `ro_paths_for`,
`env_for`, `with_limits`, `docker_paths`/`docker_env`), so what a language needs is read
in one place and the jail's internals stay language-blind.

A test command names its runner by a bare name (`node`, `go`, `cargo`, `javatest`,
`make`), never a path; `runner.TEST_RUNNERS` allowlists exactly these names for the
commands a corpus entry gives (`datasets.yaml` `corpora.<name>.test`). A model's own
actions stay on the configured `allowed_binaries`.

Per-language limits: a JVM and the Go and Rust toolchains reserve more address space than
a Python test run (RLIMIT_AS per process), and rustc, the JVM and `go` run more threads
(the pids cgroup counts threads), so each language has its own `memory_mb`, `pids` and
test timeout, overridable in `configs/refactor.yaml` under `toolchains:`. The Docker backend
starts one container per workspace before it knows the language: its container-wide memory
and pids limits are the largest of the installed toolchains', and every command still gets
its own language's RLIMIT_AS.
"""

from __future__ import annotations

import functools
import glob
import os
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from verilearn_assets.refactor.verify.languages import UnknownLanguage, canonical_language

if TYPE_CHECKING:
    from verilearn_assets.refactor.config import RefactorConfig

HERE = Path(__file__).resolve().parent
RUNNER_FILES = HERE / "toolchain_files"  # JavaTest.java: the Java runner, mapped read-only
RUNNER_FILES_IN_JAIL = "/opt/refactor/toolchain"
DEFAULT_LANGUAGE = "python"
# A corpus entry's test command when it gives none, by language.
DEFAULT_TESTS: dict[str, tuple[str, ...]] = {
    "python": ("pytest", "-q"),
    "javascript": ("node", "--test"),
    "go": ("go", "test", "./..."),
    "rust": ("cargo", "test", "--offline", "-q"),
    "java": ("javatest",),
    "c": ("make", "-s", "test"),
}


@dataclass(frozen=True)
class Toolchain:
    """One language's test runner as the jail runs it."""

    language: str  # canonical (`languages.py`)
    runner: str  # the allowlisted bare name a test command starts with
    binary: str  # host path of the runner's binary (mapped at the same path)
    prefix: tuple[str, ...] = ()  # arguments the runner always gets first
    ro_paths: tuple[str, ...] = ()  # host paths mapped read-only at the same path
    env: dict[str, str] = field(default_factory=dict)
    memory_mb: int = 2048
    pids: int = 64
    test_timeout_s: float = 60.0


def _real(path: str | None) -> str | None:
    return os.path.realpath(path) if path and os.path.exists(path) else None


def _rust_toolchain() -> Path | None:
    """The stable rustup toolchain directory (the rustup shims in ~/.cargo/bin need
    rustup's whole home and a writable one: the jail maps the toolchain itself), else a
    system `cargo` (Debian's)."""
    homes = [os.environ.get("RUSTUP_HOME"), os.path.expanduser("~/.rustup"), "/root/.rustup"]
    for home in [h for h in homes if h]:
        for found in sorted(glob.glob(os.path.join(home, "toolchains", "stable-*"))):
            if os.path.isfile(os.path.join(found, "bin", "cargo")):
                return Path(found)
    cargo = _real(shutil.which("cargo"))
    if cargo and Path(cargo).name == "cargo":  # not the rustup shim
        return Path(cargo).parent.parent
    return None


def _etc_links(root: Path) -> tuple[str, ...]:
    """`/etc/java*` folders that links under `root` point into (Debian's JDK keeps its
    `conf/` and `lib/security` files in /etc/java-N-openjdk)."""
    found: set[str] = set()
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = os.path.join(dirpath, name)
            if os.path.islink(path):
                target = os.readlink(path)
                if target.startswith("/etc/java") and len(Path(target).parts) > 2:
                    found.add("/".join(Path(target).parts[:3]).replace("//", "/"))
    return tuple(sorted(found))


def _npm_cli() -> str | None:
    """npm's own script (`…/npm/bin/npm-cli.js`), which the jail runs with node: the `npm`
    on PATH is a link to it (or a shell wrapper beside the package, as some installs do)."""
    found = _real(shutil.which("npm"))
    if found and found.endswith(".js"):
        return found
    if found:
        beside = Path(found).parent.parent / "lib/node_modules/npm/bin/npm-cli.js"
        return str(beside) if beside.is_file() else None
    return None


SYSTEM_BIN = ("/usr/bin", "/bin", "/usr/include")  # a C compiler, its linker and headers
SYSTEM_PATH = "/usr/bin:/bin"


@functools.cache
def installed() -> dict[str, Toolchain]:
    """Language → toolchain, for the runners installed on this machine (looked up once);
    a language's second runner under its own name (`npm`: `SECOND_RUNNERS`)."""
    out: dict[str, Toolchain] = {}
    node = _real(shutil.which("node"))
    if node:
        out["javascript"] = Toolchain(
            "javascript", "node", node, (), (node,),
            {"NODE_OPTIONS": "", "NODE_REPL_HISTORY": ""},
            memory_mb=4096, pids=64,
        )  # fmt: skip
    npm = _npm_cli()
    shell = _real("/bin/sh")
    if node and npm and shell:
        out["npm"] = Toolchain(
            "javascript", "npm", node, (npm,), (node, str(Path(npm).parent.parent), shell),
            {
                # the package's `scripts.test` alone (no pre/post scripts), by the one shell
                # mapped; npm's cache and logs in the jail's /tmp; nothing that asks a
                # registry, and no config but this (the user's and the global file unread)
                "PATH": ":".join(dict.fromkeys([str(Path(node).parent), str(Path(shell).parent)])),
                "NODE_OPTIONS": "", "npm_config_script_shell": shell,
                "npm_config_ignore_scripts": "true", "npm_config_offline": "true",
                "npm_config_cache": "/tmp/npm-cache", "npm_config_userconfig": "/tmp/npm-user",
                "npm_config_globalconfig": "/tmp/npm-global", "npm_config_audit": "false",
                "npm_config_fund": "false", "npm_config_update_notifier": "false",
                "npm_config_color": "false", "npm_config_progress": "false",
                "npm_config_logs_max": "0",
            },
            memory_mb=4096, pids=64, test_timeout_s=120.0,
        )  # fmt: skip
    go = _real(shutil.which("go"))
    if go:
        goroot = str(Path(go).parent.parent)
        # Debian's GOROOT links src/, api/, ... into /usr/share/go-N: map that too
        shared = str(Path(os.path.realpath(f"{goroot}/src")).parent)
        out["go"] = Toolchain(
            "go", "go", go, (), (goroot, shared),
            {
                "GOROOT": goroot, "GOCACHE": "/tmp/go-cache", "GOPATH": "/tmp/go-path",
                "GOMODCACHE": "/tmp/go-path/mod", "GOFLAGS": "-mod=mod", "GOPROXY": "off",
                "GOSUMDB": "off", "GOTOOLCHAIN": "local", "GOENV": "off", "GOTELEMETRY": "off",
                "CGO_ENABLED": "0",
            },
            memory_mb=4096, pids=128, test_timeout_s=120.0,
        )  # fmt: skip
    rust = _rust_toolchain()
    if rust is not None:
        bin_dir = str(rust / "bin")
        out["rust"] = Toolchain(
            "rust", "cargo", f"{bin_dir}/cargo", (),
            (str(rust), *SYSTEM_BIN),
            {
                "PATH": f"{bin_dir}:{SYSTEM_PATH}", "RUSTC": f"{bin_dir}/rustc",
                "RUSTDOC": f"{bin_dir}/rustdoc", "CARGO_HOME": "/tmp/cargo-home",
                "CARGO_TARGET_DIR": "/tmp/cargo-target", "CARGO_NET_OFFLINE": "true",
                "CARGO_BUILD_JOBS": "2", "CARGO_INCREMENTAL": "0", "CARGO_TERM_COLOR": "never",
                # the linker by its real path (`cc` is a link through /etc/alternatives)
                "CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_LINKER": _real(shutil.which("gcc")) or "cc",
            },
            memory_mb=4096, pids=128, test_timeout_s=120.0,
        )  # fmt: skip
    java = _real(shutil.which("java"))
    if java and (Path(java).parent / "javac").exists():
        java_home = Path(java).parent.parent
        out["java"] = Toolchain(
            "java", "javatest", java,
            (
                "-Xmx256m", "-Xss2m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                "-XX:ReservedCodeCacheSize=64m", "-XX:MaxMetaspaceSize=192m",
                "-XX:CompressedClassSpaceSize=64m", "-Xshare:auto",
                f"{RUNNER_FILES_IN_JAIL}/JavaTest.java",
            ),
            (str(java_home), *_etc_links(java_home)),
            {"JAVA_HOME": str(java_home), "JAVA_TOOL_OPTIONS": ""},
            memory_mb=4096, pids=128, test_timeout_s=120.0,
        )  # fmt: skip
    make = _real(shutil.which("make"))
    if make and shutil.which("gcc"):
        out["c"] = Toolchain(
            "c", "make", make, (), SYSTEM_BIN, {"PATH": SYSTEM_PATH},
            memory_mb=2048, pids=64,
        )  # fmt: skip
    return out


# Every runner this module knows, installed or not (the allowlist is by name).
RUNNERS: dict[str, str] = {
    "node": "javascript",
    "go": "go",
    "cargo": "rust",
    "javatest": "java",
    "make": "c",
    "npm": "javascript",  # `npm test`: the package's own `scripts.test`
}
# Runners that are not their language's default: `installed()` keys them by their own name.
SECOND_RUNNERS = frozenset({"npm"})


class ToolchainMissing(ValueError):
    """A test command names a runner whose toolchain is not installed here."""


def for_argv(argv: list[str]) -> Toolchain | None:
    """The toolchain a command runs: by its runner name (`cargo`) or by the binary it was
    resolved to (`/…/bin/cargo`); None for ast-grep, python and pytest."""
    if not argv:
        return None
    head = argv[0]
    language = RUNNERS.get(head)
    if language is not None:
        found = installed().get(head if head in SECOND_RUNNERS else language)
        if found is None:
            raise ToolchainMissing(
                f"test runner {head!r} ({language}) is not installed on this machine"
            )
        return found
    # resolved: the binary and the runner's own first arguments (node alone is `node`,
    # node with npm's script is `npm`): the longest prefix that fits
    for chain in sorted(installed().values(), key=lambda c: -len(c.prefix)):
        if head == chain.binary and argv[1 : 1 + len(chain.prefix)] == list(chain.prefix):
            return chain
    # the runner files' prefix names the host folder under `none` (`resolve`)
    return next((c for c in installed().values() if head == c.binary), None)


def resolve(argv: list[str], backend: str) -> list[str] | None:
    """The runner's command as the jail runs it (`jail.resolve_argv`'s hook); None when
    `argv` is not a toolchain runner. The binaries sit at their host paths in every
    backend; the runner files at `RUNNER_FILES_IN_JAIL` (the host folder for `none`)."""
    if not argv or argv[0] not in RUNNERS:
        return None
    chain = for_argv(argv)
    assert chain is not None
    files = str(RUNNER_FILES) if backend == "none" else RUNNER_FILES_IN_JAIL
    prefix = [a.replace(RUNNER_FILES_IN_JAIL, files) for a in chain.prefix]
    return [chain.binary, *prefix, *argv[1:]]


def ro_paths_for(argv: list[str], already: list[str]) -> list[str]:
    """Host paths a command's toolchain needs beyond `already` (paths under one of them
    left out), each mapped read-only at the same path."""
    chain = for_argv(argv)
    if chain is None:
        return []
    out: list[str] = []
    for path in chain.ro_paths:
        if not os.path.exists(path):
            continue
        covered = [*already, *out]
        if not any(path == p or path.startswith(p.rstrip("/") + "/") for p in covered):
            out.append(path)
    return out


def binds_for(argv: list[str]) -> dict[str, str]:
    """Host file or folder → path in the jail, for a command's runner files."""
    chain = for_argv(argv)
    if chain is None or not any(RUNNER_FILES_IN_JAIL in a for a in chain.prefix):
        return {}
    return {str(RUNNER_FILES): RUNNER_FILES_IN_JAIL}


def env_for(argv: list[str]) -> dict[str, str]:
    """The environment a command's toolchain adds to the jail's (`jail.jail_env`)."""
    chain = for_argv(argv)
    return dict(chain.env) if chain is not None else {}


def limits_of(config: RefactorConfig, chain: Toolchain) -> dict[str, float]:
    """A toolchain's limits: its defaults, then `configs/refactor.yaml` `toolchains:` under
    its language, then under a second runner's own name (`npm` over `javascript`), so npm's
    install-free test scripts and node's runner can be given different limits."""
    chosen: dict[str, float] = {
        "memory_mb": chain.memory_mb,
        "pids": chain.pids,
        "test_timeout_s": chain.test_timeout_s,
    }
    keys = [chain.language] + ([chain.runner] if chain.runner in SECOND_RUNNERS else [])
    for key in keys:
        override = config.toolchains.get(key)
        if override is not None:
            chosen.update(override.model_dump(exclude_none=True))
    return chosen


def with_limits(config: RefactorConfig, argv: list[str]) -> RefactorConfig:
    """`config` with the limits of the command's toolchain (unchanged for ast-grep and
    Python commands)."""
    chain = for_argv(argv)
    if chain is None:
        return config
    chosen = limits_of(config, chain)
    limits = config.limits.model_copy(
        update={
            "memory_mb": int(chosen["memory_mb"]),
            "pids": int(chosen["pids"]),
            "test_timeout_s": float(chosen["test_timeout_s"]),
        }
    )
    return config.model_copy(update={"limits": limits})


def docker_paths(already: list[str]) -> dict[str, str]:
    """Docker: the containers start before the language is known, so every installed
    toolchain's paths are mapped (read-only), and the runner files. host → container."""
    out: dict[str, str] = {}
    for chain in installed().values():
        for path in ro_paths_for([chain.binary], [*already, *out]):
            out[path] = path
    out[str(RUNNER_FILES)] = RUNNER_FILES_IN_JAIL
    return out


def docker_env(base: dict[str, str]) -> dict[str, str]:
    """Docker: every installed toolchain's environment over `base` (their variables do not
    overlap but PATH, which becomes the union, the jail's own entries first)."""
    env = dict(base)
    paths = [p for p in base.get("PATH", "").split(":") if p]
    for chain in installed().values():
        for key, value in chain.env.items():
            if key == "PATH":
                paths += [p for p in value.split(":") if p not in paths]
            else:
                env[key] = value
    env["PATH"] = ":".join(paths)
    return env


def docker_limits(config: RefactorConfig) -> tuple[int, int]:
    """(memory_mb, pids) of a container: the largest of the jail's and every installed
    toolchain's, since one container serves every command of a workspace."""
    memory, pids = config.limits.memory_mb, config.limits.pids
    for chain in installed().values():
        chosen = limits_of(config, chain)
        memory, pids = max(memory, int(chosen["memory_mb"])), max(pids, int(chosen["pids"]))
    return memory, pids


_NODE = re.compile(r"^# (pass|fail) (\d+)$", re.M)
_CARGO = re.compile(r"test result: \w+\. (\d+) passed; (\d+) failed")


def test_counts(argv: list[str], stdout: str) -> dict[str, int] | None:
    """Passed/failed counts from a runner's own summary, for runners whose summary is not
    pytest's (`node --test`: `# pass N`; cargo: every `test result:` line; go: one
    package per `ok`/`FAIL` line); None to let the caller read pytest's."""
    chain = for_argv(argv)
    if chain is None:
        return None
    if chain.runner == "npm" and not _NODE.search(stdout):
        return None  # a script of its own: its exit code says; `node --test` under it: TAP
    if chain.language == "javascript":
        found = dict((k, int(v)) for k, v in _NODE.findall(stdout))
        return {"passed": found.get("pass", 0), "failed": found.get("fail", 0), "errors": 0}
    if chain.language == "rust":
        pairs = _CARGO.findall(stdout)
        return {
            "passed": sum(int(p) for p, _ in pairs),
            "failed": sum(int(f) for _, f in pairs),
            "errors": 0,
        }
    if chain.language == "go":
        return {
            "passed": len(re.findall(r"^ok\s", stdout, re.M)),
            "failed": len(re.findall(r"^(?:FAIL|--- FAIL)\s", stdout, re.M)),
            "errors": 0,
        }
    return None  # make and javatest print "N passed, M failed" as pytest does


def language_of_rule(rule: dict | list) -> str:
    """The canonical language of a rule's `language:` (python when absent); of a rule
    file's documents, the first's (the llm source checks they agree)."""
    first = rule[0] if isinstance(rule, list) and rule else rule
    language = first.get("language") if isinstance(first, dict) else None
    return canonical_language(str(language or DEFAULT_LANGUAGE))


def fence(language: str) -> str:
    """The code-fence tag of a language in prompts: its canonical name (`javascript`,
    `go`, `rust`, `java`, `c`, `cpp`, `tsx`) is the tag Markdown renderers know."""
    return language


def corpus_language(language: str, test: list[str] | None) -> tuple[str, tuple[str, ...]]:
    """A corpus entry's (canonical language, test command): the language any ast-grep
    name, the command the entry's or the language's default. ValueError starting with the
    field at fault (`language: …`, `test: …`), for the caller to name the entry."""
    try:
        canonical = canonical_language(language)
    except UnknownLanguage as exc:
        raise ValueError(f"language: {exc}") from exc
    if test is None:
        if canonical not in DEFAULT_TESTS:
            raise ValueError(
                f"test: no default test command for {canonical} (known: "
                f"{', '.join(DEFAULT_TESTS)}): give one"
            )
        return canonical, DEFAULT_TESTS[canonical]
    allowed = ("pytest", "python", *RUNNERS)
    if test[0] not in allowed:
        raise ValueError(
            f"test: {test[0]!r} is not a test runner the jail allows (allowed: "
            f"{', '.join(allowed)})"
        )
    return canonical, tuple(test)


def language_of_actions(actions: list[dict]) -> str:
    """A task's language from its reference actions: its first rule's (every step of a
    task is in one language); python for a task without a rule action."""
    for action in actions:
        rule = action.get("rule") if isinstance(action, dict) else None
        if isinstance(rule, dict) or (isinstance(rule, list) and rule):
            return language_of_rule(rule)
    return DEFAULT_LANGUAGE


# What decides what another language's tests run (the verdict takes them from the corpus
# copy unless proved equal to the task's, as it does conftest.py and pytest.ini) ...
TEST_CONFIG_FILES = frozenset(
    {"Makefile", "makefile", "GNUmakefile", "CMakeLists.txt", "Cargo.toml", "Cargo.lock",
     "build.rs", "go.mod", "go.sum", "package.json", "package-lock.json", ".mocharc.json"}
)  # fmt: skip
# ... and their test files where they sit beside the sources (Go's `x_test.go`, JS's
# `x.test.js`/`x.spec.ts` and an npm package's lone `test.js`, Java's `XTest.java`, C's
# `test_x.c`).
_TEST_FILE = re.compile(
    r"(_test\.go|\.(test|spec)\.[cm]?[jt]sx?|Tests?\.java|Tests?\.kt)$|^test_.*\.(c|cc|cpp)$"
    r"|^tests?\.[cm]?[jt]sx?$"
)


def is_test_file(name: str) -> bool:
    """A file name (no folder) that is a test or test configuration in another language."""
    return name in TEST_CONFIG_FILES or bool(_TEST_FILE.search(name))
