// Numbers as the report prints them: locale-independent (std::to_chars, never the C locale of
// the process), so a page renders the same bytes on every machine.
#pragma once

#include <string>

namespace kvaudit::report {

// "%.{sig}g" in the C locale; "-0" prints as "0". NaN prints "–" (U+2013: not measured); ±inf
// print "inf" / "-inf", which strtod reads back, so a divergent value is never mistaken for a
// missing one. sig is clamped to 1..17.
std::string FormatSig(double v, int sig = 4);

// "%.{decimals}f" in the C locale (decimals clamped to 0..17); non-finite values as FormatSig.
std::string FormatFixed(double v, int decimals);

// A byte count: below 10 KiB the exact count ("2176 B", "2176.5 B": per-token sizes are compared
// digit by digit), above it the largest binary unit with up to 3 significant digits ("1.5 GiB",
// "12.3 MiB", "640 KiB").
std::string FormatBytes(double bytes);

// A context length in tokens: "1k", "32k" for nonzero multiples of 1024, else the number ("512",
// "1000").
std::string FormatContext(long n);

// A raw value for a data-* attribute: "%.17g" in the C locale (round-trips every double), NaN as
// "NaN", ±inf as "Infinity" / "-Infinity" (what both strtod and JavaScript's Number() read).
std::string FormatRaw(double v);

}  // namespace kvaudit::report
