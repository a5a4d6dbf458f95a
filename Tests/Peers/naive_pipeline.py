#!/usr/bin/python3
"""The program a user would write instead of Sentinel: a per-frame loop over Debian's python3-opencv (4.6).

Usage: naive_pipeline.py VIDEO DETECTOR_ONNX EMOTION_ONNX LONGEST_SIDE SCORE NMS

Decodes every frame, detects faces with RetinaFace-MobileNet0.25 (the model `sentinel models setup` converts) at the
same scale, score and NMS as Sentinel, and classifies the emotion of every face in every frame with the same FER
model. Prints one JSON line per frame with the boxes (for scoring against ground truth), then a summary line
{"frames": N, "seconds": S}. `sentinel bench pipeline` runs it beside Sentinel.
"""
import json
import sys
import time

import cv2
import numpy as np

STRIDES = [8, 16, 32]
SIDES = [(16, 32), (64, 128), (256, 512)]


def anchors(width, height):
    rows = []
    for stride, sides in zip(STRIDES, SIDES):
        ny, nx = -(-height // stride), -(-width // stride)
        ys, xs = np.meshgrid(np.arange(ny), np.arange(nx), indexing="ij")
        centres = np.stack([(xs.ravel() + 0.5) * stride, (ys.ravel() + 0.5) * stride], axis=1)
        centre = np.repeat(centres, 2, axis=0)
        side = np.tile(np.array(sides, dtype=np.float32), len(centres))
        rows.append(np.column_stack([centre, side]))
    return np.concatenate(rows).astype(np.float32)


def main():
    video, detector_path, emotion_path, longest, score, nms = sys.argv[1:7]
    longest, score, nms = int(longest), float(score), float(nms)
    detector = cv2.dnn.readNetFromONNX(detector_path)
    emotion = cv2.dnn.readNetFromONNX(emotion_path)
    capture = cv2.VideoCapture(video)
    cache = {}
    frames, start = 0, time.time()
    while True:
        ok, frame = capture.read()
        if not ok:
            break
        height, width = frame.shape[:2]
        factor = min(1.0, longest / max(width, height))
        scaled = cv2.resize(frame, None, fx=factor, fy=factor, interpolation=cv2.INTER_AREA) if factor < 1 else frame
        size = (-(-scaled.shape[1] // 32) * 32, -(-scaled.shape[0] // 32) * 32)
        detector.setInput(cv2.dnn.blobFromImage(scaled, 1.0, size, (104, 117, 127), False, False), "input")
        loc, conf = detector.forward(["loc", "conf"])
        if size not in cache:
            cache[size] = anchors(*size)
        prior = cache[size]
        keep = conf[0, :, 1] > score
        a, l = prior[keep], loc[0][keep]
        wh = a[:, 2:3] * np.exp(l[:, 2:4] * 0.2)
        centre = a[:, :2] + l[:, :2] * 0.1 * a[:, 2:3]
        # Network pixels to original pixels: undo the stretch to multiples of 32, then the downscale.
        sx, sy = size[0] / scaled.shape[1] * factor, size[1] / scaled.shape[0] * factor
        boxes = np.column_stack([(centre - wh / 2) / [sx, sy], wh / [sx, sy]])
        scores = conf[0, keep, 1]
        chosen = cv2.dnn.NMSBoxes(boxes.tolist(), scores.tolist(), score, nms) if len(boxes) else []
        faces = []
        grey = cv2.cvtColor(frame, cv2.COLOR_BGR2GRAY)
        for i in np.array(chosen).reshape(-1):
            x, y, w, h = boxes[i]
            crop = grey[max(0, int(y)):int(y + h), max(0, int(x)):int(x + w)]
            if crop.size:
                emotion.setInput(cv2.dnn.blobFromImage(cv2.resize(crop, (64, 64)), 1 / 127.5, (64, 64), 127.5))
                label = int(np.argmax(emotion.forward()))
            faces.append({"x": float(x), "y": float(y), "width": float(w), "height": float(h), "emotion": label})
        print(json.dumps({"frame": frames, "faces": faces}))
        frames += 1
    print(json.dumps({"frames": frames, "seconds": time.time() - start}))


if __name__ == "__main__":
    main()
