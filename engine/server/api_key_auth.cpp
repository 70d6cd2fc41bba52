#include "engine/server/api_key_auth.hpp"

#include <strings.h>

#include "engine/log.hpp"
#include "engine/namespace_registry.hpp"
#include "engine/store/api_keys.hpp"
#include "engine/thread_name.hpp"

namespace reprise::engine {

namespace {

unsigned role_bit(const std::string& name) {
  if (name == "worker") return static_cast<unsigned>(Role::kWorker);
  if (name == "client") return static_cast<unsigned>(Role::kClient);
  if (name == "reader") return static_cast<unsigned>(Role::kReader);
  if (name == "admin") return static_cast<unsigned>(Role::kAdmin);
  return 0;  // a role this build does not know grants nothing
}

// The key of "Bearer <key>" (the scheme in any case, as RFC 6750 allows).
std::string_view bearer_key(std::string_view authorization) {
  constexpr std::string_view kScheme = "bearer ";
  if (authorization.size() <= kScheme.size() ||
      strncasecmp(authorization.data(), kScheme.data(), kScheme.size()) != 0) {
    return {};
  }
  std::string_view key = authorization.substr(kScheme.size());
  while (!key.empty() && key.front() == ' ') key.remove_prefix(1);
  while (!key.empty() && key.back() == ' ') key.remove_suffix(1);
  return key;
}

}  // namespace

std::string Roles::names() const {
  std::string out;
  for (const char* name : kRoleNames) {
    const unsigned bit = role_bit(name);
    if ((bits_ & bit) == 0 || bit == static_cast<unsigned>(Role::kAdmin)) continue;
    out += (out.empty() ? "" : ", ") + std::string(name);
  }
  return out.empty() ? "admin" : out + " or admin";
}

Result<std::unique_ptr<ApiKeyAuth>> ApiKeyAuth::start(Store& store, std::chrono::milliseconds refresh) {
  std::unique_ptr<ApiKeyAuth> auth(new ApiKeyAuth(store, refresh));
  REPRISE_RETURN_IF_ERROR(auth->reload());
  auth->thread_ = std::thread([raw = auth.get()] { raw->refresh_loop(); });
  name_thread(auth->thread_, "api-keys");
  return auth;
}

ApiKeyAuth::~ApiKeyAuth() {
  {
    std::lock_guard lock(stop_mu_);
    stopping_ = true;
  }
  stop_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

Status ApiKeyAuth::reload() {
  Result<std::vector<ApiKeyRecord>> keys = store_.api_keys();
  if (!keys) return keys.status().with_context("reading the API keys");
  auto grants = std::make_shared<Grants>();
  for (const ApiKeyRecord& key : *keys) {
    Grant g{key.name, {key.namespaces.begin(), key.namespaces.end()}, 0, key.revoked_at.has_value()};
    for (const std::string& role : key.roles) g.roles |= role_bit(role);
    grants->emplace(key.sha256, std::move(g));
  }
  std::lock_guard lock(mu_);
  grants_ = std::move(grants);
  return Status::ok();
}

void ApiKeyAuth::refresh_loop() {
  std::unique_lock lock(stop_mu_);
  while (!stop_cv_.wait_for(lock, refresh_, [this] { return stopping_; })) {
    lock.unlock();
    // A failed read keeps the keys read last: a busy disk must not open
    // the server, nor lock everyone out.
    if (Status s = reload(); !s) log::error("could not read the API keys again", {{"error", s.to_string()}});
    lock.lock();
  }
}

std::shared_ptr<const ApiKeyAuth::Grants> ApiKeyAuth::grants() const {
  std::lock_guard lock(mu_);
  return grants_;
}

bool ApiKeyAuth::keys_defined() const { return !grants()->empty(); }

Result<const ApiKeyAuth::Grant*> ApiKeyAuth::authenticate(const Grants& grants, std::string_view authorization) {
  if (authorization.empty()) {
    return Status::unauthenticated("this server requires an API key: send 'authorization: Bearer <key>'");
  }
  const std::string_view key = bearer_key(authorization);
  if (key.empty()) return Status::unauthenticated("the authorization header must be 'Bearer <key>'");
  auto it = grants.find(api_key_hash(key));
  if (it == grants.end()) return Status::unauthenticated("the API key is not known to this server");
  if (it->second.revoked) return Status::unauthenticated("API key '" + it->second.name + "' has been revoked");
  return &it->second;
}

Status ApiKeyAuth::authorize(std::string_view authorization, Roles needed, std::string namespace_id,
                             std::string_view call) const {
  const std::shared_ptr<const Grants> all = grants();
  if (all->empty()) return Status::ok();  // no keys: open
  Result<const Grant*> grant = authenticate(*all, authorization);
  if (!grant) return grant.status();
  const Grant& g = **grant;
  if (!needed.any_of(g.roles)) {
    return Status::permission_denied("API key '" + g.name + "' lacks the role " + needed.names() + " that " +
                                     std::string(call) + " needs");
  }
  if (namespace_id.empty()) namespace_id = kDefaultNamespace;
  if (g.namespaces.count("*") == 0 && (namespace_id == "*" || g.namespaces.count(namespace_id) == 0)) {
    return Status::permission_denied(
        "API key '" + g.name + "' may not use " +
        (namespace_id == "*" ? std::string("every namespace") : "namespace '" + namespace_id + "'") + " (" +
        std::string(call) + ")");
  }
  return Status::ok();
}

bool ApiKeyAuth::may_see(std::string_view authorization, const std::string& namespace_id) const {
  const std::shared_ptr<const Grants> all = grants();
  if (all->empty()) return true;
  Result<const Grant*> grant = authenticate(*all, authorization);
  return grant && ((*grant)->namespaces.count("*") > 0 || (*grant)->namespaces.count(namespace_id) > 0);
}

}  // namespace reprise::engine
