#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# FAKE dpacc (NVIDIA's DPA compiler cannot exist here): records its arguments, one per line,
# in <output>.args (appending, with a "--- run" line per invocation), and makes the output a
# host static library defining `dpumesh_dpa`, as the real DPA program does, so the rule's
# linking can be checked. Built with the -hostcc it is given.
out=""
hostcc=""
prev=""
for a in "$@"; do
	[ "$prev" = "-o" ] && out="$a"
	case "$a" in -hostcc=*) hostcc="${a#-hostcc=}" ;; esac
	prev="$a"
done
[ -n "$out" ] || { echo "fake dpacc: no -o" >&2; exit 2; }
[ -n "$hostcc" ] || { echo "fake dpacc: no -hostcc" >&2; exit 2; }
{
	echo "--- run"
	for a in "$@"; do printf '%s\n' "$a"; done
} >> "$out.args"
dir=$(mktemp -d) || exit 1
printf 'void *dpumesh_dpa = (void *)0x1;\n' > "$dir/app.c"
"$hostcc" -c "$dir/app.c" -o "$dir/app.o" && ar rcs "$out" "$dir/app.o"
rc=$?
rm -rf "$dir"
exit $rc
