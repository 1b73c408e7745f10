#include "src/source/input_assembler.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace holdfast {

void InputAssembler::SetFile(const std::string& path, const DecodedFile& file,
                             const DecodedFile* last_readable) {
  RemoveFile(path);
  const DecodedFile* content = &file;
  if (file.syntax_error) {
    ObjectStatus& status = file_statuses_[path];
    status.key = ObjectKey{kFileKind, "", path};
    status.location = file.syntax_error->location;
    const char* serving = last_readable != nullptr ? "; serving what the file held before" : "";
    status.Reject("", absl::StrCat(file.syntax_error->message, serving),
                  file.syntax_error->location);
    status.serving_last_good = last_readable != nullptr;
    content = last_readable;
  }
  if (content != nullptr) AddDefinitions(path, *content);
}

void InputAssembler::AddDefinitions(const std::string& path, const DecodedFile& content) {
  std::vector<ObjectKey>& keys = keys_by_file_[path];
  for (const DecodedObject& decoded : content.objects) {
    if (!decoded.key) {
      // Not even a name: the problem belongs to the file.
      ObjectStatus& status = file_statuses_[path];
      status.key = ObjectKey{kFileKind, "", path};
      status.location = decoded.location;
      for (const FieldError& e : decoded.errors.errors()) {
        status.Reject(e.path, e.message, e.location);
      }
      continue;
    }
    std::vector<Definition>& defined = definitions_[*decoded.key];
    auto after = std::upper_bound(
        defined.begin(), defined.end(), path,
        [](const std::string& p, const Definition& definition) { return p < definition.path; });
    defined.insert(after, Definition{path, &decoded});
    keys.push_back(*decoded.key);
    touched_.insert(*decoded.key);
  }
}

void InputAssembler::RemoveFile(const std::string& path) {
  file_statuses_.erase(path);
  auto file = keys_by_file_.find(path);
  if (file == keys_by_file_.end()) return;
  for (const ObjectKey& key : file->second) {
    auto defined = definitions_.find(key);
    if (defined == definitions_.end()) continue;  // defined twice in this file: gone already
    std::erase_if(defined->second,
                  [&](const Definition& definition) { return definition.path == path; });
    if (defined->second.empty()) definitions_.erase(defined);
    touched_.insert(key);
  }
  keys_by_file_.erase(file);
}

const TranslationInput& InputAssembler::Assemble() {
  for (const ObjectKey& key : touched_) Settle(key);
  touched_.clear();
  return input_;
}

void InputAssembler::Settle(const ObjectKey& key) {
  auto defined = definitions_.find(key);
  if (defined == definitions_.end()) {
    input_.objects.erase(key);
    input_.invalid.erase(key);
    return;
  }
  const std::vector<Definition>& definitions = defined->second;
  if (definitions.size() > 1) {
    std::vector<std::string> places;
    for (const Definition& d : definitions) places.push_back(d.decoded->location.ToString());
    input_.invalid[key] = {
        FieldError{"metadata.name",
                   absl::StrCat("defined ", definitions.size(), " times (",
                                absl::StrJoin(places, ", "), "); remove all but one"),
                   definitions.back().decoded->location}};
    input_.objects.erase(key);
  } else if (const DecodedObject& decoded = *definitions.front().decoded; decoded.object) {
    input_.objects.insert_or_assign(key, *decoded.object);
    input_.invalid.erase(key);
  } else {
    input_.invalid[key] = decoded.errors.errors();
    input_.objects.erase(key);
  }
}

void InputAssembler::AddFileStatuses(StatusMap& statuses) const {
  for (const auto& [path, status] : file_statuses_) statuses.emplace(status.key, status);
}

}  // namespace holdfast
