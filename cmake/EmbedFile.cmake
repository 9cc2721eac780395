# SPDX-License-Identifier: BSD-3-Clause
# Writes ${OUT}: a C++ file defining dpumesh::embedded_default_config with ${IN}'s text.
file(READ ${IN} text HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${text}")
file(WRITE ${OUT} "// generated from conf/default.json; do not edit\n"
  "#include <string_view>\n"
  "namespace dpumesh {\n"
  "static const char embedded_bytes[] = {${bytes} 0};\n"
  "extern const std::string_view embedded_default_config(embedded_bytes, sizeof(embedded_bytes) - 1);\n"
  "}\n")
