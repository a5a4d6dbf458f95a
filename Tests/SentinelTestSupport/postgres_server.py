#!/usr/bin/env python3
"""Debian's PostgreSQL server, owned by a test: a throwaway cluster made with initdb in --folder (user `sentinel`,
trust authentication, on loopback only), started on a free port. Prints "PORT <n>" once the server answers
(pg_isready). Stops it with a fast shutdown (SIGINT) when standard input closes or on SIGTERM; the server dies with
this process in any case (PR_SET_PDEATHSIG), so none is ever left running. Run as root (a test in CI), the cluster
is the `postgres` user's, as PostgreSQL refuses to run as root."""
import argparse
import ctypes
import glob
import os
import pwd
import signal
import socket
import subprocess
import sys
import time

parser = argparse.ArgumentParser()
parser.add_argument("--folder", required=True)
args = parser.parse_args()

versions = sorted(glob.glob("/usr/lib/postgresql/*/bin/postgres"), key=lambda p: int(p.split("/")[4]))
if not versions:
    print("FAILED no /usr/lib/postgresql/*/bin/postgres (apt install postgresql)", flush=True)
    sys.exit(1)
bindir = os.path.dirname(versions[-1])
data = os.path.join(args.folder, "data")
libc = ctypes.CDLL("libc.so.6", use_errno=True)
owner = pwd.getpwnam("postgres") if os.geteuid() == 0 else None
if owner:
    os.chown(args.folder, owner.pw_uid, owner.pw_gid)


def prepare():
    # The test process blocks SIGTERM in every thread, and a child inherits that mask.
    signal.pthread_sigmask(signal.SIG_SETMASK, [])
    if owner:
        os.setgid(owner.pw_gid)
        os.setuid(owner.pw_uid)
    libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG, after the change of user (which clears it)


made = subprocess.run(
    [f"{bindir}/initdb", "-D", data, "-U", "sentinel", "-A", "trust", "-E", "UTF8", "--no-sync", "--no-instructions"],
    preexec_fn=prepare, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
if made.returncode != 0:
    print(f"FAILED initdb: {made.stderr.strip()}", flush=True)
    sys.exit(1)
with socket.socket() as probe:
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
server = subprocess.Popen(
    [f"{bindir}/postgres", "-D", data, "-p", str(port), "-k", args.folder, "-c", "listen_addresses=127.0.0.1",
     "-c", "fsync=off", "-c", "log_min_messages=fatal"],
    preexec_fn=prepare, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def stop(*_):
    server.send_signal(signal.SIGINT)
    try:
        server.wait(timeout=10)
    except subprocess.TimeoutExpired:
        server.kill()
    sys.exit(0)


signal.signal(signal.SIGTERM, stop)
deadline = time.time() + 30
while True:
    if server.poll() is not None:
        print(f"FAILED postgres exited with {server.returncode}", flush=True)
        sys.exit(1)
    ready = subprocess.run([f"{bindir}/pg_isready", "-q", "-h", "127.0.0.1", "-p", str(port)])
    if ready.returncode == 0:
        break
    if time.time() > deadline:
        print("FAILED postgres did not answer", flush=True)
        stop()
    time.sleep(0.1)
print(f"PORT {port}", flush=True)
sys.stdin.read()
stop()
