#include "src/admin/event_log.h"

namespace holdfast {

void EventLog::Record(std::string kind, std::string message, absl::Time at) {
  if (at == absl::InfinitePast()) at = clock_.Now();
  absl::MutexLock lock(&mu_);
  events_.push_back({at, std::move(kind), std::move(message)});
  while (events_.size() > capacity_) events_.pop_front();
}

std::vector<EventLog::Event> EventLog::Recent() const {
  absl::MutexLock lock(&mu_);
  return std::vector<Event>(events_.rbegin(), events_.rend());
}

nlohmann::json EventLog::ToJson() const {
  nlohmann::json list = nlohmann::json::array();
  for (const Event& event : Recent()) {
    list.push_back(
        {{"at", FormatTimestamp(event.at)}, {"kind", event.kind}, {"message", event.message}});
  }
  return list;
}

}  // namespace holdfast
