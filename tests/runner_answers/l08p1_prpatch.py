# lab: lab08
# call: check_part1(launch_urgent, seed=8)
# desc: cheat: no priorities, lab08.priority_range patched to (0, 0)
import streamlab.labs.lab08 as _L
def launch_urgent(work_ns, last_end, out, started):
    _L.priority_range = lambda: (0, 0)
    s, u = cuda.stream(), cuda.stream()
    for _ in range(4):
        background[BLOCKS, THREADS, s](work_ns, last_end)
    urgent[1, 32, u](out, started)
