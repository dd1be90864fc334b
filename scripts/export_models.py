#!/usr/bin/env python3
"""Exports PyTorch models to ONNX with random weights, together with one input and torch's outputs
in the ONNX test-data layout (model.onnx, test_data_set_0/input_0.pb, output_0.pb), so that tessel's
tests and benchmarks compare with torch on real exported models. Nothing here is committed: the
tests run it into a temporary folder.

Usage: export_models.py OUT_DIR [MODEL ...]   (default: every model below)
Models: resnet18, resnet50, mobilenet_v2 (torchvision, random weights), bert_tiny, bert_base (an
encoder built from torch.nn layers: embeddings, self-attention, GELU feed-forward, layer norms).
Options through the environment: BATCH (default 1), SEQ (default 16), IMAGE (default 64), OPSET (17).
"""
import inspect
import os
import sys

import numpy as np
import onnx
from onnx import numpy_helper
import torch
import torch.nn as nn


class Encoder(nn.Module):
    """A BERT-style encoder from torch.nn layers (post-norm, GELU), token ids in, hidden states out."""

    def __init__(self, vocab, hidden, layers, heads, ffn, max_len=512):
        super().__init__()
        self.tokens = nn.Embedding(vocab, hidden)
        self.positions = nn.Embedding(max_len, hidden)
        self.norm = nn.LayerNorm(hidden)
        layer = nn.TransformerEncoderLayer(hidden, heads, ffn, dropout=0.0, activation="gelu", batch_first=True)
        self.layers = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        # TransformerEncoder deep-copies one layer: every layer gets weights of its own, as a trained
        # model has (identical copies would let a runtime keep one set in cache).
        for clone in self.layers.layers:
            for p in clone.parameters():
                if p.dim() > 1:
                    nn.init.xavier_uniform_(p)

    def forward(self, ids):
        positions = torch.arange(ids.shape[1], device=ids.device).unsqueeze(0)
        return self.layers(self.norm(self.tokens(ids) + self.positions(positions)))


def randomize_norms(model):
    """Batch norms with random statistics and affine parameters, and classifier biases that are not
    zero, as a trained network has: with torchvision's initialisation (statistics 0 and 1, scale 1,
    shift 0) a deep random CNN's outputs shrink towards zero, and a comparison with torch proves
    little."""
    g = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                n = m.num_features
                m.weight.copy_(0.5 + torch.rand(n, generator=g))
                m.bias.copy_(0.2 * torch.randn(n, generator=g))
                m.running_mean.copy_(0.2 * torch.randn(n, generator=g))
                m.running_var.copy_(0.5 + torch.rand(n, generator=g))
            elif isinstance(m, nn.Linear) and m.bias is not None:
                m.bias.copy_(0.1 * torch.randn(m.bias.shape, generator=g))
    return model


def make(name, batch, seq, image):
    import torchvision
    if name in ("resnet18", "resnet50", "mobilenet_v2"):
        model = randomize_norms(getattr(torchvision.models, name)(weights=None))
        return model, torch.randn(batch, 3, image, image)
    if name == "bert_tiny":
        return Encoder(vocab=1000, hidden=128, layers=2, heads=2, ffn=512), torch.randint(0, 1000, (batch, seq))
    if name == "bert_base":
        return Encoder(vocab=30522, hidden=768, layers=12, heads=12, ffn=3072), torch.randint(0, 30522, (batch, seq))
    raise SystemExit(f"error: unknown model '{name}' (resnet18, resnet50, mobilenet_v2, bert_tiny, bert_base)")


def export(name, out_dir, batch, seq, image, opset):
    torch.manual_seed(0)
    model, x = make(name, batch, seq, image)
    model.eval()
    folder = os.path.join(out_dir, name)
    os.makedirs(os.path.join(folder, "test_data_set_0"), exist_ok=True)
    path = os.path.join(folder, "model.onnx")
    with torch.no_grad():
        y = model(x)
    # Exported with autograd on: in no_grad mode torch takes its fused transformer kernels, which
    # have no ONNX form.
    # Newer torch exports through torch.export by default (dynamo=True, needing onnxscript); the
    # TorchScript exporter is what every torch this script meets has.
    extra = {"dynamo": False} if "dynamo" in inspect.signature(torch.onnx.export).parameters else {}
    torch.onnx.export(model, (x,), path, input_names=["input"], output_names=["output"], opset_version=opset,
                      do_constant_folding=True, **extra)
    onnx.checker.check_model(onnx.load(path))
    data = os.path.join(folder, "test_data_set_0")
    for k, (t, tname) in enumerate([(x, "input")]):
        tensor = numpy_helper.from_array(t.numpy(), tname)
        open(os.path.join(data, f"input_{k}.pb"), "wb").write(tensor.SerializeToString())
    tensor = numpy_helper.from_array(y.numpy().astype(np.float32), "output")
    open(os.path.join(data, "output_0.pb"), "wb").write(tensor.SerializeToString())
    print(f"{name}: {path} ({os.path.getsize(path) // 1024} KiB), input {tuple(x.shape)}, output {tuple(y.shape)}")


def main():
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    out_dir = sys.argv[1]
    names = sys.argv[2:] or ["resnet18", "mobilenet_v2", "bert_tiny"]
    batch, seq = int(os.environ.get("BATCH", "1")), int(os.environ.get("SEQ", "16"))
    image, opset = int(os.environ.get("IMAGE", "64")), int(os.environ.get("OPSET", "17"))
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    for name in names:
        export(name, out_dir, batch, seq, image, opset)


if __name__ == "__main__":
    main()
