// The bundled model (models/kvq-code-16m), loaded once per test process and kept for its life:
// model tests share it instead of each loading its own.
#pragma once

#include "model/model.h"

namespace kvaudit::testing {

const Model& BundledModel();

}  // namespace kvaudit::testing
