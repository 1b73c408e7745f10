// Fuzz target: decoding gateway objects from outside YAML, then translating
// whatever decoded, as the config directory source does.
#include <cstddef>
#include <cstdint>
#include <string>

#include "src/source/config_files.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string contents(reinterpret_cast<const char*>(data), size);
  std::map<std::string, holdfast::DecodedFile> files{
      {"fuzz.yaml", holdfast::DecodeObjects(contents, "fuzz.yaml")}};
  holdfast::StatusMap file_statuses;
  holdfast::Translator translator;
  translator.Translate(holdfast::AssembleInput(files, {}, &file_statuses));
  return 0;
}
