"""The jails' seccomp filter, one deny list rendered for both backends.

A jailed command must not read or write another process's memory: with `ptrace` or
`process_vm_readv`/`process_vm_writev` an action once attached to the Docker container's
PID 1 and forged its replies (issue 25). Both backends get the same filter:

- bubblewrap: a BPF program built with libseccomp (Debian's `libseccomp2`, through
  ctypes: a well-kept library rather than hand-written BPF) and handed to `bwrap --seccomp
  FD`, which loads it just before it executes the command (bwrap itself ran with none);
- Docker: a profile given as `security_opt=["seccomp=<json>"]`.

Docker's own default profile is an allowlist compiled into the daemon; its text is not
ours to copy, and a custom profile replaces it. So the profile here allows by default and
denies by name the syscalls Docker documents as blocked by its default (kernel modules,
mounts, namespaces, keyrings, BPF, perf, clocks, reboot, ...; with `cap_drop=ALL` most of
them fail anyway, the list makes it certain), namespace flags of `clone`, `clone3`
(ENOSYS: the C library falls back to `clone`, whose flags are checked), and the three
memory-access calls. Every architecture the host can execute is filtered (a 32-bit
binary's `ptrace` has another number), any other is killed.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import json
import os
import platform
from functools import cache

# The attack surface issue 25 closes: another process's memory.
MEMORY_ACCESS = ("ptrace", "process_vm_readv", "process_vm_writev")
# Docker's documented "significant syscalls blocked by the default profile", plus io_uring
# (a second way to issue syscalls a filter does not see).
KERNEL_SURFACE = (
    "acct", "add_key", "bpf", "clock_adjtime", "clock_settime", "create_module",
    "delete_module", "finit_module", "get_kernel_syms", "get_mempolicy", "init_module",
    "io_uring_enter", "io_uring_register", "io_uring_setup", "ioperm", "iopl", "kcmp",
    "kexec_file_load", "kexec_load", "keyctl", "lookup_dcookie", "mbind", "mount",
    "move_mount", "move_pages", "name_to_handle_at", "nfsservctl", "open_by_handle_at",
    "open_tree", "fsopen", "fsmount", "fsconfig", "fspick", "perf_event_open",
    "pivot_root", "query_module", "quotactl", "reboot", "request_key", "set_mempolicy",
    "setns", "settimeofday", "stime", "swapoff", "swapon", "sysfs", "_sysctl", "umount",
    "umount2", "unshare", "uselib", "userfaultfd", "ustat", "vm86", "vm86old",
)  # fmt: skip
DENIED: tuple[str, ...] = MEMORY_ACCESS + KERNEL_SURFACE
# clone() flags creating namespaces (CLONE_NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER,
# NEWPID, NEWNET, NEWTIME): denied one by one (a rule per flag, `flags & f == f`).
CLONE_NAMESPACE_FLAGS = (
    0x00020000, 0x02000000, 0x04000000, 0x08000000, 0x10000000, 0x20000000, 0x40000000,
    0x00000080,
)  # fmt: skip
# Architectures each host can execute (libseccomp names; Docker's are SCMP_ARCH_<upper>).
ARCHES = {
    "x86_64": ("x86_64", "x86", "x32"),
    "aarch64": ("aarch64", "arm"),
}

SCMP_ACT_ALLOW = 0x7FFF0000
SCMP_CMP_MASKED_EQ = 7
SCMP_FLTATR_CTL_OPTIMIZE = 8


def _errno_action(code: int) -> int:
    return 0x00050000 | (code & 0xFFFF)


class SeccompUnavailable(RuntimeError):
    """No filter can be built here (libseccomp missing, unknown architecture)."""


def _arches() -> tuple[str, ...]:
    machine = platform.machine()
    if machine not in ARCHES:
        raise SeccompUnavailable(f"seccomp filter: architecture {machine!r} is not mapped")
    return ARCHES[machine]


def docker_profile() -> str:
    """The JSON profile for `security_opt=["seccomp=<json>"]`."""
    eperm = {"action": "SCMP_ACT_ERRNO", "errnoRet": errno.EPERM}
    rules: list[dict] = [{"names": list(DENIED), **eperm}]
    for flag in CLONE_NAMESPACE_FLAGS:
        arg = {"index": 0, "value": flag, "valueTwo": flag, "op": "SCMP_CMP_MASKED_EQ"}
        rules.append({"names": ["clone"], **eperm, "args": [arg]})
    rules.append({"names": ["clone3"], "action": "SCMP_ACT_ERRNO", "errnoRet": errno.ENOSYS})
    profile = {
        "defaultAction": "SCMP_ACT_ALLOW",
        "architectures": [f"SCMP_ARCH_{a.upper()}" for a in _arches()],
        "syscalls": rules,
    }
    return json.dumps(profile, separators=(",", ":"))


class _ArgCmp(ctypes.Structure):
    _fields_ = [
        ("arg", ctypes.c_uint),
        ("op", ctypes.c_int),
        ("datum_a", ctypes.c_uint64),
        ("datum_b", ctypes.c_uint64),
    ]


def _libseccomp() -> ctypes.CDLL:
    name = ctypes.util.find_library("seccomp") or "libseccomp.so.2"
    try:
        lib = ctypes.CDLL(name, use_errno=True)
    except OSError as exc:
        raise SeccompUnavailable(
            f"libseccomp is not installed ({exc}): apt-get install libseccomp2"
        ) from exc
    lib.seccomp_init.restype = ctypes.c_void_p
    lib.seccomp_init.argtypes = [ctypes.c_uint32]
    lib.seccomp_release.argtypes = [ctypes.c_void_p]
    lib.seccomp_arch_resolve_name.restype = ctypes.c_uint32
    lib.seccomp_arch_resolve_name.argtypes = [ctypes.c_char_p]
    lib.seccomp_arch_add.argtypes = [ctypes.c_void_p, ctypes.c_uint32]
    lib.seccomp_syscall_resolve_name.argtypes = [ctypes.c_char_p]
    lib.seccomp_rule_add_array.argtypes = [
        ctypes.c_void_p,
        ctypes.c_uint32,
        ctypes.c_int,
        ctypes.c_uint,
        ctypes.POINTER(_ArgCmp),
    ]
    lib.seccomp_export_bpf.argtypes = [ctypes.c_void_p, ctypes.c_int]
    lib.seccomp_attr_set.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32]
    return lib


@cache
def bpf_program() -> bytes:
    """The filter as the kernel loads it (`struct sock_filter[]`), built once per process."""
    lib = _libseccomp()
    ctx = lib.seccomp_init(SCMP_ACT_ALLOW)
    if not ctx:
        raise SeccompUnavailable("seccomp_init failed")
    try:
        # a binary tree of syscall numbers instead of a linear list (libseccomp >= 2.5):
        # every allowed syscall of a jailed pytest walks the filter
        lib.seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2)
        for arch in _arches()[1:]:  # the native one is there from seccomp_init
            token = lib.seccomp_arch_resolve_name(arch.encode())
            rc = lib.seccomp_arch_add(ctx, token)
            if rc not in (0, -errno.EEXIST):
                raise SeccompUnavailable(f"seccomp_arch_add({arch}): {os.strerror(-rc)}")

        def add(name: str, action: int, args: list[_ArgCmp]) -> None:
            nr = lib.seccomp_syscall_resolve_name(name.encode())
            if nr == -1:  # __NR_SCMP_ERROR: unknown to this libseccomp (or arch)
                return
            array = (_ArgCmp * max(1, len(args)))(*args)
            rc = lib.seccomp_rule_add_array(ctx, action, nr, len(args), array)
            if rc != 0:
                raise SeccompUnavailable(f"seccomp rule for {name}: {os.strerror(-rc)}")

        eperm = _errno_action(errno.EPERM)
        for name in DENIED:
            add(name, eperm, [])
        for flag in CLONE_NAMESPACE_FLAGS:
            add("clone", eperm, [_ArgCmp(0, SCMP_CMP_MASKED_EQ, flag, flag)])
        add("clone3", _errno_action(errno.ENOSYS), [])
        fd = os.memfd_create("verilearn-seccomp")
        try:
            rc = lib.seccomp_export_bpf(ctx, fd)
            if rc != 0:
                raise SeccompUnavailable(f"seccomp_export_bpf: {os.strerror(-rc)}")
            os.lseek(fd, 0, os.SEEK_SET)
            chunks = []
            while chunk := os.read(fd, 65536):
                chunks.append(chunk)
        finally:
            os.close(fd)
    finally:
        lib.seccomp_release(ctx)
    program = b"".join(chunks)
    if not program or len(program) % 8:
        raise SeccompUnavailable(f"seccomp: exported a {len(program)}-byte program")
    return program


def bpf_fd() -> int:
    """A fresh readable fd at offset 0 holding the program, for `bwrap --seccomp FD`
    (bwrap reads it to the end; the caller closes it after bwrap has started)."""
    fd = os.memfd_create("verilearn-seccomp-bwrap")
    os.write(fd, bpf_program())
    os.lseek(fd, 0, os.SEEK_SET)
    return fd
