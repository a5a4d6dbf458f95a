#!/usr/bin/python3
"""What an emotion model's own code feeds its network, for the crop tests (Debian's python3-onnx and python3-opencv).

  classifier_contract.py graph OUT.onnx CHANNELS HEIGHT WIDTH
      an ONNX graph that returns its input flattened: the classifier's output is then the very tensor it was fed
  classifier_contract.py reference FORMAT IMAGE X Y SIDE OUT.bin
      the tensor FORMAT's own preprocessing makes of the square face box (X, Y, SIDE) of IMAGE, float32 NCHW:
        fer        the mini-Xception as the `fer` package prepares it (its tosquare, offsets, padding and scaling,
                   taken from its source in $EMOTION_REFERENCES/fer/fer.py), the box 10 px wider on each side
        hsemotion  HSEmotion as hsemotion-onnx prepares it (its `preprocess`, from
                   $EMOTION_REFERENCES/hsemotion_onnx/facial_emotions.py) of the RGB crop of the box
        ferplus    FER+ as the ONNX model zoo states it: the grey crop of the box 10 % wider on each side, 64x64, 0-255
  classifier_contract.py constant OUT.onnx VALUE
      an ONNX graph of the mini-Xception's input (1x1x64x64) that outputs seven VALUEs (nan, inf, -0.5, 1e30): a
      network gone wrong
  classifier_contract.py rotate IMAGE DEGREES X Y OUT.png
      IMAGE turned DEGREES (counter-clockwise) about the point (X, Y), edges repeated
Neither package is imported whole (fer needs TensorFlow, hsemotion-onnx onnxruntime): the functions are taken from
their source as written and run alone.
"""
import ast
import os
import sys

import cv2
import numpy as np


def functions(path, names, cls):
    """The methods `names` of class `cls` in the file at `path`, as plain functions (decorators dropped)."""
    tree = ast.parse(open(path, encoding="utf-8").read())
    found = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == cls:
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name in names:
                    item.decorator_list = []
                    module = ast.Module(body=[item], type_ignores=[])
                    scope = {"cv2": cv2, "np": np}
                    exec(compile(module, path, "exec"), scope)
                    found[item.name] = scope[item.name]
    missing = set(names) - set(found)
    if missing:
        sys.exit(f"{path}: no {', '.join(sorted(missing))} in class {cls}")
    return found


def graph(out, channels, height, width):
    import onnx
    from onnx import TensorProto, helper

    size = channels * height * width
    node = helper.make_node("Flatten", ["input"], ["output"], axis=1)
    model = helper.make_model(
        helper.make_graph(
            [node], "identity",
            [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, channels, height, width])],
            [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, size])]),
        opset_imports=[helper.make_opsetid("", 11)])
    model.ir_version = 7
    onnx.checker.check_model(model)
    onnx.save(model, out)


def constant(out, value):
    import onnx
    from onnx import TensorProto, helper

    # A convolution of zero weights over the whole input, its bias the value: the same seven outputs for any face.
    nodes = [
        helper.make_node("Conv", ["input", "weights", "value"], ["sums"], kernel_shape=[64, 64]),
        helper.make_node("Flatten", ["sums"], ["output"], axis=1),
    ]
    initial = [
        helper.make_tensor("weights", TensorProto.FLOAT, [7, 1, 64, 64], [0.0] * (7 * 64 * 64)),
        helper.make_tensor("value", TensorProto.FLOAT, [7], [float(value)] * 7),
    ]
    model = helper.make_model(
        helper.make_graph(
            nodes, "constant",
            [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 1, 64, 64])],
            [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, 7])], initial),
        opset_imports=[helper.make_opsetid("", 11)])
    model.ir_version = 7
    onnx.checker.check_model(model)
    onnx.save(model, out)


def fer(image, x, y, side):
    source = os.path.join(os.environ["EMOTION_REFERENCES"], "fer", "fer.py")
    f = functions(source, ["pad", "tosquare", "__apply_offsets"], "FER")
    padding = int(ast.literal_eval([line.split("=")[1] for line in open(source) if line.startswith("PADDING =")][0]))
    f["pad"].__globals__["PADDING"] = padding

    # Compiled outside its class, the method reads `self.__offsets` unmangled: fer's default offsets, by that name.
    class Self:
        pass

    stub = Self()
    setattr(stub, "__offsets", (10, 10))

    # FER.detect_emotions, step by step: grey, padded, the square box with its offsets, resized, scaled.
    gray = cv2.cvtColor(image, cv2.COLOR_BGR2GRAY)
    gray = f["pad"](gray)
    box = f["tosquare"]((x, y, side, side))
    x1, x2, y1, y2 = f["__apply_offsets"](stub, box)
    x1, y1, x2, y2 = max(0, x1 + padding), max(0, y1 + padding), x2 + padding, y2 + padding
    face = cv2.resize(gray[y1:y2, x1:x2], (64, 64)).astype("float32")
    face = (face / 255.0 - 0.5) * 2.0
    return face[np.newaxis, np.newaxis, ...]


def hsemotion(image, x, y, side):
    source = os.path.join(os.environ["EMOTION_REFERENCES"], "hsemotion_onnx", "facial_emotions.py")
    preprocess = functions(source, ["preprocess"], "HSEmotionRecognizer")["preprocess"]

    class Self:
        img_size = 224

    face = cv2.cvtColor(image[y:y + side, x:x + side], cv2.COLOR_BGR2RGB)
    return preprocess(Self(), face)


def ferplus(image, x, y, side):
    margin = side // 10
    gray = cv2.cvtColor(image[y - margin:y + side + margin, x - margin:x + side + margin], cv2.COLOR_BGR2GRAY)
    return cv2.resize(gray, (64, 64)).astype("float32")[np.newaxis, np.newaxis, ...]


def main():
    if sys.argv[1] == "graph":
        graph(sys.argv[2], *map(int, sys.argv[3:6]))
        return
    if sys.argv[1] == "constant":
        constant(sys.argv[2], sys.argv[3])
        return
    if sys.argv[1] == "rotate":
        image = cv2.imread(sys.argv[2], cv2.IMREAD_COLOR)
        turn = cv2.getRotationMatrix2D((float(sys.argv[4]), float(sys.argv[5])), float(sys.argv[3]), 1.0)
        size = (image.shape[1], image.shape[0])
        cv2.imwrite(sys.argv[6], cv2.warpAffine(image, turn, size, flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE))
        return
    fmt, path = sys.argv[2], sys.argv[3]
    x, y, side = map(int, sys.argv[4:7])
    image = cv2.imread(path, cv2.IMREAD_COLOR)
    tensor = {"fer": fer, "hsemotion": hsemotion, "ferplus": ferplus}[fmt](image, x, y, side)
    np.ascontiguousarray(tensor, dtype="<f4").tofile(sys.argv[7])


if __name__ == "__main__":
    main()
