#include "src/xds/view_cache.h"

namespace holdfast {
namespace {

const ResourceMap& Empty() {
  static const ResourceMap* empty = new ResourceMap();
  return *empty;
}

const ResourceMap& OfType(const SnapshotPtr& snapshot, absl::string_view type) {
  return snapshot == nullptr ? Empty() : snapshot->Resources(type);
}

}  // namespace

std::shared_ptr<ViewCache::Entry> ViewCache::Find(const SnapshotPtr& from, const SnapshotPtr& to,
                                                  absl::string_view type,
                                                  const Selection& selection) {
  const NameSetPtr& names = selection.wildcard ? nullptr : selection.names;
  Key key{from.get(), to.get(), names.get(), std::string(type)};
  absl::MutexLock lock(&mu_);
  std::shared_ptr<Entry>& slot = entries_[key];
  // A live entry has live inputs; an expired one may name a freed object
  // whose address a new one now has.
  if (slot != nullptr && !slot->Expired()) return slot;
  slot = std::make_shared<Entry>();
  slot->from = from;
  slot->has_from = from != nullptr;
  slot->to = to;
  slot->names = names;
  slot->has_names = names != nullptr;
  std::shared_ptr<Entry> entry = slot;
  if (entries_.size() >= sweep_at_) {
    absl::erase_if(entries_, [](const auto& kv) { return kv.second->Expired(); });
    sweep_at_ = std::max<size_t>(256, entries_.size() * 2);
  }
  return entry;
}

ResourceListPtr ViewCache::Selected(const SnapshotPtr& snapshot, absl::string_view type,
                                    const Selection& selection) {
  std::shared_ptr<Entry> entry = Find(nullptr, snapshot, type, selection);
  absl::call_once(entry->once, [&] {
    auto list = std::make_shared<ResourceList>();
    const ResourceMap& available = OfType(snapshot, type);
    if (selection.wildcard) {
      list->resources.reserve(available.size());
      for (const auto& [name, resource] : available) list->resources.push_back(resource);
      list->digest = snapshot->TypeVersion(type);
    } else {
      for (const std::string& name : selection.names->names()) {
        if (auto it = available.find(name); it != available.end()) {
          list->resources.push_back(it->second);
        }
      }
      list->digest = VersionOf(list->resources);
    }
    entry->list = std::move(list);
  });
  return entry->list;
}

ResourceListPtr ViewCache::Changed(const SnapshotPtr& from, const SnapshotPtr& to,
                                   absl::string_view type, const Selection& selection) {
  std::shared_ptr<Entry> entry = Find(from, to, type, selection);
  absl::call_once(entry->once, [&] {
    auto list = std::make_shared<ResourceList>();
    const ResourceMap& before = OfType(from, type);
    const ResourceMap& after = OfType(to, type);
    auto consider = [&](const std::string& name, const ResourcePtr* old_resource,
                        const ResourcePtr* new_resource) {
      if (new_resource == nullptr) {
        if (old_resource != nullptr) list->removed.push_back(name);
      } else if (old_resource == nullptr ||
                 (*old_resource != *new_resource &&
                  (*old_resource)->version() != (*new_resource)->version())) {
        list->resources.push_back(*new_resource);
      }
    };
    if (!selection.wildcard && selection.names->size() < before.size() + after.size()) {
      // Few names: look each up.
      for (const std::string& name : selection.names->names()) {
        auto b = before.find(name);
        auto a = after.find(name);
        consider(name, b == before.end() ? nullptr : &b->second,
                 a == after.end() ? nullptr : &a->second);
      }
    } else {
      // Walk both sorted maps together.
      auto b = before.begin();
      auto a = after.begin();
      while (b != before.end() || a != after.end()) {
        const bool take_b = a == after.end() || (b != before.end() && b->first <= a->first);
        const bool take_a = b == before.end() || (a != after.end() && a->first <= b->first);
        const std::string& name = take_b ? b->first : a->first;
        if (selection.Selects(name)) {
          consider(name, take_b ? &b->second : nullptr, take_a ? &a->second : nullptr);
        }
        if (take_b) ++b;
        if (take_a) ++a;
      }
    }
    list->digest = VersionOf(list->resources);
    entry->list = std::move(list);
  });
  return entry->list;
}

size_t ViewCache::size() {
  absl::MutexLock lock(&mu_);
  return entries_.size();
}

}  // namespace holdfast
