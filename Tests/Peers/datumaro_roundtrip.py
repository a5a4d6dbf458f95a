"""Sentinel's label files as datumaro (PyPI, installed by the Makefile into .build/datumaro) reads and writes them.

Usage: datumaro_roundtrip.py IN OUT. IN holds Sentinel's exports: cvat/annotations.xml (CVAT for video 1.1) and
mot/gt/gt.txt (MOT ground truth). datumaro imports both ('cvat', 'mot_seq'), and exports the MOT dataset again as
'mot_seq_gt' (OUT/mot/gt/gt.txt) and 'cvat' (CVAT for images 1.1, OUT/cvat/default.xml), for Sentinel to read back.
Prints one JSON object: what datumaro saw in each import.
"""

import json
import logging
import sys

import datumaro
from datumaro.components.dataset import Dataset

logging.disable(logging.WARNING)
source, out = sys.argv[1], sys.argv[2]


def summary(dataset):
    boxes = [
        (item, a) for item in dataset for a in item.annotations if a.type.name == "bbox" and not a.attributes.get("outside")
    ]
    return {
        "items": len(dataset),
        "boxes": len(boxes),
        "tracks": len({a.attributes.get("track_id") for _, a in boxes}),
        "occluded": sum(1 for _, a in boxes if a.attributes.get("occluded")),
        "labels": sorted({dataset.categories()[datumaro.AnnotationType.label][a.label].name for _, a in boxes}),
    }


cvat = Dataset.import_from(f"{source}/cvat", "cvat")
mot = Dataset.import_from(f"{source}/mot", "mot_seq")
mot.export(f"{out}/mot", "mot_seq_gt", save_media=False)
mot.export(f"{out}/cvat", "cvat", save_media=False)
print(json.dumps({"datumaro": datumaro.__version__, "cvat": summary(cvat), "mot": summary(mot)}))
