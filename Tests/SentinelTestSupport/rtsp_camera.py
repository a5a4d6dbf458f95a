#!/usr/bin/python3
"""A camera stand-in for tests: Debian's GStreamer RTSP server playing recordings in real time, as a camera sends.

Usage: rtsp_camera.py [--port N] [--h264] [--loop] [--user NAME:PASSWORD] [--exit-with-stdin] MOUNT=FILE [MOUNT=FILE ...]

Each MOUNT (for example cam1) serves FILE at rtsp://127.0.0.1:PORT/MOUNT, demuxed and sent without re-encoding
(MPEG-4 part 2 in .mp4, Motion JPEG in .avi), paced by the pipeline clock, with RTP timestamps from the file. With
--h264 it is sent as most cameras send, H.264 (decoded by gstreamer1.0-libav, encoded by OpenH264 at 2 Mbit/s with a
keyframe every second). A camera's stream does not end: with --loop, each recording plays again from its start when
it ends, its timestamps running on (decoded by python3-opencv and encoded again: H.264, else Motion JPEG); without, the stream ends with the file. With --user, every mount asks for that user and password (Basic), as a camera does.
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

import cv2
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

# What a looped recording's decoded frames are sent as: H.264, or Motion JPEG.
LOOPED_H264 = "openh264enc bitrate=2000000 gop-size=15 ! h264parse ! rtph264pay name=pay0 pt=96 config-interval=1"
LOOPED_MJPEG = "jpegenc ! rtpjpegpay name=pay0 pt=26"


def looped(path, encoder):
    """A launch line that sends `path`'s frames over and over, and the function that feeds them once the media is
    made: each frame is pushed with its time in the endless stream, and the sink's clock paces the pushes."""
    video = cv2.VideoCapture(path)
    fps = video.get(cv2.CAP_PROP_FPS)
    width, height = int(video.get(cv2.CAP_PROP_FRAME_WIDTH)), int(video.get(cv2.CAP_PROP_FRAME_HEIGHT))
    video.release()
    if not (fps > 0 and width > 0 and height > 0):
        sys.exit(f"rtsp_camera: {path}: OpenCV cannot read its rate and size")
    caps = f"video/x-raw,format=BGR,width={width},height={height},framerate={round(fps * 1000)}/1000"
    launch = (f"( appsrc name=frames format=time block=true max-bytes={width * height * 3 * 4} caps={caps} "
              f"! videoconvert ! video/x-raw,format=I420 ! {encoder} )")

    def feed(source):
        number = 0
        while True:
            video = cv2.VideoCapture(path)
            while True:
                ok, frame = video.read()
                if not ok:
                    break
                buffer = Gst.Buffer.new_wrapped(frame.tobytes())
                buffer.pts = int(number * Gst.SECOND / fps)
                buffer.duration = int(Gst.SECOND / fps)
                number += 1
                if source.emit("push-buffer", buffer) != Gst.FlowReturn.OK:
                    return  # the media was torn down
            video.release()

    return launch, feed


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--h264", action="store_true")
    parser.add_argument("--loop", action="store_true")
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
        if args.loop:
            launch, feed = looped(path, LOOPED_H264 if args.h264 else LOOPED_MJPEG)
            factory.set_launch(launch)
            factory.connect(
                "media-configure",
                lambda _, media, feed=feed: threading.Thread(
                    target=feed, args=(media.get_element().get_by_name("frames"),), daemon=True).start())
        elif args.h264:
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
