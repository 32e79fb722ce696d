"""MXFP4 in numpy, as docs/semantics.md ("The MXFP4 format") states it: E2M1 codes, one E8M0
scale byte per 32 values, two codes a byte with the even element in the low nibble. Quantizing
uses the `ceil` rule, the library's default; mxi-run quantize writes the same bytes."""
import numpy as np

E2M1 = np.array([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0])


def block_exponents(amax):
    """The smallest e with amax <= 6 * 2^e, amax first raised to 6 * 2^-126, clamped to
    [-127, 127]. amax / 6 in double is exact enough: a float32 amax above 6 * 2^e is at least
    one float32 step above it, far beyond double rounding."""
    mantissa, exponent = np.frexp(np.maximum(amax, 6 * 2.0**-126) / 6)  # = mantissa * 2^exponent
    e = exponent - (mantissa == 0.5)  # an exact power of two needs one less
    return np.clip(e, -127, 127)


def nearest_codes(scaled):
    """Nearest E2M1 code of each value, ties to the even code, saturating at 6, sign kept."""
    a = np.abs(scaled)
    # Upper bounds of codes 0..6; a bound that belongs to the lower code is inclusive (the even
    # code wins the tie at 0.25, 1.25, 2.5 and 5; the odd-code bounds 0.75, 1.75, 3.5 go up).
    code = np.select(
        [a <= 0.25, a < 0.75, a <= 1.25, a < 1.75, a <= 2.5, a < 3.5, a <= 5.0],
        [0, 1, 2, 3, 4, 5, 6], default=7).astype(np.uint8)
    return code | (np.signbit(scaled).astype(np.uint8) << 3)


def quantize(x):
    """float32 [..., D] -> (values uint8 [..., D/2], scales uint8 [..., D/32])."""
    blocks = x.astype(np.float64).reshape(*x.shape[:-1], -1, 32)
    finite = np.isfinite(blocks).all(axis=-1)
    amax = np.where(finite, np.abs(np.where(np.isfinite(blocks), blocks, 0)).max(axis=-1), 0)
    e = block_exponents(amax)
    codes = nearest_codes(blocks / np.ldexp(1.0, e)[..., None])
    codes[~finite] = 0  # a block with a NaN or an infinity: codes 0, scale byte 255
    scales = np.where(finite, e + 127, 255).astype(np.uint8)
    codes = codes.reshape(x.shape)
    return (codes[..., 0::2] | (codes[..., 1::2] << 4)).astype(np.uint8), scales


def dequantize(values, scales):
    """The inverse, exactly, in float64: [..., D/2] and [..., D/32] -> [..., D]."""
    codes = np.stack([values & 15, values >> 4], axis=-1).reshape(*values.shape[:-1], -1)
    magnitude = E2M1[codes & 7] * np.where(codes & 8, -1.0, 1.0)
    scale = np.where(scales == 255, np.nan, np.ldexp(1.0, scales.astype(np.int64) - 127))
    return magnitude * np.repeat(scale, 32, axis=-1)
