#include "src/source/config_files.h"

namespace holdfast {

TranslationInput AssembleInput(const std::map<std::string, DecodedFile>& files,
                               const std::map<std::string, DecodedFile>& last_readable,
                               StatusMap* file_statuses) {
  TranslationInput input;
  std::map<ObjectKey, SourceLocation> defined_at;
  for (const auto& [path, file] : files) {
    const DecodedFile* content = &file;
    if (file.syntax_error) {
      ObjectKey key{kFileKind, "", path};
      ObjectStatus& status = (*file_statuses)[key];
      status.key = key;
      status.location = file.syntax_error->location;
      auto last = last_readable.find(path);
      status.Reject("", absl::StrCat("not valid YAML: ", file.syntax_error->message,
                                     last != last_readable.end()
                                         ? "; serving what the file held before"
                                         : ""),
                    file.syntax_error->location);
      status.serving_last_good = last != last_readable.end();
      if (last == last_readable.end()) continue;
      content = &last->second;
    }
    for (const DecodedObject& decoded : content->objects) {
      if (!decoded.key) {
        // Not even a name: the problem belongs to the file.
        ObjectKey key{kFileKind, "", path};
        ObjectStatus& status = (*file_statuses)[key];
        status.key = key;
        status.location = decoded.location;
        for (const FieldError& e : decoded.errors.errors()) status.Reject(e.path, e.message, e.location);
        continue;
      }
      auto [first, fresh] = defined_at.emplace(*decoded.key, decoded.location);
      if (!fresh) {
        ObjectStatus& status = (*file_statuses)[*decoded.key];
        status.key = *decoded.key;
        status.Warn("metadata.name",
                    absl::StrCat("defined again at ", decoded.location.ToString(),
                                 "; that definition is ignored"),
                    first->second);
        continue;
      }
      if (decoded.object) {
        input.objects.emplace(*decoded.key, *decoded.object);
      } else {
        input.invalid[*decoded.key] = decoded.errors.errors();
      }
    }
  }
  return input;
}

StatusMap MergeStatuses(StatusMap statuses, const StatusMap& file_statuses) {
  for (const auto& [key, extra] : file_statuses) {
    auto it = statuses.find(key);
    if (it == statuses.end()) {
      statuses[key] = extra;
      continue;
    }
    for (const FieldError& reason : extra.reasons) {
      if (extra.state == StatusState::kRejected) {
        it->second.Reject(reason.path, reason.message, reason.location);
      } else {
        it->second.Warn(reason.path, reason.message, reason.location);
      }
    }
  }
  return statuses;
}

}  // namespace holdfast
