#include "src/source/input_assembler.h"

#include <map>
#include <random>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "gtest/gtest.h"
#include "src/source/config_files.h"

namespace holdfast {
namespace {

// What an input and the file statuses say, in one comparable text.
std::string Describe(const TranslationInput& input, const StatusMap& statuses) {
  std::string out;
  for (const auto& [key, object] : input.objects) {
    absl::StrAppend(&out, "object ", key.ToString(), " ", object.content_digest, " at ",
                    object.meta.location.ToString(), "\n");
  }
  for (const auto& [key, errors] : input.invalid) {
    absl::StrAppend(&out, "invalid ", key.ToString(), ":");
    for (const FieldError& e : errors) absl::StrAppend(&out, " ", e.ToString());
    absl::StrAppend(&out, "\n");
  }
  for (const auto& [key, status] : statuses) {
    absl::StrAppend(&out, "status ", key.ToString(), " ", StatusStateName(status.state),
                    status.serving_last_good ? " serving last good" : "", " at ",
                    status.location.ToString(), ":");
    for (const FieldError& e : status.reasons) absl::StrAppend(&out, " ", e.ToString());
    absl::StrAppend(&out, "\n");
  }
  return out;
}

std::string Upstream(const std::string& name, const std::string& port) {
  return absl::StrCat("apiVersion: holdfast.dev/v1\nkind: Upstream\nmetadata: {name: ", name,
                      ", namespace: shop}\nspec:\n  hosts: [{address: 10.0.0.1, port: ", port,
                      "}]\n");
}

// What a file may hold: objects new, changed, moved between files, defined
// twice (in one file or two), invalid, without a name, or no YAML at all.
const std::vector<std::string>& Contents() {
  static const auto* contents = new std::vector<std::string>{
      Upstream("a", "80"),
      Upstream("a", "81"),
      Upstream("b", "80"),
      Upstream("a", "80") + "---\n" + Upstream("b", "82"),
      Upstream("a", "80") + "---\n" + Upstream("a", "83"),
      Upstream("a", "99999"),
      "apiVersion: holdfast.dev/v1\nkind: Upstream\nmetadata: {namespace: shop}\nspec: {}\n",
      Upstream("c", "80") + "spec: [unclosed\n",
      "",
  };
  return *contents;
}

// Files changed one at a time, as a directory source sees them: the
// assembler, kept from change to change, gives what assembling every file
// at once gives, including what a file with a syntax error held before.
TEST(InputAssemblerTest, EachChangeGivesWhatAssemblingEveryFileGives) {
  std::mt19937 random(7);
  const std::vector<std::string> paths = {"a.yaml", "b.yaml", "c/d.yaml", "e.yaml"};
  std::map<std::string, DecodedFile> files, last_readable;
  InputAssembler assembler;
  for (int step = 0; step < 600; ++step) {
    const std::string& path = paths[random() % paths.size()];
    const size_t choice = random() % (Contents().size() + 1);
    if (choice == Contents().size()) {
      files.erase(path);
      last_readable.erase(path);
      assembler.RemoveFile(path);
    } else {
      DecodedFile read = DecodeObjects(Contents()[choice], path);
      auto before = files.find(path);
      if (read.syntax_error && before != files.end() && !before->second.syntax_error) {
        last_readable[path] = std::move(before->second);
      } else if (!read.syntax_error) {
        last_readable.erase(path);
      }
      files[path] = std::move(read);
      auto last = last_readable.find(path);
      assembler.SetFile(path, files[path], last == last_readable.end() ? nullptr : &last->second);
    }
    if (random() % 3 == 0) continue;  // several changes, then one assembly
    StatusMap statuses_at_once, statuses_one_by_one;
    const TranslationInput at_once = AssembleInput(files, last_readable, &statuses_at_once);
    const TranslationInput& one_by_one = assembler.Assemble();
    assembler.AddFileStatuses(statuses_one_by_one);
    ASSERT_EQ(Describe(one_by_one, statuses_one_by_one), Describe(at_once, statuses_at_once))
        << "at step " << step;
  }
}

TEST(InputAssemblerTest, AnObjectMovedToAnotherFileIsDefinedOnce) {
  DecodedFile first = DecodeObjects(Upstream("a", "80"), "a.yaml");
  DecodedFile second = DecodeObjects(Upstream("a", "81"), "b.yaml");
  DecodedFile empty;
  InputAssembler assembler;
  assembler.SetFile("a.yaml", first, nullptr);
  const ObjectKey key{"Upstream", "shop", "a"};
  ASSERT_TRUE(assembler.Assemble().objects.contains(key));
  assembler.SetFile("b.yaml", second, nullptr);
  EXPECT_TRUE(assembler.Assemble().invalid.contains(key)) << "defined twice while in both";
  assembler.SetFile("a.yaml", empty, nullptr);
  const TranslationInput& input = assembler.Assemble();
  ASSERT_TRUE(input.objects.contains(key));
  EXPECT_FALSE(input.invalid.contains(key));
  EXPECT_EQ(input.objects.at(key).meta.location.file, "b.yaml");
}

}  // namespace
}  // namespace holdfast
