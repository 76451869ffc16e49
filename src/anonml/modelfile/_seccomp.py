"""A seccomp filter for the model sandbox's worker (Linux, x86-64).

The worker's audit hook (:mod:`anonml.modelfile._sandbox_worker`) guards what *Python* code
asks for; native code, and Python entry points that raise no audit event (``_posixsubprocess``,
``os.pidfd_open``, ``socket.sendmsg`` ...), reach the kernel without it. This filter is the
kernel's half: installed in the worker (with ``PR_SET_NO_NEW_PRIVS``, so no privilege is
needed) after its libraries are imported and before the model file is read, it makes the
kernel answer ``EPERM`` to

- new processes and programs (``fork``, ``vfork``, ``execve``, ``clone`` without
  ``CLONE_THREAD``; ``clone3`` answers ``ENOSYS`` so that the C library falls back to
  ``clone``, which is checked);
- other processes' memory, signals and limits (``ptrace``, ``process_vm_*``, ``kill`` /
  ``tgkill`` to any process but itself, ``pidfd_*``, ``prlimit64``, ``setrlimit``);
- the network (``socket``, ``connect``, ``bind``, ``sendto``, ``sendmsg`` ...);
- opening a file for writing (``open``/``openat`` with a write, create, truncate or append
  flag; ``openat2``, whose flags a filter cannot read, answers ``ENOSYS``), and every call that
  changes the file system (unlink, rename, mkdir, chmod, chown, truncate, links, ``mknod``,
  extended attributes, times);
- escape hatches (``io_uring``, ``bpf``, ``userfaultfd``, ``perf_event_open``, namespaces,
  mounts, modules, keys, uid/gid and capability changes, ``TIOCSTI`` on a terminal).

Everything else (reading files, memory, threads, the worker's own pipes) is allowed. The
filter cannot be removed by the process that installed it, and children (there are none)
would inherit it. On another architecture, or where the kernel refuses filters,
:func:`install` returns False and the sandbox keeps its other limits (``docs/security.md``).

References
----------
Linux ``seccomp(2)`` and ``Documentation/userspace-api/seccomp_filter.rst``.
"""

from __future__ import annotations

import os
import platform
import struct

# BPF opcodes
_LD_W_ABS = 0x20
_JEQ_K = 0x15
_JGE_K = 0x35
_JSET_K = 0x45
_RET_K = 0x06

_AUDIT_ARCH_X86_64 = 0xC000003E
_RET_ALLOW = 0x7FFF0000
_RET_KILL_PROCESS = 0x80000000
_RET_ERRNO = 0x00050000
_EPERM = 1
_ENOSYS = 38

_CLONE_THREAD = 0x00010000
# O_WRONLY | O_RDWR | O_CREAT | O_TRUNC | O_APPEND
_WRITE_FLAGS = 0x1 | 0x2 | 0x40 | 0x200 | 0x400
_TIOCSTI, _TIOCLINUX = 0x5412, 0x541C

