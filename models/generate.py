#!/usr/bin/env python3
"""Writes the per-layer gradient profiles of ResNet-50, VGG-16 and BERT-base as JSON.

torch/torchvision are not available on the target machines, so the layers are derived here from
the architectures' published definitions (the same ones torchvision.models.resnet50, vgg16 and
HuggingFace's bert-base-uncased build). Every total is checked against the well-known parameter
count of the reference implementation, so a slip in the derivation fails loudly.

A "layer" is the unit a framework hands to the communication library as one gradient tensor group:
a convolution together with the batch norm that follows it (ResNet-50), a convolution or fully
connected layer with its bias (VGG-16), and the attention block or the feed-forward block of an
encoder layer with its LayerNorm (BERT). Layers are listed in forward order (index 0 nearest the
input), which is what the policy's priority_class(layer, num_layers) expects.

Each layer records `params` (trainable parameters, so gradient bytes = 4 * params in float32) and
`macs` (forward multiply-accumulates for one sample), which the simulator uses to split a model's
compute time over its layers.

Usage: python3 models/generate.py [output_dir]   (default: the directory of this script)
"""

import json
import os
import sys


def conv_out(size, kernel, stride, padding):
    return (size + 2 * padding - kernel) // stride + 1


def resnet50():
    """torchvision resnet50: Bottleneck blocks [3, 4, 6, 3], width 64, expansion 4."""
    layers = []
    size = 224

    def conv_bn(name, cin, cout, kernel, stride, padding, size_in):
        size_out = conv_out(size_in, kernel, stride, padding)
        weights = kernel * kernel * cin * cout  # torchvision convs have bias=False
        bn = 2 * cout  # BatchNorm2d weight and bias (running stats are buffers, not gradients)
        layers.append({
            "name": name,
            "params": weights + bn,
            "macs": weights * size_out * size_out,
        })
        return size_out

    size = conv_bn("conv1", 3, 64, 7, 2, 3, size)
    size = conv_out(size, 3, 2, 1)  # max pool
    cin = 64
    for stage, (blocks, width, first_stride) in enumerate(
            [(3, 64, 1), (4, 128, 2), (6, 256, 2), (3, 512, 2)], start=1):
        for block in range(blocks):
            stride = first_stride if block == 0 else 1
            prefix = f"layer{stage}.{block}"
            s1 = conv_bn(prefix + ".conv1", cin, width, 1, 1, 0, size)
            s2 = conv_bn(prefix + ".conv2", width, width, 3, stride, 1, s1)
            s3 = conv_bn(prefix + ".conv3", width, width * 4, 1, 1, 0, s2)
            if block == 0:
                conv_bn(prefix + ".downsample", cin, width * 4, 1, stride, 0, size)
            size = s3
            cin = width * 4
    layers.append({"name": "fc", "params": 2048 * 1000 + 1000, "macs": 2048 * 1000})
    return {"model": "resnet50", "source": "torchvision.models.resnet50", "input": "3x224x224",
            "expected_params": 25_557_032, "layers": layers}


def vgg16():
    """torchvision vgg16 (configuration D, no batch norm)."""
    cfg = [64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M"]
    layers = []
    size = 224
    cin = 3
    index = 0
    for item in cfg:
        if item == "M":
            size //= 2
            continue
        weights = 3 * 3 * cin * item
        layers.append({"name": f"features.conv{index}", "params": weights + item,
                       "macs": weights * size * size})
        cin = item
        index += 1
    for i, (fin, fout) in enumerate([(512 * 7 * 7, 4096), (4096, 4096), (4096, 1000)]):
        layers.append({"name": f"classifier.fc{i}", "params": fin * fout + fout,
                       "macs": fin * fout})
    return {"model": "vgg16", "source": "torchvision.models.vgg16", "input": "3x224x224",
            "expected_params": 138_357_544, "layers": layers}


def bert_base():
    """bert-base-uncased: vocab 30522, hidden 768, 12 layers, 12 heads, FFN 3072, 512 positions.

    MACs are per sample at sequence length 128.
    """
    hidden, ffn, vocab, positions, seq = 768, 3072, 30522, 512, 128
    layernorm = 2 * hidden
    layers = [{
        "name": "embeddings",
        "params": (vocab + positions + 2) * hidden + layernorm,
        "macs": 0,  # table look-ups
    }]
    for i in range(12):
        attention = 4 * (hidden * hidden + hidden) + layernorm  # Q, K, V, output projection
        layers.append({
            "name": f"encoder.{i}.attention",
            "params": attention,
            # projections plus the score and context products (seq x seq x hidden each)
            "macs": 4 * hidden * hidden * seq + 2 * seq * seq * hidden,
        })
        feed_forward = (hidden * ffn + ffn) + (ffn * hidden + hidden) + layernorm
        layers.append({
            "name": f"encoder.{i}.ffn",
            "params": feed_forward,
            "macs": 2 * hidden * ffn * seq,
        })
    layers.append({"name": "pooler", "params": hidden * hidden + hidden, "macs": hidden * hidden})
    return {"model": "bert_base", "source": "bert-base-uncased (HuggingFace BertModel)",
            "input": "sequence length 128", "expected_params": 109_482_240, "layers": layers}


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    for build in (resnet50, vgg16, bert_base):
        model = build()
        total = sum(layer["params"] for layer in model["layers"])
        expected = model.pop("expected_params")
        if total != expected:
            raise SystemExit(f"{model['model']}: derived {total} parameters, expected {expected}")
        model["total_params"] = total
        model["num_layers"] = len(model["layers"])
        path = os.path.join(out_dir, model["model"] + ".json")
        with open(path, "w") as f:
            json.dump(model, f, indent=1)
            f.write("\n")
        print(f"{path}: {model['num_layers']} layers, {total} parameters")


if __name__ == "__main__":
    main()
