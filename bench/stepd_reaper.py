#!/usr/bin/python3
"""stepd_reaper.py OUT -- CMD...: run CMD (slurmd) as the child of a
subreaper and log the exact resource use of every slurmstepd it starts.

slurmd double-forks slurmstepd, so slurmstepd is an orphan whose exit
status (and rusage) nobody collects.  This process marks itself a child
subreaper (prctl PR_SET_CHILD_SUBREAPER): the orphaned slurmstepd is
re-parented to it, and wait4() then returns the kernel's exact rusage of
the whole process (every thread, living or exited; plus the children it
reaped itself: the step's tasks): ru_utime and ru_stime in microseconds
(from the scheduler's runtime accounting, not ticks), ru_maxrss the peak
resident set (VmHWM) in KiB.  The step name is read from the command
line while the process runs (polled every 20 ms), since a zombie's is
empty.  One line per slurmstepd is appended to OUT:
    <step title> <utime_us> <stime_us> <maxrss_kib>
SIGTERM/SIGINT are forwarded to CMD; exits when CMD has exited.
"""
import ctypes
import os
import signal
import sys
import time

PR_SET_CHILD_SUBREAPER = 36


def main():
    out = sys.argv[1]
    cmd = sys.argv[3:] if sys.argv[2] == "--" else sys.argv[2:]
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        sys.exit("stepd_reaper: prctl: errno %d" % ctypes.get_errno())
    child = os.fork()
    if child == 0:
        os.execvp(cmd[0], cmd)
    signal.signal(signal.SIGTERM, lambda s, f: os.kill(child, s))
    signal.signal(signal.SIGINT, lambda s, f: os.kill(child, s))
    me = os.getpid()
    names = {}
    done = False
    while not done:
        # Name our slurmstepd children while they run.
        for p in os.listdir("/proc"):
            # slurmstepd sets its title ("slurmstepd: [JOB.STEP]") a
            # little after exec: read again until it has one.
            if not p.isdigit() or int(p) == child or \
                    "[" in names.get(int(p), ""):
                continue
            try:
                with open("/proc/%s/stat" % p) as f:
                    st = f.read()
                if int(st[st.rindex(")") + 2:].split()[1]) != me:
                    continue
                with open("/proc/%s/cmdline" % p, "rb") as f:
                    cl = f.read().replace(b"\0", b" ").decode().strip()
                if cl:
                    names[int(p)] = cl
            except (OSError, ValueError):
                pass
        while True:
            try:
                pid, status, ru = os.wait4(-1, os.WNOHANG)
            except ChildProcessError:
                done = True
                break
            if pid == 0:
                break
            if pid == child:
                done = True
                continue
            name = names.pop(pid, "?").replace(" ", "_")
            with open(out, "a") as f:
                f.write("%s %d %d %d\n" % (name,
                        round(ru.ru_utime * 1e6), round(ru.ru_stime * 1e6),
                        ru.ru_maxrss))
        time.sleep(0.02)


main()