# x86-64 system call numbers
_DENIED = (
    101, 310, 311,                      # ptrace, process_vm_readv, process_vm_writev
    59, 322, 57, 58,                    # execve, execveat, fork, vfork
    41, 53, 42, 49, 50, 43, 288,        # socket, socketpair, connect, bind, listen, accept(4)
    44, 46, 307,                        # sendto, sendmsg, sendmmsg
    200, 160, 434, 424, 438,            # tkill, setrlimit, pidfd_open/_send_signal/_getfd
    141, 251, 256, 279,                 # setpriority, ioprio_set, migrate_pages, move_pages
    85, 133, 259, 87, 263, 82, 264, 316,  # creat, mknod(at), unlink(at), rename(at, at2)
    84, 83, 258, 86, 265, 88, 266,      # rmdir, mkdir(at), link(at), symlink(at)
    90, 91, 268, 92, 93, 94, 260,       # chmod family, chown family
    76, 77, 132, 235, 280, 261,         # truncate, ftruncate, utime(s), utimensat, futimesat
    188, 189, 190, 197, 198, 199,       # set/remove xattr
    29, 30, 31, 64, 65, 66, 67, 68, 69, 70, 71, 220,  # System V IPC (outlives the worker)
    240, 241, 242, 243, 244, 245,       # POSIX message queues
    425, 426, 427, 321, 298, 323,       # io_uring_*, bpf, perf_event_open, userfaultfd
    248, 249, 250,                      # add_key, request_key, keyctl
    165, 166, 155, 161, 308, 272,       # mount, umount2, pivot_root, chroot, setns, unshare
    428, 429, 430, 431, 432, 433, 442,  # open_tree, move_mount, fs*, mount_setattr
    304, 303, 246, 320, 175, 313, 176,  # open/name_to_handle_at, kexec_load/_file, modules
    169, 167, 168, 163, 179, 300, 440,  # reboot, swapon/off, acct, quotactl, fanotify_init,
                                        # process_madvise
    172, 173, 103, 153, 134,            # iopl, ioperm, syslog, vhangup, uselib
    105, 106, 113, 114, 117, 119, 116, 126, 122, 123,  # set*uid/gid, setgroups, capset,
                                        # setfsuid, setfsgid
    164, 170, 171, 227, 305,            # settimeofday, sethostname, setdomainname,
                                        # clock_settime, clock_adjtime
)
#: the highest call number reviewed; later ones (new in the kernel) answer ENOSYS, so the C
#: library falls back to an older call this filter knows
_LAST_REVIEWED = 450
_NR_CLONE, _NR_CLONE3, _NR_OPEN, _NR_OPENAT, _NR_OPENAT2 = 56, 435, 2, 257, 437
_NR_KILL, _NR_TGKILL, _NR_IOCTL, _NR_FCNTL, _NR_PRLIMIT64 = 62, 234, 16, 72, 302
#: calls allowed only on this process (first argument 0 or its own pid)
_SELF_ONLY = (129, 297, 142, 144, 203, 314)  # rt_(tg)sigqueueinfo, sched_setparam,
#                                           sched_setscheduler, sched_setaffinity, sched_setattr
#: fcntl commands refused: signals to other processes (F_SETOWN, F_SETOWN_EX, F_SETSIG),
#: leases and directory notices
_FCNTL_REFUSED = (8, 15, 10, 1024, 1026)


def _ins(code: int, jt: int, jf: int, k: int) -> bytes:
    return struct.pack("HBBI", code, jt, jf, k & 0xFFFFFFFF)


def _arg(i: int, high: bool = False) -> int:
    return 16 + 8 * i + (4 if high else 0)  # seccomp_data.args[i] (little-endian words)


_ALLOW = ("ret", _RET_ALLOW)
_DENY = ("ret", _RET_ERRNO | _EPERM)
_NOSYS = ("ret", _RET_ERRNO | _ENOSYS)


def _assemble(ops: list) -> bytes:
    """BPF from a small assembly: ``("ld", off)``, ``("ret", k)``, ``("label", name)`` and
    ``(jump, k, if_true, if_false)`` with ``jump`` in jeq/jge/jset and targets a label name or
    None (the next instruction)."""
    code = {"jeq": _JEQ_K, "jge": _JGE_K, "jset": _JSET_K}
    labels, n = {}, 0
    for op in ops:
        if op[0] == "label":
            labels[op[1]] = n
        else:
            n += 1
    out, i = [], 0
    for op in ops:
        if op[0] == "label":
            continue
        if op[0] == "ld":
            out.append(_ins(_LD_W_ABS, 0, 0, op[1]))
        elif op[0] == "ret":
            out.append(_ins(_RET_K, 0, 0, op[1]))
        else:
            jt, jf = (0 if t is None else labels[t] - (i + 1) for t in op[2:4])
            if not (0 <= jt <= 255 and 0 <= jf <= 255):
                raise ValueError("seccomp jump out of range")
            out.append(_ins(code[op[0]], jt, jf, op[1]))
        i += 1
    return b"".join(out)


