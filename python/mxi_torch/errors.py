"""The device error word: bad batch data found while an op ran (a page id, a seq_len).

The rows concerned come back all -1 and a bit is OR-ed into the caller's int32 word, on the
tensors' device; no op reads it back, so none synchronises. Read it when the step synchronises
anyway (raise_on_error), or let the functions check it for you (error_word=None)."""

import torch

# The bits (mxi/types.hpp, device_error).
QUERY_START_LOC = 1 << 0
SEQ_LEN = 1 << 1
MAX_MODEL_LEN = 1 << 2
BLOCK_TABLE = 1 << 3
SLOT_MAPPING = 1 << 4


class MxiDataError(RuntimeError):
    """Bad batch data: `word` holds the device error bits, the message says what they mean."""

    def __init__(self, word: int):
        self.word = word
        super().__init__(f"mxi: bad batch data (error word {word:#x}): {describe(word)}")


def describe(word: int) -> str:
    """The bits of an error word in words ("" for none)."""
    return torch.ops.mxi.describe_device_errors(int(word))


def new_error_word(device) -> torch.Tensor:
    """A zeroed int32 error word on `device`, to pass as error_word."""
    return torch.zeros(1, dtype=torch.int32, device=device)


def raise_on_error(error_word: torch.Tensor, reset: bool = True) -> None:
    """Reads the word (a host synchronisation on a GPU) and raises MxiDataError if a bit is set;
    `reset` zeroes it for the next steps."""
    word = int(error_word.item())
    if reset and word:
        error_word.zero_()
    if word:
        raise MxiDataError(word)


def check_now_or_on_device(error_word: torch.Tensor) -> None:
    """For a call given no error word: on the CPU raise at once; on a GPU assert on the device
    (torch._assert_async), so the error surfaces at the next synchronisation, never silently and
    without a host synchronisation here. A device assertion ends the process's CUDA context: pass
    an error word of your own to collect the bits instead."""
    if error_word.device.type == "cpu":
        raise_on_error(error_word, reset=False)
    else:
        torch._assert_async(error_word == 0)
