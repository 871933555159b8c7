"""One isolation layer: a `JailSpec` (spec.py) rendered by a bubblewrap (bwrap.py, run.py,
cgroups.py) or a Docker backend (docker.py), with one seccomp filter (seccomp.py). Its
clients: the Python cell pool (core/sandbox), the refactor command runner and the
DafnyServer pool. How each runs its programs:

- one command to its end: `run.run_jailed` (bwrap) or `docker.run_once` (a fresh
  container);
- commands one after another in a kept container: `docker_pool.py`, PID 1 our
  supervisor `pid1.py` (the refactor runner);
- a long-lived program spoken to over stdin/stdout: `process.start_process` on either
  backend (the DafnyServer pool);
- the cell pool's slots: its own `core/sandbox` backends, on this layer's spec,
  container options (`docker.container_kwargs`), owner labels and orphan reaping
  (`docker.owner_labels`, `docker.reap_orphans`), attach transport (`docker.attach_stdio`,
  `MUX_HEADER`) and daemon clients (`docker.host_client`).

Why the cell pool's Docker slots are not `docker_pool.py` containers (issue #27 asked):
the two pools keep opposite things between runs. The command pool's PID 1 exists to keep
*nothing*: it kills every other process and empties `/tmp` before and after each command,
and a reset empties `/dev/shm` and System V IPC. A cell slot's PID 1 is the worker's
zygote, whose whole point is what it keeps: numpy, pandas and scipy.stats imported once
(about 3 s of imports here) and recently used tables in memory; each task is a fork of
it, and a task's process (its namespace, its `df`) must live across all the cells of an
episode. Measured here: one task with a pandas cell on a warm Docker slot takes 58 ms,
where a fresh interpreter per command would pay the 3 s of imports each time. Making the
zygote a pluggable "PID-1 program" of `docker_pool` would leave that module nothing of
its own (no per-command sweep, no reset, no one-line-per-command protocol). And the
command pool's channel is a unix socket in a host directory bind-mounted into the
container, which a daemon on another machine cannot mount; the cell pool spans several
daemons (`docker.hosts`, tcp:// with TLS) and talks to remote slots over the attach
stream. So what both pools need is shared here, and each keeps its own lifecycle.
"""
