"""Paged K caches in numpy, in both layouts of docs/cache-layout.md."""
import numpy as np


def token_bytes(head_dim):
    return head_dim // 2 + head_dim // 32


def page(values, scales, layout, page_stride):
    """One page from its tokens' values [BS, D/2] and scales [BS, D/32]; padding is zero."""
    bs, half = values.shape
    out = np.zeros(page_stride, np.uint8)
    if layout == "linear":  # all values token-major, then all scales token-major
        out[:bs * half] = values.ravel()
        out[bs * half:bs * half + scales.size] = scales.ravel()
        return out
    # mfma16: groups of 16 tokens, each [D/32 chunks][16 tokens][16 bytes] then [16 tokens][D/32]
    chunks = half // 16
    group = 16 * (half + scales.shape[1])
    for g in range(bs // 16):
        v = values[16 * g:16 * (g + 1)].reshape(16, chunks, 16).transpose(1, 0, 2)
        s = scales[16 * g:16 * (g + 1)]
        out[g * group:g * group + v.size] = v.ravel()
        out[g * group + v.size:(g + 1) * group] = s.ravel()
    return out


def cache(values, scales, block_size, layout, page_stride):
    """The whole cache [NB, page_stride] from every slot's values [NB*BS, D/2] and scales."""
    pages = values.shape[0] // block_size
    return np.stack([page(values[p * block_size:(p + 1) * block_size],
                          scales[p * block_size:(p + 1) * block_size], layout, page_stride)
                     for p in range(pages)])
