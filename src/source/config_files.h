#pragma once

#include <map>
#include <string>

#include "src/model/decode.h"
#include "src/source/directory_scanner.h"
#include "src/source/input_assembler.h"
#include "src/translate/translator.h"

namespace holdfast {

// Gathers decoded files into one translation input. An object defined more
// than once is Rejected, naming every definition, and keeps its last
// accepted version in service: which file wins must never depend on how
// files happen to sort. A file that is not valid YAML contributes what
// `last_readable` (its last readable content, if any) held, and a status.
// All at once: a source that reads the files again on each change keeps an
// InputAssembler instead, which looks at what the changed files define.
TranslationInput AssembleInput(const std::map<std::string, DecodedFile>& files,
                               const std::map<std::string, DecodedFile>& last_readable,
                               StatusMap* file_statuses);

// Reads and decodes one config file; a file that cannot be read (or is too
// large) becomes a syntax error of the file, so it keeps what it held before.
DecodedFile ReadAndDecode(const std::string& path);

// Statuses for what a listing could not look at: an unreadable directory is
// Rejected (its files keep what they held), a skipped entry is a Warning.
StatusMap ListingStatuses(const DirectoryListing& listing);

}  // namespace holdfast
