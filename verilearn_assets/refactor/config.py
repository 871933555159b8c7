"""Refactor family configuration, validated strictly at load, from two files.

The runner's jail (one short-lived command per step: ast-grep, python, pytest, on a host
workspace) is configured beside the analysis sandbox, in `configs/sandbox.yaml` under
`refactor:` (`JAIL_KEYS`), so one file holds every sandbox setting. The family's own
settings (test cache, state caps, generation, actors) stay in `configs/refactor.yaml`.
Both merge into one flat `RefactorConfig`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, ValidationError

from verilearn_assets.core.config import (
    ConfigError,
    StrictConfig,
    config_dir,
    read_yaml_mapping,
)
from verilearn_assets.refactor.verify.toolchains import RUNNERS

Backend = Literal["bwrap", "docker", "none"]
# What a model's action may run (`allowed_binaries` narrows it) ...
ACTION_BINARIES: tuple[str, ...] = ("ast-grep", "python", "pytest")
# ... and every name a command may start with: the language test runners
# (`toolchains.RUNNERS`, allowlisted for test commands by `runner.TEST_RUNNERS`) too.
ALLOWED_BINARIES: tuple[str, ...] = (*ACTION_BINARIES, *RUNNERS)
Binary = Literal["ast-grep", "python", "pytest", "node", "go", "cargo", "javatest", "make"]


class Limits(StrictConfig):
    """Per-command limits, applied by rlimits (and a pids cgroup or Docker's limits)."""

    action_timeout_s: float = Field(default=20.0, gt=0)
    test_timeout_s: float = Field(default=60.0, gt=0)
    cpu_s: int = Field(default=30, ge=1)  # RLIMIT_CPU per process
    # RLIMIT_AS per process (bwrap/none), and the whole jail's memory cgroup (bwrap) or
    # container (docker) limit: tmpfs pages included
    memory_mb: int = Field(default=2048, ge=64)
    pids: int = Field(default=64, ge=8)  # cgroup pids.max / docker pids_limit
    file_size_mb: int = Field(default=16, ge=1)  # RLIMIT_FSIZE: one file's size
    open_files: int = Field(default=256, ge=16)  # RLIMIT_NOFILE
    output_cap_bytes: int = Field(default=20_000, ge=256)  # per stream, cut in the middle
    # What the HOST reads of a workspace (workspace.Budget), checked by lstat before any
    # byte is read: paths of every kind, skipped directories (.git, __pycache__, ...)
    # included; bytes of all files (apparent size: sparse files count in full); depth.
    max_files: int = Field(default=2000, ge=1)
    max_tree_mb: int = Field(default=64, ge=1)
    max_depth: int = Field(default=64, ge=2)
    # a .py file the host compiles (syntax check) or diffs line by line: at most this big
    max_text_kb: int = Field(default=512, ge=16)
    # bwrap: size of each tmpfs the jail can write (its root, /tmp, /dev/shm); all of it
    # is charged to the jail's memory cgroup (memory.max = memory_mb) with its processes
    tmpfs_mb: int = Field(default=64, ge=1)
    # bwrap: without a usable memory + pids cgroup (not root, no cgroup delegation), true
    # refuses to run a command; false runs it with the rlimits alone and logs a warning
    require_cgroup: bool = False


class ToolchainLimits(StrictConfig):
    """One language's test-runner limits over `toolchains.py`'s defaults (a JVM or the Go
    toolchain reserves more address space than pytest; rustc runs more threads)."""

    memory_mb: int | None = Field(default=None, ge=64)
    pids: int | None = Field(default=None, ge=8)
    test_timeout_s: float | None = Field(default=None, gt=0)


class DockerSettings(StrictConfig):
    offline_image: str = "verilearn-sandbox-scratch:1"  # empty image + host runtime mounted
    # pool: containers kept between workspaces, reset in between (processes, /tmp,
    # /dev/shm, System V IPC, the workspace emptied; see docker_jail.py); workspace: one
    # container per workspace; command: a fresh container per command. In every mode each
    # command is sent over a unix socket to the container's PID 1, swept between commands.
    lifetime: Literal["pool", "workspace", "command"] = "pool"
    pool_size: int = Field(default=4, ge=1, le=64)  # idle containers kept (lifetime: pool)
    # The containers' parent cgroup. Docker's default puts every container under one
    # `docker` group that weighs as much as ONE host process, so on a busy host a jailed
    # pytest gets a fraction of the CPU a bwrap one gets. `auto`: a group of our own beside
    # it (`/verilearn-refactor` with the cgroupfs driver, `verilearn-refactor.slice` with
    # systemd); null: Docker's default; anything else: passed to Docker as is.
    cgroup_parent: str | None = "auto"
    # lifetime: workspace: start the next workspace's container while the current one
    # works and remove ended ones in the background (one container per workspace all the
    # same). The pool always removes the containers it drops in the background.
    prestart: bool = True


class StateSettings(StrictConfig):
    token_budget: int = Field(default=600, ge=400, le=800)
    text_cap: int = Field(default=256, ge=16, le=256)
    history_cap: int = Field(default=3, ge=1, le=3)
    # an actor of vllm_actors.yaml that shortens a state over budget (checked; the rules
    # compact whenever its answer is rejected); null: the deterministic rules only
    compaction_actor: str | None = None


class GenerationSettings(StrictConfig):
    max_pairs_per_repo: int = Field(default=30, ge=0)  # procedural two-rule sequences
    max_function_scoped_per_repo: int = Field(default=20, ge=0)  # one rule in one function
    max_renames_per_repo: int = Field(default=10, ge=0)  # renames of top-level names
    rules: list[str] | None = None  # catalog rule ids to use; None: every rule
    llm_actor: str | None = None  # actor of vllm_actors.yaml proposing `llm` tasks
    llm_proposals_per_repo: int = Field(default=4, ge=1)
    llm_code_chars: int = Field(default=2000, ge=200)  # code shown to the proposer


class ActorSettings(StrictConfig):
    teacher: Literal["program", "vllm"] = "program"
    actor: str | None = None  # a name in configs/vllm_actors.yaml when teacher is vllm
    extra_steps: int = Field(default=1, ge=0)  # steps allowed beyond the reference length
    seed: int = 0
    concurrency: int = Field(default=1, ge=1, le=16)  # tasks driven side by side
    queue: Literal["sqlite", "redis"] = "sqlite"  # where pending/running/done tasks live
    redis_url: str = "redis://127.0.0.1:6379/0"  # with queue: redis


class RefactorConfig(StrictConfig):
    """One flat model: the `JAIL_KEYS` come from sandbox.yaml's `refactor:` section, the
    rest from refactor.yaml (`load_refactor_config`)."""

    backend: Backend = "bwrap"
    allowed_binaries: list[Binary] = Field(default_factory=lambda: list(ACTION_BINARIES))
    limits: Limits = Field(default_factory=Limits)
    # Host paths the jail sees read-only besides the Python runtime and ast-grep.
    system_ro_paths: list[str] = Field(
        default_factory=lambda: ["/usr/lib", "/usr/lib64", "/lib", "/lib64"]
    )
    workspace_root: str = "${VERILEARN_HOME}/refactor/workspaces"
    log_dir: str = "${VERILEARN_HOME}/logs/sandbox"
    # test results by (tree hash, command): a tree already tested is not tested again;
    # null turns the cache off
    test_cache: str | None = "${VERILEARN_HOME}/refactor/test_cache.sqlite"
    log_max_bytes: int = Field(default=1_000_000, ge=1024)
    log_backups: int = Field(default=3, ge=0)
    docker: DockerSettings = Field(default_factory=DockerSettings)
    state: StateSettings = Field(default_factory=StateSettings)
    generation: GenerationSettings = Field(default_factory=GenerationSettings)
    actors: ActorSettings = Field(default_factory=ActorSettings)
    # per-language test-runner limits (toolchains.py has the defaults), by canonical name;
    # `npm` (javascript's second runner) over `javascript`'s
    toolchains: dict[Literal["javascript", "npm", "go", "rust", "java", "c"], ToolchainLimits] = (
        Field(default_factory=dict)
    )

    def with_backend(self, backend: Backend) -> RefactorConfig:
        return self.model_copy(update={"backend": backend})

    def for_home(self, home: Path) -> RefactorConfig:
        """`${VERILEARN_HOME}` in the paths bound to an explicit home (assets pass theirs)."""
        update = {}
        for name in ("workspace_root", "log_dir", "test_cache"):
            value = getattr(self, name)
            if value is None:
                continue
            for token in ("${VERILEARN_HOME}", "$VERILEARN_HOME"):
                value = value.replace(token, str(home))
            update[name] = value
        return self.model_copy(update=update)


# The jail's settings: read from `sandbox.yaml` under `refactor:`, refused in refactor.yaml.
JAIL_KEYS: tuple[str, ...] = (
    "backend",
    "allowed_binaries",
    "limits",
    "system_ro_paths",
    "workspace_root",
    "log_dir",
    "log_max_bytes",
    "log_backups",
    "docker",
)
JAIL_SECTION = "refactor"


def _jail_section(path: Path) -> dict:
    """sandbox.yaml's `refactor:` section; no file or no section: the jail's defaults."""
    if not path.is_file():
        return {}
    section = read_yaml_mapping(path).get(JAIL_SECTION)
    if section is None:
        return {}
    if not isinstance(section, dict):
        raise ConfigError(
            f"{path}: field '{JAIL_SECTION}': must be a mapping, got {type(section).__name__}"
        )
    errors = []
    for key in section:
        if key in JAIL_KEYS:
            continue
        where = (
            "it is a family setting: it belongs in refactor.yaml"
            if key in RefactorConfig.model_fields
            else f"not a setting of the refactor jail (known: {', '.join(JAIL_KEYS)})"
        )
        errors.append(f"{path}: field '{JAIL_SECTION}.{key}': {where}")
    if errors:
        raise ConfigError("\n".join(errors))
    return section


def load_refactor_config(directory: str | Path | None = None) -> RefactorConfig:
    """`<dir>/refactor.yaml` merged with the jail of `<dir>/sandbox.yaml` (`refactor:`).

    `<dir>` is `directory`, else `VERILEARN_CONFIG_DIR`, else the repository's `configs/`.
    A jail key left in refactor.yaml is an error pointing to its new place; every error
    names the file and the field.
    """
    base = Path(directory or config_dir())
    family_path, sandbox_path = base / "refactor.yaml", base / "sandbox.yaml"
    if not family_path.is_file():
        raise ConfigError(f"{family_path}: config file not found")
    family = read_yaml_mapping(family_path)
    moved = [key for key in family if key in JAIL_KEYS]
    if moved:
        raise ConfigError(
            "\n".join(
                f"{family_path}: field '{key}': a setting of the refactor jail, which now "
                f"belongs in sandbox.yaml under `{JAIL_SECTION}:` (move it there)"
                for key in moved
            )
        )
    jail = _jail_section(sandbox_path)
    try:
        return RefactorConfig.model_validate({**family, **jail})
    except ValidationError as exc:
        lines = []
        for err in exc.errors():
            loc = [str(p) for p in err["loc"]]
            if loc and loc[0] in JAIL_KEYS:
                where = f"{sandbox_path}: field '{'.'.join([JAIL_SECTION, *loc])}'"
            else:
                where = f"{family_path}: field '{'.'.join(loc) or '<root>'}'"
            lines.append(f"{where}: {err['msg']}")
        raise ConfigError("\n".join(lines)) from exc
