// The xDS port's TLS files: checked before use, and staged for gRPC so that
// a key and certificate are swapped together.
#include "src/xds/tls_files.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace holdfast {
namespace {

class TlsFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           absl::StrCat("holdfast-tls-files-", getpid(), "-", reinterpret_cast<uintptr_t>(this));
    std::filesystem::create_directories(dir_);
    const std::string script = absl::StrCat(
        "set -e; cd ", dir_.string(), "; for n in a b; do ",
        "openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=$n -keyout $n.key "
        "-out $n.pem 2>/dev/null; done");
    ASSERT_EQ(std::system(script.c_str()), 0);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Path(const std::string& name) const { return (dir_ / name).string(); }
  static std::string Read(const std::string& path) {
    std::ifstream in(path);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }

  std::filesystem::path dir_;
};

TEST_F(TlsFilesTest, ReadsAMatchingPairAndACaBundle) {
  absl::StatusOr<TlsMaterial> material =
      ReadTlsMaterial({Path("a.pem"), Path("a.key"), Path("b.pem")});
  ASSERT_TRUE(material.ok()) << material.status();
  EXPECT_EQ(material->cert_pem, Read(Path("a.pem")));
  EXPECT_EQ(material->ca_pem, Read(Path("b.pem")));
}

TEST_F(TlsFilesTest, NamesTheFlagAndTheProblem) {
  std::ofstream(Path("junk")) << "junk\n";
  struct Case {
    XdsTlsOptions tls;
    std::string expected;
  };
  for (const Case& c : {
           Case{{Path("a.pem"), Path("b.key"), ""}, "does not match the certificate"},
           Case{{Path("a.pem"), Path("junk"), ""}, "--tls-key"},
           Case{{Path("junk"), Path("a.key"), ""}, "--tls-cert"},
           Case{{Path("a.pem"), Path("a.key"), Path("junk")}, "--tls-client-ca"},
           Case{{Path("a.pem"), Path("a.key"), Path("missing")}, "--tls-client-ca"},
       }) {
    absl::StatusOr<TlsMaterial> material = ReadTlsMaterial(c.tls);
    ASSERT_FALSE(material.ok());
    EXPECT_NE(material.status().message().find(c.expected), std::string::npos) << material.status();
  }
}

TEST_F(TlsFilesTest, StagesPrivatelyAndSwapsKeyAndCertificateTogether) {
  const TlsMaterial a{Read(Path("a.pem")), Read(Path("a.key")), ""};
  const TlsMaterial b{Read(Path("b.pem")), Read(Path("b.key")), Read(Path("a.pem"))};
  std::string staged_dir;
  {
    absl::StatusOr<std::unique_ptr<StagedTlsFiles>> staged = StagedTlsFiles::Create(a);
    ASSERT_TRUE(staged.ok()) << staged.status();
    StagedTlsFiles& files = **staged;
    EXPECT_EQ(Read(files.key_path()), a.key_pem);
    struct stat st;
    ASSERT_EQ(stat(files.key_path().c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0600u);
    staged_dir = std::filesystem::path(files.key_path()).parent_path().parent_path().string();
    ASSERT_EQ(stat(staged_dir.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0700u);
    for (int i = 0; i < 3; ++i) {
      const TlsMaterial& next = i % 2 == 0 ? b : a;
      ASSERT_TRUE(files.Replace(next).ok());
      EXPECT_EQ(Read(files.cert_path()), next.cert_pem);
      EXPECT_EQ(Read(files.key_path()), next.key_pem);
      EXPECT_EQ(Read(files.ca_path()), next.ca_pem);
    }
    // Old generations do not pile up.
    int entries = 0;
    for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(staged_dir)) {
      ++entries;
    }
    EXPECT_LE(entries, 3);  // current, and at most two generations
  }
  EXPECT_FALSE(std::filesystem::exists(staged_dir));
}

TEST_F(TlsFilesTest, AGivenDirectoryIsEmptiedFirst) {
  const std::string dir = Path("state/xds-tls");
  std::filesystem::create_directories(dir + "/1");
  std::ofstream(dir + "/1/key.pem") << "a key left by a crashed process\n";
  const TlsMaterial a{Read(Path("a.pem")), Read(Path("a.key")), ""};
  {
    absl::StatusOr<std::unique_ptr<StagedTlsFiles>> staged = StagedTlsFiles::Create(a, dir);
    ASSERT_TRUE(staged.ok()) << staged.status();
    EXPECT_EQ((*staged)->key_path(), dir + "/current/key.pem");
    EXPECT_EQ(Read((*staged)->key_path()), a.key_pem);
  }
  EXPECT_FALSE(std::filesystem::exists(dir));
}

}  // namespace
}  // namespace holdfast