def program(pid: int) -> bytes:
    """The filter, as BPF instructions (``pid``: the process that calls may target)."""
    ops: list = [("ld", 4), ("jeq", _AUDIT_ARCH_X86_64, None, "kill"), ("ld", 0),
                 ("jge", 0x40000000, "deny0", None),  # x32 system calls
                 ("jge", _LAST_REVIEWED + 1, "nosys0", None)]
    for nr in _DENIED:
        ops += [("jeq", nr, "deny0", None)]
    ops += [("jeq", _NR_CLONE3, "nosys0", None), ("jeq", _NR_OPENAT2, "nosys0", None),
            ("jge", 0, "checks", None), ("label", "kill"), ("ret", _RET_KILL_PROCESS),
            ("label", "deny0"), _DENY, ("label", "nosys0"), _NOSYS, ("label", "checks")]
    block = 0

    def only(nr: int, body: list) -> None:
        nonlocal block
        end = f"end{block}"
        block += 1
        ops.extend([("ld", 0), ("jeq", nr, None, end), *body, ("label", end)])

    only(_NR_CLONE, [("ld", _arg(0)), ("jset", _CLONE_THREAD, None, "deny1"), _ALLOW,
                     ("label", "deny1"), _DENY])
    for nr, arg in ((_NR_OPEN, 1), (_NR_OPENAT, 2)):
        lab = f"ro{nr}"
        only(nr, [("ld", _arg(arg)), ("jset", _WRITE_FLAGS, lab, None), _ALLOW,
                  ("label", lab), _DENY])
    for nr in (_NR_KILL, _NR_TGKILL):
        lab = f"self{nr}"
        only(nr, [("ld", _arg(0)), ("jeq", pid, lab, None), _DENY, ("label", lab), _ALLOW])
    for nr in _SELF_ONLY:
        lab = f"self{nr}"
        only(nr, [("ld", _arg(0)), ("jeq", 0, lab, None), ("jeq", pid, lab, None), _DENY,
                  ("label", lab), _ALLOW])
    # prlimit64: reading this process's limits only (new limit NULL)
    only(_NR_PRLIMIT64, [("ld", _arg(0)), ("jeq", 0, "pl_pid", None),
                         ("jeq", pid, "pl_pid", "pl_deny"), ("label", "pl_pid"),
                         ("ld", _arg(2)), ("jeq", 0, None, "pl_deny"),
                         ("ld", _arg(2, high=True)), ("jeq", 0, None, "pl_deny"), _ALLOW,
                         ("label", "pl_deny"), _DENY])
    only(_NR_FCNTL, [("ld", _arg(1)), *[("jeq", c, "fc_deny", None) for c in _FCNTL_REFUSED],
                     _ALLOW, ("label", "fc_deny"), _DENY])
    only(_NR_IOCTL, [("ld", _arg(1)), ("jeq", _TIOCSTI, "io_deny", None),
                     ("jeq", _TIOCLINUX, "io_deny", None), _ALLOW, ("label", "io_deny"), _DENY])
    ops.append(_ALLOW)
    return _assemble(ops)


def install() -> bool:
    """Install the filter on every thread of this process (``SECCOMP_FILTER_FLAG_TSYNC``);
    True when the kernel took it for all of them."""
    if platform.system() != "Linux" or platform.machine() not in ("x86_64", "AMD64"):
        return False
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
    except OSError:
        return False
    code = program(os.getpid())
    buf = ctypes.create_string_buffer(code, len(code))

    class _Prog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    prog = _Prog(len(code) // 8, ctypes.cast(buf, ctypes.c_void_p))
    pr_set_no_new_privs, nr_seccomp, set_mode_filter, flag_tsync = 38, 317, 1, 1
    if libc.prctl(pr_set_no_new_privs, 1, 0, 0, 0) != 0:
        return False
    libc.syscall.restype = ctypes.c_long
    if libc.syscall(ctypes.c_long(nr_seccomp), ctypes.c_long(set_mode_filter),
                    ctypes.c_long(flag_tsync), ctypes.byref(prog)) != 0:
        return False  # a thread that could not take it is named by the return value
    return filtered(os.getpid())


def filtered(pid: int) -> bool:
    """True when every thread of process ``pid`` runs under a seccomp filter (read from
    ``/proc``, so the auditor can check a worker without believing it)."""
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
        for tid in tasks:
            with open(f"/proc/{pid}/task/{tid}/status") as fh:
                if not any(line.split() == ["Seccomp:", "2"] for line in fh):
                    return False
        return bool(tasks)
    except OSError:
        return False


def drop_capabilities() -> None:
    """Give up every capability (as root, the kernel's checks would otherwise let this process
    past them): the bounding set, the ambient set, then the effective, permitted and
    inheritable sets. A no-op for a process without capabilities."""
    if platform.system() != "Linux":
        return
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
    except OSError:
        return
    pr_capbset_drop, pr_cap_ambient, ambient_clear_all = 24, 47, 4
    for cap in range(64):
        libc.prctl(pr_capbset_drop, cap, 0, 0, 0)  # EINVAL past the last capability
    libc.prctl(pr_cap_ambient, ambient_clear_all, 0, 0, 0)

    class _Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    class _Data(ctypes.Structure):
        _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                    ("inheritable", ctypes.c_uint32)]

    header = _Header(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3
    data = (_Data * 2)()
    libc.syscall(ctypes.c_long(126), ctypes.byref(header), ctypes.byref(data))  # capset
