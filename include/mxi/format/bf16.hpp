// bf16 to fp32: a bf16 value is the top half of an fp32 one, so it widens exactly, by a shift.
// Host and device; every reader of bf16 input (the quantizers on each backend) widens here.
#pragma once

#include <cstdint>

#include "mxi/config.hpp"

namespace mxi::format {

/// The fp32 value of the bf16 `bits`.
MXI_HOST_DEVICE float widen_bf16(uint16_t bits) {
  return bit_cast<float>(static_cast<uint32_t>(bits) << 16);
}

/// Half `i` of a word of two bf16 (0: bits 0-15, 1: bits 16-31), as fp32.
MXI_HOST_DEVICE float widen_bf16_half(uint32_t pair, int i) {
  return bit_cast<float>((pair >> (16 * i)) << 16);
}

}  // namespace mxi::format
