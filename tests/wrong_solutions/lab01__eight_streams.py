"""Wrong solutions to lab 01 that its checks must reject, each with the feedback expected.

Each entry: name -> (the graded function's grade_id, the wrong code, the check cell that
must fail, a phrase its message must contain[, check cells of later parts that build on
this one and so may fail too]).
"""

WRONG = {
    "all launches on one stream": ("launch_on_streams", '''
def launch_on_streams(inputs, outputs, streams):
    for inp, out in zip(inputs, outputs):
        work[1, 64, streams[0]](out, inp, REPS)
''', "check_part1", "stream 0 got 8 launches"),

    "no stream: the legacy default stream": ("launch_on_streams", '''
def launch_on_streams(inputs, outputs, streams):
    for inp, out in zip(inputs, outputs):
        work[1, 64](out, inp, REPS)
''', "check_part1", "legacy default stream"),

    "host synchronize after each launch": ("launch_on_streams", '''
def launch_on_streams(inputs, outputs, streams):
    for inp, out, s in zip(inputs, outputs, streams):
        work[1, 64, s](out, inp, REPS)
        s.synchronize()
''', "check_part1", "you synchronized the host"),

    "wrong input to each stream": ("launch_on_streams", '''
def launch_on_streams(inputs, outputs, streams):
    for inp, out, s in zip(inputs[::-1], outputs, streams):
        work[1, 64, s](out, inp, REPS)
''', "check_part1", "values are wrong"),

    "only eight streams, whatever is passed": ("launch_on_streams", '''
def launch_on_streams(inputs, outputs, streams):
    for i in range(8):
        work[1, 64, streams[i]](outputs[i], inputs[i], REPS)
''', "check_part1", "IndexError"),

    "dummies on the legacy default stream": ("launch_with_dummies", '''
def launch_with_dummies(inputs, outputs, streams, dummy):
    for inp, out, s in zip(inputs, outputs, streams):
        work[1, 64, s](out, inp, REPS)
        dummy_kernel[1, 1](dummy)
''', "check_part2", "a dummy kernel went to the legacy default stream"),

    "dummies left out": ("launch_with_dummies", '''
def launch_with_dummies(inputs, outputs, streams, dummy):
    for inp, out, s in zip(inputs, outputs, streams):
        work[1, 64, s](out, inp, REPS)
''', "check_part2", "0 dummy_kernel launches"),

    "waits for the whole device": ("wait_for", '''
def wait_for(stream):
    cuda.synchronize()
''', "check_part3", "waits for the whole device"),

    "does not wait at all": ("wait_for", '''
def wait_for(stream):
    pass
''', "check_part3", "you did not wait for stream"),
}
