#include "support/bundled_model.h"

#include "support/fixtures.h"

namespace kvaudit::testing {

const Model& BundledModel() {
  static const Model* model = [] {
    auto r = Model::Load(BundledModelDir().string());
    KV_CHECK_MSG(r.ok(), r.ok() ? "" : r.error().message.c_str());
    return std::move(r).value().release();
  }();
  return *model;
}

}  // namespace kvaudit::testing
