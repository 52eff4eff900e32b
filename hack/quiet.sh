#!/usr/bin/env bash
# Helpers for timed runs on a machine shared with other work. Source this file.
#
# busy_ticks prints the machine's busy and total CPU ticks so far (all cores, /proc/stat).
busy_ticks() { awk '/^cpu /{b=$2+$3+$4+$7+$8+$9; print b, b+$5+$6}' /proc/stat; }
# busy_since "B0 T0" prints the share of the machine's CPU that was busy since busy_ticks gave
# B0 T0 (0.00-1.00).
busy_since() { local b0 t0 b1 t1; read -r b0 t0 <<< "$1"; read -r b1 t1 < <(busy_ticks); awk -v b=$((b1-b0)) -v t=$((t1-t0)) 'BEGIN{printf "%.2f", t ? b/t : 0}'; }
# wait_quiet waits until the machine was busy less than QUIET (default 0.15) over 5 s, for at
# most QUIET_WAIT_S seconds (default 300), and prints the share busy in its last 5 s.
wait_quiet() {
  local until=$(( $(date +%s) + ${QUIET_WAIT_S:-300} )) s b
  while :; do
    s=$(busy_ticks); sleep 5; b=$(busy_since "$s")
    if awk -v b=$b -v q=${QUIET:-0.15} 'BEGIN{exit !(b < q)}' || [ "$(date +%s)" -ge $until ]; then echo $b; return; fi
  done
}
