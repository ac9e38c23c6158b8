# lab: lab01
# call: check_part1(launch_on_streams, seed=1)
# desc: cheat: racy d2d self-copies, lab01.no_races patched out
import streamlab.labs.lab01 as _L
def launch_on_streams(inputs, outputs, streams):
    _L.no_races = lambda *a, **k: None
    n = len(streams)
    for i, (inp, out, s) in enumerate(zip(inputs, outputs, streams)):
        work[1, 64, s](out, inp, REPS)
        j = (i + 1) % n
        inputs[j].copy_to_device(inputs[j], stream=s)
