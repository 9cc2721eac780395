// SPDX-License-Identifier: BSD-3-Clause
// Small text helpers for control-path messages ("did you mean ...?").
#pragma once

#include <cstddef>
#include <string_view>

namespace dpumesh {

/** Levenshtein distance between two words (control path: allocates one row). */
size_t edit_distance(std::string_view a, std::string_view b);

} // namespace dpumesh
