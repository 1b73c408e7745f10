#include "src/admin/token_file.h"

#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "gtest/gtest.h"

namespace holdfast {
namespace {

class TokenFileTest : public testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/token_file_test.XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    dir_ = dir;
    path_ = dir_ + "/token";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // Writes through a new file renamed into place, as rotation tools do (so
  // the inode changes even within one timestamp tick).
  void Write(const std::string& content) {
    std::string staging = path_ + ".new";
    std::ofstream(staging, std::ios::trunc) << content;
    std::filesystem::rename(staging, path_);
  }

  std::string dir_;
  std::string path_;
};

TEST_F(TokenFileTest, MatchesTheTrimmedToken) {
  Write("  s3cret-token\n");
  auto token = TokenFile::Open(path_);
  ASSERT_TRUE(token.ok()) << token.status();
  EXPECT_TRUE((*token)->Matches("s3cret-token"));
  EXPECT_FALSE((*token)->Matches("s3cret-toke"));
  EXPECT_FALSE((*token)->Matches(""));
  EXPECT_TRUE((*token)->MatchesAuthorization("Bearer s3cret-token"));
  EXPECT_TRUE((*token)->MatchesAuthorization("bearer  s3cret-token "));
  EXPECT_FALSE((*token)->MatchesAuthorization("Basic s3cret-token"));
  EXPECT_FALSE((*token)->MatchesAuthorization("Bearer"));
  EXPECT_FALSE((*token)->MatchesAuthorization(""));
}

TEST_F(TokenFileTest, RefusesAMissingEmptyOrOversizedFile) {
  EXPECT_FALSE(TokenFile::Open(path_).ok());
  Write(" \n");
  EXPECT_FALSE(TokenFile::Open(path_).ok());
  Write(std::string(5000, 'a'));
  EXPECT_FALSE(TokenFile::Open(path_).ok());
  EXPECT_FALSE(TokenFile::Open(dir_).ok());  // a directory
}

TEST_F(TokenFileTest, FollowsRotation) {
  Write("old");
  auto token = TokenFile::Open(path_);
  ASSERT_TRUE(token.ok());
  ASSERT_TRUE((*token)->Matches("old"));
  Write("new");
  EXPECT_TRUE((*token)->Matches("new"));
  EXPECT_FALSE((*token)->Matches("old"));
}

TEST_F(TokenFileTest, FailsClosedWhileTheFileIsGoneOrEmpty) {
  Write("tok");
  auto token = TokenFile::Open(path_);
  ASSERT_TRUE(token.ok());
  std::filesystem::remove(path_);
  EXPECT_FALSE((*token)->Matches("tok"));
  Write("");
  EXPECT_FALSE((*token)->Matches("tok"));
  EXPECT_FALSE((*token)->Matches(""));
  Write("tok");
  EXPECT_TRUE((*token)->Matches("tok"));
}

}  // namespace
}  // namespace holdfast
