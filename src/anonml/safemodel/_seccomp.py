"""A seccomp filter for the model sandbox's worker (Linux, x86-64).

The worker's audit hook (:mod:`anonml.safemodel._sandbox`) guards what *Python* code asks for;
native code, and Python entry points that raise no audit event (``_posixsubprocess``,
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
    200, 302, 160, 434, 424, 438,       # tkill, prlimit64, setrlimit, pidfd_open/_send/_getfd
    133, 259, 87, 263, 82, 264, 316,    # mknod(at), unlink(at), rename(at, at2)
    84, 83, 258, 86, 265, 88, 266,      # rmdir, mkdir(at), link(at), symlink(at)
    90, 91, 268, 92, 93, 94, 260,       # chmod family, chown family
    76, 77, 132, 235, 280, 261,         # truncate, ftruncate, utime(s), utimensat, futimesat
    188, 189, 190, 197, 198, 199,       # set/remove xattr
    425, 426, 427, 321, 298, 323,       # io_uring_*, bpf, perf_event_open, userfaultfd
    248, 249, 250,                      # add_key, request_key, keyctl
    165, 166, 155, 161, 308, 272,       # mount, umount2, pivot_root, chroot, setns, unshare
    304, 303, 246, 320, 175, 313, 176,  # open/name_to_handle_at, kexec_load/_file, modules
    169, 167, 168, 163, 179, 300, 440,  # reboot, swapon/off, acct, quotactl, fanotify_init,
                                        # process_madvise
    105, 106, 113, 114, 117, 119, 116, 126, 122, 123,  # set*uid/gid, setgroups, capset,
                                        # setfsuid, setfsgid
    164, 170, 171, 227, 305,            # settimeofday, sethostname, setdomainname,
                                        # clock_settime, clock_adjtime
)
_NR_CLONE, _NR_CLONE3, _NR_OPEN, _NR_OPENAT, _NR_OPENAT2 = 56, 435, 2, 257, 437
_NR_KILL, _NR_TGKILL, _NR_IOCTL = 62, 234, 16


def _ins(code: int, jt: int, jf: int, k: int) -> bytes:
    return struct.pack("HBBI", code, jt, jf, k & 0xFFFFFFFF)


def _arg_low(i: int) -> int:
    return 16 + 8 * i  # seccomp_data.args[i], low 32 bits (little-endian)


def program(pid: int) -> bytes:
    """The filter, as BPF instructions (``pid``: the only process signals may go to)."""
    deny, enosys, allow = (_ins(_RET_K, 0, 0, _RET_ERRNO | _EPERM),
                           _ins(_RET_K, 0, 0, _RET_ERRNO | _ENOSYS), _ins(_RET_K, 0, 0,
                                                                           _RET_ALLOW))
    load_nr = _ins(_LD_W_ABS, 0, 0, 0)
    out = [_ins(_LD_W_ABS, 0, 0, 4), _ins(_JEQ_K, 1, 0, _AUDIT_ARCH_X86_64),
           _ins(_RET_K, 0, 0, _RET_KILL_PROCESS), load_nr,
           _ins(_JGE_K, 0, 1, 0x40000000), deny]  # x32 system calls
    for nr in _DENIED:
        out += [_ins(_JEQ_K, 0, 1, nr), deny]
    for nr in (_NR_CLONE3, _NR_OPENAT2):
        out += [_ins(_JEQ_K, 0, 1, nr), enosys]
    # clone: threads only
    out += [_ins(_JEQ_K, 0, 4, _NR_CLONE), _ins(_LD_W_ABS, 0, 0, _arg_low(0)),
            _ins(_JSET_K, 1, 0, _CLONE_THREAD), deny, allow]
    # open / openat: read-only
    for nr, arg in ((_NR_OPEN, 1), (_NR_OPENAT, 2)):
        out += [load_nr, _ins(_JEQ_K, 0, 4, nr), _ins(_LD_W_ABS, 0, 0, _arg_low(arg)),
                _ins(_JSET_K, 0, 1, _WRITE_FLAGS), deny, allow]
    # kill / tgkill: this process only
    for nr in (_NR_KILL, _NR_TGKILL):
        out += [load_nr, _ins(_JEQ_K, 0, 4, nr), _ins(_LD_W_ABS, 0, 0, _arg_low(0)),
                _ins(_JEQ_K, 1, 0, pid), deny, allow]
    # ioctl: no terminal input injection
    out += [load_nr, _ins(_JEQ_K, 0, 5, _NR_IOCTL), _ins(_LD_W_ABS, 0, 0, _arg_low(1)),
            _ins(_JEQ_K, 1, 0, _TIOCSTI), _ins(_JEQ_K, 0, 1, _TIOCLINUX), deny, allow]
    out.append(allow)
    return b"".join(out)


def install() -> bool:
    """Install the filter in this process; True when the kernel took it."""
    if platform.system() != "Linux" or platform.machine() not in ("x86_64", "AMD64"):
        return False
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
    except OSError:
        return False
    code = program(os.getpid())
    n = len(code) // 8
    buf = ctypes.create_string_buffer(code, len(code))

    class _Prog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    prog = _Prog(n, ctypes.cast(buf, ctypes.c_void_p))
    pr_set_no_new_privs, pr_set_seccomp, seccomp_mode_filter = 38, 22, 2
    if libc.prctl(pr_set_no_new_privs, 1, 0, 0, 0) != 0:
        return False
    return libc.prctl(pr_set_seccomp, seccomp_mode_filter, ctypes.byref(prog), 0, 0) == 0
