#pragma once

#include <map>
#include <string>

#include "src/model/decode.h"
#include "src/translate/translator.h"

namespace holdfast {

// Kind used in statuses for problems that belong to a whole file.
inline constexpr char kFileKind[] = "File";

// Gathers decoded files into one translation input. Files are taken in path
// order: an object defined twice keeps its first definition and the second
// is reported. A file that is not valid YAML contributes what
// `last_readable` (its last readable content, if any) held, and a status.
TranslationInput AssembleInput(const std::map<std::string, DecodedFile>& files,
                               const std::map<std::string, DecodedFile>& last_readable,
                               StatusMap* file_statuses);

// Statuses from the translator plus file problems, in one map.
StatusMap MergeStatuses(StatusMap statuses, const StatusMap& file_statuses);

}  // namespace holdfast
