#!/usr/bin/python3
"""Writes a variable-frame-rate QuickTime clip, as a phone records one: the frames of INPUT, each shown for the
duration the pattern gives it, muxed by GStreamer's qtmux with those timestamps. Prints each frame's start time in
milliseconds, one per line: the times a reader of the container must find.

    vfr_clip.py INPUT OUTPUT DURATION_MS[,DURATION_MS...] [--frames N]

The durations repeat in turn over the frames (40,80: 25 fps and 12.5 fps alternately).
"""
import argparse
import sys

import cv2
import gi

gi.require_version("Gst", "1.0")
from gi.repository import Gst  # noqa: E402


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("input")
    parser.add_argument("output")
    parser.add_argument("durations")
    parser.add_argument("--frames", type=int, default=0)
    args = parser.parse_args()
    durations = [int(d) for d in args.durations.split(",")]
    if not durations or min(durations) <= 0:
        sys.exit("durations must be positive milliseconds")

    video = cv2.VideoCapture(args.input)
    frames = []
    while not args.frames or len(frames) < args.frames:
        ok, frame = video.read()
        if not ok:
            break
        frames.append(frame)
    if not frames:
        sys.exit(f"{args.input}: no frame read")
    height, width = frames[0].shape[:2]

    Gst.init(None)
    pipeline = Gst.parse_launch(
        f"appsrc name=src format=time caps=video/x-raw,format=BGR,width={width},height={height},framerate=0/1 "
        "! videoconvert ! jpegenc quality=60 ! qtmux ! "
        f"filesink location={args.output}")
    source = pipeline.get_by_name("src")
    pipeline.set_state(Gst.State.PLAYING)
    start = 0
    starts = []
    for index, frame in enumerate(frames):
        duration = durations[index % len(durations)]
        buffer = Gst.Buffer.new_wrapped(frame.tobytes())
        buffer.pts = start * Gst.MSECOND
        buffer.duration = duration * Gst.MSECOND
        if source.emit("push-buffer", buffer) != Gst.FlowReturn.OK:
            sys.exit("appsrc refused a frame")
        starts.append(start)
        start += duration
    source.emit("end-of-stream")
    message = pipeline.get_bus().timed_pop_filtered(
        60 * Gst.SECOND, Gst.MessageType.EOS | Gst.MessageType.ERROR)
    pipeline.set_state(Gst.State.NULL)
    if message is None or message.type == Gst.MessageType.ERROR:
        sys.exit(f"muxing failed: {message.parse_error() if message else 'no end of stream within 60 s'}")
    print("\n".join(str(s) for s in starts))


if __name__ == "__main__":
    main()
