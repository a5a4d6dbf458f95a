#!/usr/bin/env python3
"""Debian's mosquitto broker, owned by a test: started on a loopback port (a free one, or --port), with persistence in
--folder so that sessions survive a restart, and optionally a password file (--user NAME:PASSWORD) and an ACL
file (--acl PATH), the settings of a shipped configuration (--shipped PATH: every line but those naming the files
above, which are the test's), any further configuration lines (--config LINE, e.g. a bridge's), and its log in a file
(--log PATH). Prints
"PORT <n>" once the broker accepts connections. Ends the broker gracefully (SIGTERM, so it saves its sessions) when
standard input closes or on SIGTERM; the broker dies with this process in any case (PR_SET_PDEATHSIG), so none is
ever left running."""
import argparse
import ctypes
import os
import signal
import socket
import subprocess
import sys
import time

parser = argparse.ArgumentParser()
parser.add_argument("--port", type=int, default=0)
parser.add_argument("--folder", required=True)
parser.add_argument("--user", action="append", default=[])
parser.add_argument("--acl")
parser.add_argument("--shipped")
parser.add_argument("--config", action="append", default=[])
parser.add_argument("--log")
args = parser.parse_args()

port = args.port
if port == 0:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]

config = os.path.join(args.folder, "mosquitto.conf")
lines = [
    f"listener {port} 127.0.0.1",
    "persistence true",
    f"persistence_location {args.folder}/",
    f"log_dest file {args.log}" if args.log else "log_dest none",
    # Run as root (a test), mosquitto would otherwise switch to its own user, who cannot read the test folder.
    "user root" if os.geteuid() == 0 else "",
]
if args.user:
    passwords = os.path.join(args.folder, "passwords")
    open(passwords, "w").close()
    os.chmod(passwords, 0o600)
    for entry in args.user:
        name, password = entry.split(":", 1)
        subprocess.run(["mosquitto_passwd", "-b", passwords, name, password], check=True)
    lines += ["allow_anonymous false", f"password_file {passwords}"]
if args.acl:
    lines.append(f"acl_file {args.acl}")
else:
    lines.append("allow_anonymous true")
if args.shipped:
    for line in open(args.shipped):
        setting = line.split("#", 1)[0].strip()
        if setting and setting.split()[0] not in ("password_file", "acl_file", "allow_anonymous"):
            lines.append(setting)
lines += args.config
with open(config, "w") as f:
    f.write("\n".join(lines) + "\n")

libc = ctypes.CDLL("libc.so.6", use_errno=True)


def prepare():
    # The test process blocks SIGTERM in every thread (its service group reads signals through a signalfd), and a
    # child inherits that mask: the broker would never see SIGTERM.
    signal.pthread_sigmask(signal.SIG_SETMASK, [])
    libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG: the broker dies with this process


broker = subprocess.Popen(
    ["/usr/sbin/mosquitto", "-c", config], preexec_fn=prepare, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
)


def stop(*_):
    broker.terminate()
    try:
        broker.wait(timeout=10)
    except subprocess.TimeoutExpired:
        broker.kill()
    sys.exit(0)


signal.signal(signal.SIGTERM, stop)
deadline = time.time() + 10
while True:
    if broker.poll() is not None:
        print(f"FAILED mosquitto exited with {broker.returncode}", flush=True)
        sys.exit(1)
    try:
        socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
        break
    except OSError:
        if time.time() > deadline:
            print("FAILED mosquitto did not listen", flush=True)
            stop()
        time.sleep(0.05)
print(f"PORT {port}", flush=True)
sys.stdin.read()
stop()
