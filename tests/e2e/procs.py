"""Ending the processes a test started: one way for services, gospan, backends and servers."""
import os
import signal
import socket
import subprocess


def end_process(proc, readers=(), sig=signal.SIGTERM, timeout=30.0):
    """Sends SIG to PROC (None: none, it is ending by itself) unless it has exited, gives it
    TIMEOUT seconds, then kills it; then waits for READERS, the threads reading its output.
    True when it exited by itself in time, False when it had to be killed."""
    in_time = True
    if proc.poll() is None:
        if sig is not None:
            proc.send_signal(sig)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            in_time = False
            proc.kill()
            proc.wait(10)
    for r in readers:
        r.join()
    return in_time


class Stop(Exception):
    """A signal asked a `serve` command (jaeger.py, kafka.py) to stop."""


def raise_stop(signum, frame):
    """A signal handler that turns the signal into Stop."""
    raise Stop(signum)


def free_ports(n):
    """N distinct loopback TCP ports nothing listens on (all held until every one is chosen)."""
    socks = []
    try:
        for _ in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            socks.append(s)
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def process_schedstat(pid):
    """PID's threads' time on a CPU and time waiting for one so far, in ns (the kernel's
    scheduler statistics: /proc/PID/task/TID/schedstat)."""
    run = wait = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                fields = f.read().split()
        except FileNotFoundError:
            continue  # a thread that exited between the listing and the read
        run += int(fields[0])
        wait += int(fields[1])
    return run, wait
