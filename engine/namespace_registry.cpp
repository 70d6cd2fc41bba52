#include "engine/namespace_registry.hpp"

namespace reprise::engine {

namespace {

constexpr size_t kMaxNameBytes = 64;
constexpr size_t kMaxDescriptionBytes = 1000;
constexpr std::chrono::seconds kMaxRetention{100LL * 366 * 24 * 3600};

Status validate(const NamespaceRecord& r) {
  REPRISE_RETURN_IF_ERROR(validate_namespace_name(r.name));
  if (r.description.size() > kMaxDescriptionBytes) {
    return Status::invalid_argument("a namespace's description may have at most " +
                                    std::to_string(kMaxDescriptionBytes) + " bytes, not " +
                                    std::to_string(r.description.size()));
  }
  if (r.retention && (r.retention->count() < 0 || *r.retention > kMaxRetention)) {
    return Status::invalid_argument("a namespace's retention must be between 0 (keep forever) and 100 years, not " +
                                    std::to_string(r.retention->count()) + " s");
  }
  return Status::ok();
}

}  // namespace

Status validate_namespace_name(const std::string& name) {
  if (name.empty() || name.size() > kMaxNameBytes) {
    return Status::invalid_argument("a namespace name must have 1 to " + std::to_string(kMaxNameBytes) +
                                    " characters, not " + std::to_string(name.size()));
  }
  for (char c : name) {
    const bool ok =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
    if (!ok) {
      return Status::invalid_argument("namespace name '" + name + "' may hold only letters, digits, '.', '_' and '-'");
    }
  }
  return Status::ok();
}

Result<std::unique_ptr<NamespaceRegistry>> NamespaceRegistry::load(Store& store) {
  Result<std::vector<NamespaceRecord>> records = store.list_namespaces();
  if (!records) return records.status().with_context("reading the namespaces");
  return std::unique_ptr<NamespaceRegistry>(new NamespaceRegistry(store, std::move(records).value()));
}

NamespaceRegistry::NamespaceRegistry(Store& store, std::vector<NamespaceRecord> records) : store_(store) {
  for (NamespaceRecord& r : records) {
    std::string name = r.name;
    records_.emplace(std::move(name), std::move(r));
  }
}

Status NamespaceRegistry::check(std::string& name) const {
  if (name.empty()) name = kDefaultNamespace;
  std::lock_guard lock(mu_);
  if (records_.count(name) == 0) return Status::not_found("namespace '" + name + "' does not exist");
  return Status::ok();
}

Result<NamespaceRecord> NamespaceRegistry::get(std::string name) const {
  REPRISE_RETURN_IF_ERROR(check(name));
  std::lock_guard lock(mu_);
  return records_.at(name);
}

std::vector<NamespaceRecord> NamespaceRegistry::all() const {
  std::lock_guard lock(mu_);
  std::vector<NamespaceRecord> out;
  for (const auto& [name, record] : records_) out.push_back(record);
  return out;
}

Result<NamespaceRecord> NamespaceRegistry::create(NamespaceRecord record) {
  REPRISE_RETURN_IF_ERROR(validate(record));
  std::lock_guard one_write(write_mu_);
  REPRISE_RETURN_IF_ERROR(store_.create_namespace(record));
  std::lock_guard lock(mu_);
  records_[record.name] = record;
  return record;
}

Result<NamespaceRecord> NamespaceRegistry::update(const std::string& name,
                                                  const std::function<Status(NamespaceRecord&)>& change) {
  std::lock_guard one_write(write_mu_);
  Result<NamespaceRecord> record = get(name);
  if (!record) return record.status();
  REPRISE_RETURN_IF_ERROR(change(*record));
  record->name = name;
  REPRISE_RETURN_IF_ERROR(validate(*record));
  REPRISE_RETURN_IF_ERROR(store_.update_namespace(*record));
  std::lock_guard lock(mu_);
  records_[name] = *record;
  return record;
}

}  // namespace reprise::engine
