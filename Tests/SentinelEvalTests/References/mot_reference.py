#!/usr/bin/env python3
"""The reference figures for Sentinel's tracking metrics: py-motmetrics (CLEAR MOT, ID measures) and TrackEval (HOTA).

Usage: mot_reference.py GT.txt TRACKS.txt [GT.txt TRACKS.txt ...]
Prints one JSON object: per sequence (by its index) and "combined", each with the figures under Sentinel's names.
Ground truth is read as MOTChallenge files are evaluated (rows with confidence 0 ignored); IoU distance, threshold 0.5.
"""
import contextlib
import io
import json
import sys
import warnings

import numpy as np

warnings.filterwarnings("ignore")
# TrackEval prints on import that optional datasets lack their packages (BURST: pycocotools); stdout is the answer.
with contextlib.redirect_stdout(io.StringIO()):
    import motmetrics as mm  # noqa: E402
    from trackeval.metrics import HOTA  # noqa: E402

NAMES = {
    "idf1": "idf1", "idp": "idp", "idr": "idr", "mota": "mota", "motp": "motp", "num_switches": "idSwitches",
    "num_fragmentations": "fragmentations", "mostly_tracked": "mostlyTracked", "partially_tracked": "partiallyTracked",
    "mostly_lost": "mostlyLost", "num_false_positives": "falsePositives", "num_misses": "misses",
    "num_objects": "objects", "num_predictions": "predictions", "precision": "precision", "recall": "recall",
}


def hota_data(gt, ts):
    """TrackEval's input for one sequence, from the same rows motmetrics reads."""
    frames = sorted(set(gt.index.get_level_values(0)) | set(ts.index.get_level_values(0)))
    gt_ids = {v: i for i, v in enumerate(sorted(set(gt.index.get_level_values(1))))}
    tr_ids = {v: i for i, v in enumerate(sorted(set(ts.index.get_level_values(1))))}
    data = {"gt_ids": [], "tracker_ids": [], "similarity_scores": [], "num_gt_ids": len(gt_ids),
            "num_tracker_ids": len(tr_ids), "num_gt_dets": len(gt), "num_tracker_dets": len(ts)}
    by_gt = dict(iter(gt.groupby(level=0)))
    by_ts = dict(iter(ts.groupby(level=0)))
    for f in frames:
        g = by_gt.get(f)
        t = by_ts.get(f)
        gi = np.array([gt_ids[i] for i in g.index.get_level_values(1)], dtype=int) if g is not None else np.zeros(0, int)
        ti = np.array([tr_ids[i] for i in t.index.get_level_values(1)], dtype=int) if t is not None else np.zeros(0, int)
        if len(gi) and len(ti):
            sim = 1 - mm.distances.iou_matrix(g[["X", "Y", "Width", "Height"]].values,
                                              t[["X", "Y", "Width", "Height"]].values, max_iou=1.0)
        else:
            sim = np.zeros((len(gi), len(ti)))
        data["gt_ids"].append(gi)
        data["tracker_ids"].append(ti)
        data["similarity_scores"].append(sim)
    return data


def main(paths):
    pairs = list(zip(paths[0::2], paths[1::2]))
    accumulators, names, hotas = [], [], []
    metric = HOTA()
    out = {}
    for index, (gt_path, ts_path) in enumerate(pairs):
        gt = mm.io.loadtxt(gt_path, fmt="mot15-2D", min_confidence=1)
        ts = mm.io.loadtxt(ts_path, fmt="mot15-2D")
        accumulators.append(mm.utils.compare_to_groundtruth(gt, ts, "iou", distth=0.5))
        names.append(str(index))
        hotas.append(metric.eval_sequence(hota_data(gt, ts)))
    mh = mm.metrics.create()
    summary = mh.compute_many(accumulators, metrics=list(NAMES), names=names, generate_overall=True)
    combined_hota = metric.combine_sequences({n: h for n, h in zip(names, hotas)})
    for row, hota in list(zip(names, hotas)) + [("OVERALL", combined_hota)]:
        figures = {NAMES[k]: float(summary.loc[row, k]) for k in NAMES}
        for field, name in (("HOTA", "hota"), ("DetA", "detA"), ("AssA", "assA"), ("LocA", "locA")):
            figures[name] = float(np.mean(hota[field]))
        out["combined" if row == "OVERALL" else row] = figures
    json.dump(out, sys.stdout, sort_keys=True)


if __name__ == "__main__":
    main(sys.argv[1:])
