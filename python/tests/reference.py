"""A float64 model of what the ops compute, written from docs/semantics.md and
docs/cache-layout.md alone (no mxi code): the MXFP4 codec, the four page layouts, the indexer's
scores and the acceptance rule for a top-k row."""

import math

import torch

E2M1 = torch.tensor([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0], dtype=torch.float64)


# ---------------------------------------------------------------------------------------------
# The codec

def decode(values: torch.Tensor, scales: torch.Tensor) -> torch.Tensor:
    """[..., D/2] packed codes (even element in the low nibble) and [..., D/32] E8M0 bytes to
    float64 [..., D]; scale byte 255 makes its block NaN."""
    v = values.to(torch.int64)
    codes = torch.stack([v & 15, v >> 4], dim=-1).flatten(-2)
    mag = E2M1[codes & 7]
    x = torch.where((codes & 8) != 0, -mag, mag)
    s = scales.to(torch.int64)
    factor = torch.where(s == 255, torch.full_like(s, 0, dtype=torch.float64) * math.nan,
                         torch.ldexp(torch.ones_like(s, dtype=torch.float64), s - 127))
    return x * factor.repeat_interleave(32, dim=-1)


def quantize(x: torch.Tensor, rule: str = "ceil"):
    """Rows [..., D] (float32 or bfloat16, widened exactly) to (packed codes [..., D/2] uint8,
    E8M0 bytes [..., D/32] uint8) by the contract's block rule."""
    xd = x.to(torch.float64)
    blocks = xd.reshape(*xd.shape[:-1], xd.shape[-1] // 32, 32)
    finite = torch.isfinite(blocks).all(dim=-1)
    amax = torch.where(finite, blocks.abs().amax(dim=-1), torch.zeros_like(blocks[..., 0]))
    if rule == "ceil":
        a = torch.clamp(amax, min=6.0 * 2.0 ** -126)
        e = torch.ceil(torch.log2(a / 6.0))
        e = e + (a > torch.ldexp(torch.full_like(a, 6.0), e.to(torch.int64))).to(e.dtype)
        e = e - (a <= torch.ldexp(torch.full_like(a, 6.0), (e - 1).to(torch.int64))).to(e.dtype)
    else:
        mant, exp = torch.frexp(amax)  # amax = mant * 2^exp, mant in [0.5, 1)
        e = torch.where(amax == 0, torch.full_like(amax, -127.0), (exp - 1 - 2).to(torch.float64))
    e = torch.clamp(e, -127, 127).to(torch.int64)
    scaled = blocks / torch.ldexp(torch.ones_like(amax), e).unsqueeze(-1)
    dist = (scaled.abs().unsqueeze(-1) - E2M1).abs()  # [..., 32, 8]
    nearest = dist == dist.amin(dim=-1, keepdim=True)
    odd = torch.arange(8) % 2
    # Among the nearest codes (two at a tie) the even one; beyond 6 the nearest is 6 anyway.
    code = torch.where(nearest, odd, torch.full_like(odd, 10)).argmin(dim=-1)
    code = code | (torch.signbit(blocks).to(torch.int64) << 3)
    code = torch.where(finite.unsqueeze(-1), code, torch.zeros_like(code))
    scale = torch.where(finite, e + 127, torch.full_like(e, 255))
    code = code.reshape(*xd.shape)
    packed = code[..., 0::2] | (code[..., 1::2] << 4)
    return packed.to(torch.uint8), scale.to(torch.uint8)


def pack_scales_int32(scales: torch.Tensor) -> torch.Tensor:
    """[..., 4] E8M0 bytes as DeepGEMM's int32 (byte c of the little-endian word is block c)."""
    s = scales.to(torch.int64)
    word = s[..., 0] | (s[..., 1] << 8) | (s[..., 2] << 16) | (s[..., 3] << 24)
    return torch.where(word >= 2 ** 31, word - 2 ** 32, word).to(torch.int32)


# ---------------------------------------------------------------------------------------------
# Page layouts: byte offsets in a page of the 16 value bytes and of the scale byte of (token,
# chunk), as [BS, D/32] tensors.

def offsets(layout: str, bs: int, d: int):
    t = torch.arange(bs).unsqueeze(1)
    c = torch.arange(d // 32).unsqueeze(0)
    chunks, vbytes = d // 32, d // 2
    if layout == "linear":
        return t * vbytes + 16 * c, bs * vbytes + t * chunks + c
    if layout == "mfma16":
        group = (t // 16) * 16 * (vbytes + chunks)
        return group + (16 * c + t % 16) * 16, group + 16 * vbytes + (t % 16) * chunks + c
    run, lanes = {"aiter32": (32, 2), "aiter16": (16, 4)}[layout]
    value = (t // run) * run * vbytes + (c * run + t % run) * 16
    scale = (bs * vbytes + (t // run) * run * chunks + ((c % lanes) * run + t % run) * (chunks // lanes)
             + c // lanes)
    return value, scale


def write_tokens(pages: torch.Tensor, layout: str, bs: int, d: int, slots, values, scales):
    """Writes packed rows at cache slots (page * bs + token; -1 skips) of pages [NB, page bytes]
    uint8, through the layout's offsets."""
    v_off, s_off = offsets(layout, bs, d)
    keep = slots >= 0
    slots, values, scales = slots[keep], values[keep], scales[keep]
    page, token = slots // bs, slots % bs
    base = (page * pages.shape[1]).unsqueeze(1)
    flat = pages.view(-1)
    value_at = (base.unsqueeze(2) + v_off[token].unsqueeze(2) + torch.arange(16)).reshape(len(slots), -1)
    flat[value_at] = values.reshape(len(slots), -1)
    flat[base + s_off[token]] = scales


def read_keys(pages: torch.Tensor, layout: str, bs: int, d: int):
    """Every token of every page decoded: float64 [NB * BS, D], row = cache slot."""
    v_off, s_off = offsets(layout, bs, d)
    byte = torch.arange(16)
    idx = (v_off.unsqueeze(-1) + byte).reshape(bs, d // 2)  # [BS, D/2]
    values = pages[:, idx.reshape(-1)].reshape(-1, bs, d // 2)
    scales = pages[:, s_off.reshape(-1)].reshape(-1, bs, d // 32)
    return decode(values, scales).reshape(-1, d)


# ---------------------------------------------------------------------------------------------
# The indexer

def rows(query_start_loc, seq_lens, compress_ratio):
    """(request, visible length V) of each query token."""
    out = []
    qsl, lens = query_start_loc.tolist(), seq_lens.tolist()
    for r in range(len(lens)):
        n = qsl[r + 1] - qsl[r]
        for i in range(n):
            p = lens[r] - n + i
            out.append((r, (p + 1) // compress_ratio))
    return out


def scores(q, w, keys, block_table, bs, request, visible):
    """float64 scores of positions [0, V) of one token: sum_h w[h] * relu(q[h] . k[s]) (a NaN
    dot stays NaN), and the per-position tolerance scale sum_h |w[h] * relu(q[h] . k[s])|."""
    pos = torch.arange(visible)
    slots = block_table[request, pos // bs].to(torch.int64) * bs + pos % bs
    dots = q @ keys[slots].T  # [H, V]
    relu = torch.where(torch.isnan(dots), dots, dots.clamp(min=0))
    terms = w.unsqueeze(1) * relu
    return terms.sum(dim=0), terms.abs().sum(dim=0), slots


def check_topk_row(row, exact, scale, k, order="position"):
    """The contract's acceptance of one top-k row (docs/semantics.md, Numerics), against the
    float64 scores `exact` of positions [0, V): "" when accepted, else why not."""
    v = exact.numel()
    row = row.tolist()
    n = row.index(-1) if -1 in row else len(row)
    chosen = row[:n]
    if row[n:] != [-1] * (len(row) - n):
        return "entries after the first -1 are not all -1"
    if n != min(v, k) or len(set(chosen)) != n or any(p < 0 or p >= v for p in chosen):
        return f"{n} positions {chosen[:8]}..., expected {min(v, k)} distinct ones in [0, {v})"
    if order == "position" and chosen != sorted(chosen):
        return "positions not ascending"
    key = torch.where(torch.isnan(exact), torch.full_like(exact, -math.inf), exact)
    tol = 1e-5 * scale
    if order == "score":
        ranked = key[chosen]
        if bool((ranked[1:] > ranked[:-1] + tol[chosen][1:] + tol[chosen][:-1]).any()):
            return "scores not descending"
    if v <= k:
        return "" if sorted(chosen) == list(range(v)) else "not every position"
    mask = torch.zeros(v, dtype=torch.bool)
    mask[chosen] = True
    if bool(torch.isnan(exact[mask]).any()) and not bool(torch.isnan(exact[~mask]).all()):
        return "a NaN score chosen over a number"
    lo_in, hi_out = float((key + tol)[mask].min()), float((key - tol)[~mask].max())
    if lo_in < hi_out:
        return f"an unchosen score {hi_out} beats a chosen one {lo_in}"
    # Exact ties (the same key bytes) go to the smaller position.
    for c in chosen:
        ties = ((exact == exact[c]) & ~mask).nonzero().flatten()
        if ties.numel() and int(ties.min()) < c:
            return f"position {c} chosen over the smaller {int(ties.min())} of the same score"
    return ""
