#pragma once

#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "src/model/decode.h"
#include "src/translate/translator.h"

namespace holdfast {

// Kind used in statuses for problems that belong to a whole file.
inline constexpr char kFileKind[] = "File";

// Gathers decoded config files into one translation input, one file at a
// time: a change to one file of 10,000 copies and looks up what that file
// defines, not every object of every file.
//
// The rules are AssembleInput's (config_files.h): an object defined more
// than once is Rejected, naming every definition in path order, and keeps
// its last accepted version in service; a file with a syntax error
// contributes what it held when last readable, if anything, and a status.
//
// Not thread-safe. The DecodedFiles given to SetFile are read (by
// Assemble) until the path is set again or removed, so they must stay
// where they are and as they are until then.
class InputAssembler {
 public:
  // What `path` holds now: `file` as read and, while `file` has a syntax
  // error, `last_readable` (or null), what it held when last readable.
  void SetFile(const std::string& path, const DecodedFile& file,
               const DecodedFile* last_readable);
  void RemoveFile(const std::string& path);

  // The input with every SetFile and RemoveFile so far: only the objects
  // those files defined, before or now, are looked at again.
  const TranslationInput& Assemble();
  // The input Assemble made last, moved out (the assembler is spent).
  TranslationInput TakeInput() && { return std::move(input_); }

  // Statuses of files as a whole (syntax errors, documents without a
  // name), added to `statuses`.
  void AddFileStatuses(StatusMap& statuses) const;

 private:
  struct Definition {
    std::string path;
    const DecodedObject* decoded;
  };

  // Adds the definitions of `content`, which `path` holds, after those of
  // files named before `path` (and of `path`'s earlier documents).
  void AddDefinitions(const std::string& path, const DecodedFile& content);
  // Sets input_'s entry for `key` from its definitions.
  void Settle(const ObjectKey& key);

  std::map<ObjectKey, std::vector<Definition>> definitions_;
  std::map<std::string, std::vector<ObjectKey>> keys_by_file_;  // what each file defines
  // The files that have a status as a whole: few, so not found by a walk
  // over every file.
  std::map<std::string, ObjectStatus> file_statuses_;
  std::set<ObjectKey> touched_;  // keys whose definitions changed since Assemble
  TranslationInput input_;
};

}  // namespace holdfast
