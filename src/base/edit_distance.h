// Levenshtein distance between two strings (insert, delete, substitute: cost 1 each): the "did you
// mean" hints of every file parser (custom probe JSONL, the acceptance policy) measure typos with it.
#pragma once

#include <cstddef>
#include <string_view>

namespace kvaudit {

size_t EditDistance(std::string_view a, std::string_view b);

}  // namespace kvaudit
