// SPDX-License-Identifier: BSD-3-Clause
// libFuzzer target: the config loader (jansson + locator + validation) on arbitrary bytes.
// Any input must give a config or an error that names a location; never a crash or leak.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "dpumesh/config/config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	std::string_view text(reinterpret_cast<const char *>(data), size);
	auto cfg = dpumesh::config::load_string(text, "fuzz.json");
	if (!cfg) {
		/* every error starts with the source name */
		if (cfg.error().message().rfind("fuzz.json:", 0) != 0)
			std::abort();
	} else if (cfg->node.name.empty()) {
		std::abort(); /* a valid config always has a node name */
	}
	return 0;
}
