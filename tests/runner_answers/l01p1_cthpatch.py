# lab: lab01
# call: check_part1(launch_on_streams, seed=1)
# desc: cheat: reps=0 launches, copy_to_host patched on each output
def launch_on_streams(inputs, outputs, streams):
    for inp, out, s in zip(inputs, outputs, streams):
        work[1, 64, s](out, inp, 0)
        out.copy_to_host = (lambda *a, _i=inp, **k: reference(type(_i).copy_to_host(_i)))
