// SPDX-License-Identifier: BSD-3-Clause
// The policy module's operator surface: its console rows, registered at start-up.
//
//   dpumesh::policy::cli::register_module();   // before the console is built
//
// Rows: show policy, set route|ratelimit|timeout|policy (docs/console.md); telemetry:
// /dpumesh/policy. The console and lib/control do not know them: they serve whatever their
// shared tables hold.
#pragma once

namespace dpumesh::policy::cli {

/** Registers the module's console rows and telemetry families (idempotent). */
void register_module();

} // namespace dpumesh::policy::cli
