#!/usr/bin/python3
"""A camera stand-in for tests: Debian's GStreamer RTSP server playing recordings in real time, as a camera sends.

Usage: rtsp_camera.py [--port N] [--h264] [--user NAME:PASSWORD] [--exit-with-stdin] MOUNT=FILE [MOUNT=FILE ...]

Each MOUNT (for example cam1) serves FILE at rtsp://127.0.0.1:PORT/MOUNT, demuxed and sent without re-encoding
(MPEG-4 part 2 in .mp4, Motion JPEG in .avi), paced by the pipeline clock, with RTP timestamps from the file. With
--h264 it is sent as most cameras send, H.264 (decoded by gstreamer1.0-libav, encoded by OpenH264 at 2 Mbit/s with a
keyframe every second). With --user, every mount asks for that user and password (Basic), as a camera does.
Prints "PORT n" once listening. Runs until SIGTERM or SIGINT, as a camera runs (also in the background of a script,
whose standard input is closed); with --exit-with-stdin it also ends when its standard input closes, so a test that
dies takes it along.
Runs on Debian's /usr/bin/python3 with python3-gi and gir1.2-gst-rtsp-server-1.0.
"""
import argparse
import os
import signal
import sys
import threading

import gi

gi.require_version("Gst", "1.0")
gi.require_version("GstRtspServer", "1.0")
from gi.repository import GLib, Gst, GstRtspServer  # noqa: E402

PAYLOADERS = {
    ".mp4": "qtdemux ! mpeg4videoparse ! rtpmp4vpay name=pay0 pt=96 config-interval=1",
    ".avi": "avidemux ! jpegparse ! rtpjpegpay name=pay0 pt=26",
}

H264 = ("decodebin ! videoconvert ! openh264enc bitrate=2000000 gop-size=15 ! h264parse "
        "! rtph264pay name=pay0 pt=96 config-interval=1")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--h264", action="store_true")
    parser.add_argument("--user", metavar="NAME:PASSWORD")
    parser.add_argument("--exit-with-stdin", action="store_true")
    parser.add_argument("mounts", nargs="+", metavar="MOUNT=FILE")
    args = parser.parse_args()
    Gst.init(None)
    server = GstRtspServer.RTSPServer()
    server.set_address("127.0.0.1")
    server.set_service(str(args.port))
    if args.user:
        name, _, password = args.user.partition(":")
        auth = GstRtspServer.RTSPAuth()
        token = GstRtspServer.RTSPToken()
        token.set_string(GstRtspServer.RTSP_TOKEN_MEDIA_FACTORY_ROLE, "viewer")
        auth.add_basic(GstRtspServer.RTSPAuth.make_basic(name, password), token)
        server.set_auth(auth)
    for mount in args.mounts:
        name, _, path = mount.partition("=")
        extension = os.path.splitext(path)[1].lower()
        if not os.path.isfile(path) or extension not in PAYLOADERS:
            sys.exit(f"rtsp_camera: {path}: not a readable .mp4 or .avi file")
        factory = GstRtspServer.RTSPMediaFactory()
        if args.h264:
            factory.set_launch(f'( filesrc location="{path}" ! {H264} )')
        else:
            factory.set_launch(f'( filesrc location="{path}" ! {PAYLOADERS[extension]} )')
        if args.user:
            permissions = GstRtspServer.RTSPPermissions()
            permissions.add_permission_for_role("viewer", GstRtspServer.RTSP_PERM_MEDIA_FACTORY_ACCESS, True)
            permissions.add_permission_for_role("viewer", GstRtspServer.RTSP_PERM_MEDIA_FACTORY_CONSTRUCT, True)
            factory.set_permissions(permissions)
        # One playback per mount shared by every client, as a camera has one sensor.
        factory.set_shared(True)
        server.get_mount_points().add_factory("/" + name, factory)
    loop = GLib.MainLoop()
    if server.attach(None) == 0:
        sys.exit(f"rtsp_camera: cannot listen on port {args.port}")
    print(f"PORT {server.get_bound_port()}", flush=True)

    for number in (signal.SIGTERM, signal.SIGINT):
        GLib.unix_signal_add(GLib.PRIORITY_HIGH, number, loop.quit)
    if args.exit_with_stdin:

        def watch_stdin():
            sys.stdin.read()
            os._exit(0)

        threading.Thread(target=watch_stdin, daemon=True).start()
    loop.run()


if __name__ == "__main__":
    main()
