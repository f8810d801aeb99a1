// Include in a .cc whose float code must keep a*b - c as two roundings, as ggml's scalar
// reference writes it (the block dequantizers, quant/dequantize*.cc): GCC's default in C++ is
// -ffp-contract=fast, which fuses a multiply followed by an add or subtract — including
// _mm*_mul_ps + _mm*_sub_ps — into one FMA that rounds once. The pragma holds for the rest of the
// including file only. Include it after the other headers.
#pragma once

#if defined(__clang__)
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif
