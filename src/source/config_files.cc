#include "src/source/config_files.h"

#include "absl/strings/str_join.h"

namespace holdfast {

TranslationInput AssembleInput(const std::map<std::string, DecodedFile>& files,
                               const std::map<std::string, DecodedFile>& last_readable,
                               StatusMap* file_statuses) {
  TranslationInput input;
  std::map<ObjectKey, std::vector<const DecodedObject*>> definitions;
  for (const auto& [path, file] : files) {
    const DecodedFile* content = &file;
    if (file.syntax_error) {
      ObjectKey key{kFileKind, "", path};
      ObjectStatus& status = (*file_statuses)[key];
      status.key = key;
      status.location = file.syntax_error->location;
      auto last = last_readable.find(path);
      status.Reject(
          "",
          absl::StrCat(file.syntax_error->message,
                       last != last_readable.end() ? "; serving what the file held before" : ""),
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
        for (const FieldError& e : decoded.errors.errors())
          status.Reject(e.path, e.message, e.location);
        continue;
      }
      definitions[*decoded.key].push_back(&decoded);
    }
  }
  for (const auto& [key, defined] : definitions) {
    if (defined.size() > 1) {
      std::vector<std::string> places;
      for (const DecodedObject* d : defined) places.push_back(d->location.ToString());
      input.invalid[key] = {
          FieldError{"metadata.name",
                     absl::StrCat("defined ", defined.size(), " times (",
                                  absl::StrJoin(places, ", "), "); remove all but one"),
                     defined.back()->location}};
    } else if (defined.front()->object) {
      input.objects.emplace(key, *defined.front()->object);
    } else {
      input.invalid[key] = defined.front()->errors.errors();
    }
  }
  return input;
}

DecodedFile ReadAndDecode(const std::string& path) {
  absl::StatusOr<std::string> contents = ReadWholeFile(path);
  if (!contents.ok()) {
    DecodedFile unreadable;
    unreadable.syntax_error =
        FieldError{"", absl::StrCat("cannot read: ", contents.status().message()), {path, 0}};
    return unreadable;
  }
  return DecodeObjects(*contents, path);
}

StatusMap ListingStatuses(const DirectoryListing& listing) {
  StatusMap statuses;
  for (const auto& [path, why] : listing.unreadable) {
    ObjectKey key{kFileKind, "", path};
    statuses[key].key = key;
    statuses[key].location = {path, 0};
    statuses[key].Reject("", absl::StrCat(why, "; serving what it held before"), {path, 0});
    statuses[key].serving_last_good = true;
  }
  for (const auto& [path, why] : listing.skipped) {
    ObjectKey key{kFileKind, "", path};
    statuses[key].key = key;
    statuses[key].location = {path, 0};
    statuses[key].Warn("", why, {path, 0});
  }
  return statuses;
}

}  // namespace holdfast
