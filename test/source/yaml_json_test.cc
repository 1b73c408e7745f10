#include "src/source/yaml_json.h"

#include <string>

#include "gtest/gtest.h"

namespace holdfast {
namespace {

nlohmann::json Convert(const std::string& yaml) {
  absl::StatusOr<nlohmann::json> json = YamlToJson(YAML::Load(yaml));
  EXPECT_TRUE(json.ok()) << json.status();
  return json.ok() ? *json : nlohmann::json();
}

TEST(YamlToJson, ScalarsBecomeTheTypesAPersonWouldRead) {
  const struct {
    std::string yaml;
    nlohmann::json json;
  } kCases[] = {
      {"0", 0},
      {"42", 42},
      {"-7", -7},
      {"+7", 7},
      {"007", 7.0},  // not an integer (leading zero), but a float
      {"1.5", 1.5},
      {".5", 0.5},
      {"5.", 5.0},
      {"1e3", 1000.0},
      {"-2.5E-1", -0.25},
      {"1e", "1e"},
      {".", "."},
      {"+.e1", "+.e1"},
      {"1.2.3", "1.2.3"},
      {"12a", "12a"},
      {"\"12\"", "12"},
      {"18446744073709551615", 18446744073709551615ull},
      {"18446744073709551616", "18446744073709551616"},  // beyond 64 bits: digits kept
      {"true", true},
      {"~", nullptr},
  };
  for (const auto& c : kCases) EXPECT_EQ(Convert(c.yaml), c.json) << c.yaml;
}

// A long run of digits used to overflow the stack in std::regex_match.
TEST(YamlToJson, HugeNumbersAreStringsNotCrashes) {
  const std::string digits(60'000, '7');
  EXPECT_EQ(Convert("v: " + digits)["v"], digits);
  EXPECT_EQ(Convert("v: " + digits + ".5e1")["v"].is_number_float(), true);
}

// Aliases copy what they name: five levels of ten copy one scalar 100,000
// times, within the node budget; a 1 KB scalar made that 100 MB of JSON
// (found by fuzzing: a 56 KB file took seconds and gigabytes). A scalar
// counts its length against the budget.
TEST(YamlToJson, AliasesRepeatingLongScalarsAreRefused) {
  std::string yaml = "a0: &a0 " + std::string(1000, 'x') + "\n";
  for (int level = 1; level <= 5; ++level) {
    const std::string previous = "*a" + std::to_string(level - 1);
    yaml += "a" + std::to_string(level) + ": &a" + std::to_string(level) + " [";
    for (int i = 0; i < 10; ++i) yaml += (i > 0 ? ", " : "") + previous;
    yaml += "]\n";
  }
  absl::StatusOr<nlohmann::json> json = YamlToJson(YAML::Load(yaml));
  ASSERT_FALSE(json.ok());
  EXPECT_NE(json.status().message().find("expands"), std::string::npos) << json.status();
  // The same shape with short scalars is within the budget.
  EXPECT_TRUE(YamlToJson(YAML::Load("a: &a [x, x]\nb: &b [*a, *a]\nc: [*b, *b]")).ok());
}

}  // namespace
}  // namespace holdfast
