// The gate's report as JUnit XML (kvaudit gate --junit FILE), the format CI systems show as test
// results: one <testsuite> per configuration, one <testcase> per (configuration, criterion, context
// bucket or probe family), a <failure> giving the measured value, the threshold and the bucket.
#pragma once

#include <string>
#include <string_view>

#include "decide/gate/gate.h"

namespace kvaudit {

std::string GateJunitXml(const GateReport& report);

// Text as XML character data or an attribute value: & < > " ' escaped; characters XML 1.0 does not
// allow (controls other than tab, newline, carriage return) become U+FFFD.
std::string XmlEscape(std::string_view s);

}  // namespace kvaudit
