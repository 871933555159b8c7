"""One isolation layer: a `JailSpec` (spec.py) rendered by a bubblewrap (bwrap.py, run.py,
cgroups.py) or a Docker backend (docker.py, with the containers' PID-1 supervisor pid1.py),
with one seccomp filter (seccomp.py). Its clients: the Python cell pool (core/sandbox),
the refactor command runner and the DafnyServer pool."""
