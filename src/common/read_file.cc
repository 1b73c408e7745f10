#include "src/common/read_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"

namespace holdfast {

absl::StatusOr<std::string> ReadRegularFile(const std::string& path, int64_t max_bytes) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer.
  int fd = open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    return absl::NotFoundError(absl::StrCat("cannot read ", path, ": ", std::strerror(errno)));
  }
  absl::Cleanup close_fd = [fd] { close(fd); };
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    return absl::FailedPreconditionError(absl::StrCat(path, " is not a regular file"));
  }
  if (st.st_size > max_bytes) {
    return absl::ResourceExhaustedError(
        absl::StrCat(path, " is ", st.st_size, " bytes; the limit is ", max_bytes));
  }
  std::string contents;
  char buffer[64 << 10];
  while (true) {
    ssize_t n = read(fd, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0)
      return absl::DataLossError(absl::StrCat("error reading ", path, ": ", std::strerror(errno)));
    if (n == 0) return contents;
    if (static_cast<int64_t>(contents.size()) + n > max_bytes) {
      return absl::ResourceExhaustedError(
          absl::StrCat(path, " grew past the limit of ", max_bytes, " bytes while being read"));
    }
    contents.append(buffer, n);
  }
}

}  // namespace holdfast
