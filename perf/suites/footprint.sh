# SPDX-License-Identifier: BSD-3-Clause
# Suite "footprint": resident memory (RSS, and PSS: shared pages split among their users)
# of dpumesh on the default config's pools and mempool (conf/pcap.json: conf/default.json with a net_pcap port) and of an echo
# pod with the library's default pools, idle and after traffic that touches the pools; next
# to them, one HAProxy sidecar and the baselines' echo server, idle and after load.
# Sourced by perf/run.sh; writes footprint.csv.

foot_row() { # WHAT PID NOTE
  [ -s "$RESULTS/footprint.csv" ] || echo "what,rss_kb,pss_kb,note" > "$RESULTS/footprint.csv"
  echo "${1//,/;},$(rss_kb "$2"),$(pss_kb "$2"),${3//,/;}" >> "$RESULTS/footprint.csv"
}

suite_footprint() {
  local cfg="$WORK/footprint.json" cap="$WORK/footprint.pcap"
  "$BIN/dpumesh-pcapgen" --out "$cap" --messages 10 > /dev/null
  write_config "$cfg" --sock "$WORK/footprint.sock" --from "$ROOT/conf/pcap.json"
  progress "footprint: [1/2] dpumesh on conf/pcap.json, echo pod with the default pools"
  dp_start footprint "$cfg" --vdev "net_pcap0,rx_pcap=$cap,infinite_rx=0" || return
  sleep 1
  foot_row "dpumesh idle (default config; EAL -m $MEM --no-huge)" "$DP_PID" "no pod registered"
  pod foot-echo DPUMESH_POD_GEOMETRY=default -- echo "$DP_SOCK"
  local echo_pid=$POD_PID
  tel wait "$DP_TEL" /dpumesh/pods pod_id 1 || anomaly ERROR "footprint: echo pod did not register"
  sleep 0.5
  foot_row "echo pod idle (default pools: 256 x 1 KiB headers and 256 x 64 KiB bodies each way)" "$echo_pid" "registered"
  foot_row "dpumesh with one pod" "$DP_PID" "the pod's region mapped"
  local line
  line=$(env DPUMESH_POD_GEOMETRY=default DPUMESH_CLIENT_FIXED=1 DPUMESH_CLIENT_WINDOW=256 \
    "$BIN/dpumesh-pod" client "$DP_SOCK" 4000 "$(next_seed)" 60000 256 2>&1 | tr '\n' ' ') || true
  echo "$line" > "$RAW/footprint-client.txt"
  [ "$(kv "$line" ok)" = 4000 ] || anomaly ERROR "footprint: traffic failed: ${line:0:200}"
  foot_row "echo pod after 4000 x 60 KB round trips" "$echo_pid" "every pool slot touched"
  foot_row "dpumesh after that traffic" "$DP_PID" ""
  stop_pid "$echo_pid"
  dp_stop

  progress "footprint: [2/2] one HAProxy sidecar and the baselines' echo server"
  "$BIN/dpumesh-http-echo" > "$RAW/foot-http-echo.log" 2>&1 &
  local srv=$!; track "$srv"
  local port=""
  for _ in $(seq 100); do port=$(sed -n 's/^LISTEN port=//p' "$RAW/foot-http-echo.log"); [ -n "$port" ] && break; sleep 0.05; done
  local pa; pa=$(free_port)
  haproxy_cfg "$pa" "$port" > "$WORK/foot-haproxy.cfg"
  haproxy -db -f "$WORK/foot-haproxy.cfg" > "$RAW/foot-haproxy.log" 2>&1 & local ha=$!; track "$ha"
  sleep 0.5
  foot_row "haproxy idle (HTTP mode, nbthread 1)" "$ha" ""
  foot_row "dpumesh-http-echo idle" "$srv" ""
  "$BIN/dpumesh-http-load" --port "$pa" --conns 64 --size 60000 --seconds 1 --warmup 0 > "$RAW/foot-load.txt" 2>&1 ||
    anomaly ERROR "footprint: load through haproxy failed: $(cat "$RAW/foot-load.txt")"
  foot_row "haproxy after 1 s of 64 x 60 KB outstanding" "$ha" ""
  foot_row "dpumesh-http-echo after that load" "$srv" ""
  stop_pid "$ha"; stop_pid "$srv" INT
}
