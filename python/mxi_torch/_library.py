"""Loads the compiled ops (torch.ops.mxi.*) from beside this package's files."""

import os

import torch

_NAME = "mxi_torch_ops.so"


def load() -> None:
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), _NAME)
    if not os.path.exists(path):
        raise ImportError(
            f"mxi_torch: {path} is missing; build it with CMake (README, 'From PyTorch') and put "
            "the build folder that holds mxi_torch/ on PYTHONPATH")
    torch.ops.load_library(path)
