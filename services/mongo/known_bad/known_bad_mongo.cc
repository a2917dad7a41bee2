#include "services/mongo/known_bad/known_bad_mongo.h"

#include <utility>

#include "services/mongo/adapter/mongo_adapter.h"
#include "services/mongo/backend/mongo_backend.h"

namespace lockstep {

namespace {

// Passes every command through, except that index specs lose "unique".
class NoUniqueIndexConnection final : public MongoConnection {
 public:
  explicit NoUniqueIndexConnection(MongoConnection& inner) : inner_(inner) {}

  MongoResult run_command(const std::string& database, MongoDocument command) override {
    if (command.contains("createIndexes") && command.contains("indexes")) {
      for (MongoDocument& index : command["indexes"]) index.erase("unique");
    }
    return inner_.run_command(database, std::move(command));
  }
  std::string endpoint() const override { return inner_.endpoint(); }

 private:
  MongoConnection& inner_;
};

class NoUniqueMongoAdapter final : public LockAdapter {
 public:
  NoUniqueMongoAdapter(MongoConnection& connection, Clock& clock, const Options& options)
      : connection_(connection), inner_(production_mongo_adapter()(connection_, clock, options)) {}

  std::string_view name() const override { return "bad-mongo-no-unique"; }
  FencingSupport fencing() const override { return inner_->fencing(); }
  AdapterResult create_lock(const LockSpec& spec) override { return inner_->create_lock(spec); }
  AdapterResult release_lock(const LockSpec& spec) override { return inner_->release_lock(spec); }
  AdapterResult extend_lock(const LockSpec& spec, int64_t ttl_ms) override {
    return inner_->extend_lock(spec, ttl_ms);
  }
  AdapterResult is_valid_lock(const LockSpec& spec) override { return inner_->is_valid_lock(spec); }

 private:
  NoUniqueIndexConnection connection_;
  std::unique_ptr<LockAdapter> inner_;
};

}  // namespace

std::unique_ptr<LockAdapter> make_bad_mongo_no_unique(MongoConnection& connection, Clock& clock,
                                                      const Options& options) {
  return std::make_unique<NoUniqueMongoAdapter>(connection, clock, options);
}

}  // namespace lockstep
