// Evaluation text from the user: a plain text file, a folder of text files (sorted by name), or
// JSONL with a "text" field per line. Documents are joined by a blank line when one stream is
// needed (the way ../shared/data/public-kld.txt was made).
#pragma once

#include <string>
#include <vector>

#include "base/status.h"

namespace kvaudit {

Expected<std::vector<std::string>> LoadDocuments(const std::string& path);
std::string JoinDocuments(const std::vector<std::string>& docs);

}  // namespace kvaudit
