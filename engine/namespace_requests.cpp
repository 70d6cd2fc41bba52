// The namespace RPCs: register, describe, list and update, over the
// engine's NamespaceRegistry. Registering and updating write the store, so
// they run on the upload pool (which may wait for the writer), never on the
// caller's thread.
#include "engine/engine.hpp"
#include "engine/log.hpp"
#include "reprise/detail/proto_time.hpp"

namespace reprise::engine {

namespace {

v1::NamespaceInfo to_info(const NamespaceRecord& r, std::chrono::seconds server_retention) {
  v1::NamespaceInfo out;
  out.set_name(r.name);
  out.set_description(r.description);
  if (r.retention) set_duration(out.mutable_retention(), *r.retention);
  set_duration(out.mutable_effective_retention(), r.retention.value_or(server_retention));
  set_time(out.mutable_create_time(), r.created_at);
  return out;
}

std::chrono::seconds retention_of(const google::protobuf::Duration& d) { return std::chrono::seconds(d.seconds()); }

}  // namespace

void Engine::register_namespace(v1::RegisterNamespaceRequest request, Reply<v1::RegisterNamespaceResponse> reply) {
  on_pool(upload_pool_, reply, [this, request = std::move(request), reply] {
    NamespaceRecord record;
    record.name = request.namespace_();
    record.description = request.description();
    if (request.has_retention()) record.retention = retention_of(request.retention());
    record.created_at = clock_.now();
    Result<NamespaceRecord> created = namespaces_->create(std::move(record));
    if (!created) return reply(created.status());
    log::info("namespace registered", {{"namespace", created->name}});
    v1::RegisterNamespaceResponse out;
    *out.mutable_namespace_info() = to_info(*created, options_.retention);
    reply(std::move(out));
  });
}

void Engine::describe_namespace(v1::DescribeNamespaceRequest request, Reply<v1::DescribeNamespaceResponse> reply) {
  Result<NamespaceRecord> record = namespaces_->get(request.namespace_());
  if (!record) return reply(record.status());
  v1::DescribeNamespaceResponse out;
  *out.mutable_namespace_info() = to_info(*record, options_.retention);
  reply(std::move(out));
}

void Engine::list_namespaces(v1::ListNamespacesRequest, Reply<v1::ListNamespacesResponse> reply) {
  v1::ListNamespacesResponse out;
  for (const NamespaceRecord& r : namespaces_->all()) *out.add_namespaces() = to_info(r, options_.retention);
  reply(std::move(out));
}

void Engine::update_namespace(v1::UpdateNamespaceRequest request, Reply<v1::UpdateNamespaceResponse> reply) {
  if (request.has_retention() && request.use_server_retention()) {
    return reply(Status::invalid_argument("give retention or use_server_retention, not both"));
  }
  on_pool(upload_pool_, reply, [this, request = std::move(request), reply] {
    std::string name = request.namespace_();
    if (name.empty()) name = kDefaultNamespace;
    Result<NamespaceRecord> updated = namespaces_->update(name, [&request](NamespaceRecord& r) {
      if (request.has_description()) r.description = request.description();
      if (request.has_retention()) r.retention = retention_of(request.retention());
      if (request.use_server_retention()) r.retention.reset();
      return Status::ok();
    });
    if (!updated) return reply(updated.status());
    log::info("namespace updated", {{"namespace", updated->name}});
    v1::UpdateNamespaceResponse out;
    *out.mutable_namespace_info() = to_info(*updated, options_.retention);
    reply(std::move(out));
  });
}

}  // namespace reprise::engine
