#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
"""Split fi_bench's large-message ping-pong over tcp;ofi_rxm into phases.

A rendezvous message between two processes over tcp;ofi_rxm 1.17 shows on
the wire the same way whether lnx (RTS-read) or rxm alone (its own
rendezvous) carries it: the sender's sendmsg of a short request (184
bytes), the receiver's read request, the sender's one sendmsg of header
plus payload (the read response), then the receiver's acknowledgement.
From the sender's sendmsg system calls this script measures, per one-way
message of the ping-pong:

  rts->data   the request leaving until the payload's sendmsg starts
              (the receiver noticing the request, matching it, asking)
  data        the payload's sendmsg (the sender's copy; on lo the
              receiver drains the socket meanwhile)
  data->next  the payload's sendmsg returning until the receiver's own
              request leaves (it completing the receive, the
              application's turnaround, the next send's setup)

Record with perf kept out of the benchmark's real-time class (a perf
thread at SCHED_FIFO competes with the pollers and doubles the times):

  perf record -q -m 1024 -o rec.data \\
    -e syscalls:sys_enter_sendmsg,syscalls:sys_exit_sendmsg -- \\
    chrt -f 1 env FI_PROVIDER_PATH=$PWD/build/lib FI_TCP_IFACE=lo \\
    build/bench/fi_bench -q -r 1 -w 1000 -n 2000 -s 1048576 CASE
  perf script -i rec.data -F tid,time,event,trace > rec.txt
  tests/bench/net_phases.py 1048576 rec.txt ...

Only the ping-pong's messages are counted (the streaming test's sends do
not alternate between the processes). Prints medians and quartiles in
microseconds.
"""
import re
import statistics
import sys


def phases(path, size):
    want = hex(size + 16)  # the read response: tcp's 16-byte header + payload
    entered = {}
    state = None
    out = ([], [], [])
    pat = re.compile(r'\s*(\d+)\s+([\d.]+):\s+(?:syscalls:)?(\S+?):?\s+(.*)')
    for line in open(path):
        m = pat.match(line)
        if not m:
            continue
        tid, t, ev, rest = int(m[1]), float(m[2]) * 1e6, m[3], m[4].strip()
        if ev == 'sys_enter_sendmsg':
            entered[tid] = t
            continue
        if ev != 'sys_exit_sendmsg' or tid not in entered:
            continue
        if rest == '0xb8':  # a request
            if state and state[0] == 'data' and tid != state[1]:
                _, _, t0, t1, t2 = state
                out[0].append(t1 - t0)
                out[1].append(t2 - t1)
                out[2].append(entered[tid] - t2)
            state = ('rts', tid, entered[tid])
        elif rest == want and state and state[0] == 'rts' and tid == state[1]:
            state = ('data', tid, state[2], entered[tid], t)
        else:
            state = None
    return out


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    size = int(sys.argv[1])
    for path in sys.argv[2:]:
        a, b, c = phases(path, size)
        if len(a) < 4:
            print(f'{path}: {len(a)} one-way messages found')
            continue
        tot = [x + y + z for x, y, z in zip(a, b, c)]

        def q(v):
            qs = statistics.quantiles(v, n=4)
            return f'{statistics.median(v):7.1f} [{qs[0]:.0f}-{qs[2]:.0f}]'
        print(f'{path}: {len(a)} one-way: rts->data {q(a)}  data {q(b)}  '
              f'data->next {q(c)}  total {q(tot)}')


if __name__ == '__main__':
    main()
