#include "src/source/config_files.h"

#include "absl/strings/str_cat.h"

namespace holdfast {

TranslationInput AssembleInput(const std::map<std::string, DecodedFile>& files,
                               const std::map<std::string, DecodedFile>& last_readable,
                               StatusMap* file_statuses) {
  InputAssembler assembler;
  for (const auto& [path, file] : files) {
    auto last = last_readable.find(path);
    assembler.SetFile(path, file, last == last_readable.end() ? nullptr : &last->second);
  }
  assembler.Assemble();
  assembler.AddFileStatuses(*file_statuses);
  return std::move(assembler).TakeInput();
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
