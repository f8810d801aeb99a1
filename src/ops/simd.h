// The one place that includes <immintrin.h>. GCC 12's AVX-512 intrinsics (_mm512_max_ps,
// _mm512_roundscale_ps, _mm512_scalef_ps, the _mm512_reduce_* helpers) are written on top of
// _mm512_undefined_ps() and trip -Wmaybe-uninitialized once inlined (GCC bug 105593, fixed in 13);
// the warning is silenced for the header's own lines only. Include this before other headers.
#pragma once

#if defined(__AVX512F__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop
#endif
