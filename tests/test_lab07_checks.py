"""Lab 07's checks (streamlab.labs.lab07), held to right answers and wrong ones.

The lab's notebooks join labs/ and solutions/ once their solution has a GPU run; until
then its checks are tested here, in process: every wrong answer below must fail its part
with the feedback named, and every right one (in other words too) must pass.
"""

import textwrap

import pytest

import streamlab
from streamlab.check import CheckFailed
from streamlab.labs import lab07

RIGHT_PART1 = '''
def capture_pipeline(builder, slots):
    parts = builder.split(len(slots))
    for p, slot in zip(parts, slots):
        slot.d_in.copy_to_device(slot.h_in, stream=p.stream)
        transform[BLOCKS, THREADS, p](slot.d_out, slot.d_in)
        slot.d_out.copy_to_host(slot.h_out, stream=p.stream)
    streamlab.join(*parts)
'''

RIGHT_PART2 = '''
def capture_with_events(origin, streams, slots):
    fork = cuda.event()
    fork.record(origin)
    ends = []
    for s, slot in zip(streams, slots):
        fork.wait(s)
        slot.d_in.copy_to_device(slot.h_in, stream=s)
        transform[BLOCKS, THREADS, s](slot.d_out, slot.d_in)
        slot.d_out.copy_to_host(slot.h_out, stream=s)
        end = cuda.event()
        end.record(s)
        ends.append(end)
    for end in ends:
        end.wait(origin)
'''

RIGHT_PART3 = '''
def run_batches(graph, stream, slots, batches):
    results = []
    for batch in batches:
        for slot, chunk in zip(slots, batch):
            np.copyto(slot.h_in, chunk)
        graph.launch(stream)
        stream.synchronize()
        results.append([slot.h_out.copy() for slot in slots])
    return results
'''

RIGHT = {
    "split and join": (1, RIGHT_PART1),
    "split, with the first branch's own stream for copies": (1, '''
def capture_pipeline(builder, slots):
    branches = builder.split(len(slots))
    for i, slot in enumerate(slots):
        b = branches[i]
        cuda.to_device(slot.h_in, stream=b.stream, to=slot.d_in)
        transform[BLOCKS, THREADS, b](slot.d_out, slot.d_in)
        slot.d_out.copy_to_host(slot.h_out, stream=b.stream)
    type(builder).join(*branches)
'''),
    "events": (2, RIGHT_PART2),
    "events, one join event waited on in turn": (2, '''
def capture_with_events(origin, streams, slots):
    start = cuda.event()
    start.record(origin)
    for s, slot in zip(streams, slots):
        start.wait(s)
        slot.d_in.copy_to_device(slot.h_in, stream=s)
        transform[BLOCKS, THREADS, s](slot.d_out, slot.d_in)
        slot.d_out.copy_to_host(slot.h_out, stream=s)
    for s in streams:
        done = cuda.event()
        done.record(s)
        done.wait(origin)
'''),
    "replay": (3, RIGHT_PART3),
    "replay, waiting on an event": (3, '''
def run_batches(graph, stream, slots, batches):
    out = []
    done = cuda.event()
    for batch in batches:
        for slot, chunk in zip(slots, batch):
            slot.h_in[:] = chunk
        graph.launch(stream)
        done.record(stream)
        done.synchronize()
        out.append([np.array(slot.h_out) for slot in slots])
    return out
'''),
}

WRONG = {
    "never joined": (1, RIGHT_PART1.replace("    streamlab.join(*parts)\n", ""),
                     "never joined"),
    "every slot in one branch": (1, '''
def capture_pipeline(builder, slots):
    for slot in slots:
        slot.d_in.copy_to_device(slot.h_in, stream=builder.stream)
        transform[BLOCKS, THREADS, builder](slot.d_out, slot.d_in)
        slot.d_out.copy_to_host(slot.h_out, stream=builder.stream)
''', "run one after the other"),
    "a synchronize inside the capture": (1, RIGHT_PART1.replace(
        "        slot.d_out.copy_to_host(slot.h_out, stream=p.stream)\n",
        "        slot.d_out.copy_to_host(slot.h_out, stream=p.stream)\n"
        "        cuda.synchronize()\n"), "cannot hold"),
    "pageable host memory": (1, RIGHT_PART1.replace(
        "slot.d_in.copy_to_device(slot.h_in, stream=p.stream)",
        "slot.d_in.copy_to_device(np.array(slot.h_in), stream=p.stream)"), "snapshot"),
    "kernel on the default stream": (1, RIGHT_PART1.replace(
        "transform[BLOCKS, THREADS, p]", "transform[BLOCKS, THREADS]"), "0 kernels"),
    "copy out forgotten": (1, RIGHT_PART1.replace(
        "        slot.d_out.copy_to_host(slot.h_out, stream=p.stream)\n", ""),
        "0 copies out"),
    "kernel before its copy in": (1, '''
def capture_pipeline(builder, slots):
    parts = builder.split(len(slots))
    for p, slot in zip(parts, slots):
        transform[BLOCKS, THREADS, p](slot.d_out, slot.d_in)
        slot.d_in.copy_to_device(slot.h_in, stream=p.stream)
        slot.d_out.copy_to_host(slot.h_out, stream=p.stream)
    streamlab.join(*parts)
''', "follows no copy in"),
    "no fork: the streams are not in the capture": (2, RIGHT_PART2.replace(
        "        fork.wait(s)\n", ""), "no work at all"),
    "no join": (2, RIGHT_PART2.replace("    for end in ends:\n        end.wait(origin)\n",
                                       ""), "never joined"),
    "join event recorded in the origin": (2, RIGHT_PART2.replace("end.record(s)",
                                                                 "end.record(origin)"),
                                          "never joined"),
    "streamed, not replayed": (3, '''
def run_batches(graph, stream, slots, batches):
    results = []
    for batch in batches:
        for slot, chunk in zip(slots, batch):
            np.copyto(slot.h_in, chunk)
            slot.d_in.copy_to_device(slot.h_in, stream=stream)
            transform[BLOCKS, THREADS, stream](slot.d_out, slot.d_in)
            slot.d_out.copy_to_host(slot.h_out, stream=stream)
        stream.synchronize()
        results.append([slot.h_out.copy() for slot in slots])
    return results
''', "of its own"),
    "no wait before reading": (3, RIGHT_PART3.replace("        stream.synchronize()\n", ""),
                               "nothing orders the two"),
    "launched twice a batch": (3, RIGHT_PART3.replace(
        "        graph.launch(stream)\n", "        graph.launch(stream)\n        graph.launch(stream)\n"),
        "launched 10 time(s)"),
    "the results computed on the host (a cheat)": (3, '''
def run_batches(graph, stream, slots, batches):
    results = []
    for batch in batches:
        graph.launch(stream)
        stream.synchronize()
        results.append([2 * chunk + 1 for chunk in batch])
    return results
''', "values are wrong"),
    "one launch for every batch": (3, '''
def run_batches(graph, stream, slots, batches):
    graph.launch(stream)
    stream.synchronize()
    return [[slot.h_out.copy() for slot in slots] for _ in batches]
''', "launched 1 time(s)"),
}


def run(number, code):
    ns = {}
    exec("import numpy as np\nimport streamlab\nfrom numba import cuda\n"  # noqa: S102
         "from streamlab.labs.lab07 import *\n", ns)
    exec(textwrap.dedent(code), ns)  # noqa: S102
    fn = {1: "capture_pipeline", 2: "capture_with_events", 3: "run_batches"}[number]
    getattr(lab07, f"check_part{number}")(ns[fn], seed=number)


@pytest.fixture(scope="module", autouse=True)
def warm():
    lab07.warm_up()


@pytest.mark.parametrize("name", RIGHT)
def test_a_right_answer_passes(name, capsys):
    number, code = RIGHT[name]
    run(number, code)
    assert f"Part {number}: passed" in capsys.readouterr().out


@pytest.mark.parametrize("name", WRONG)
def test_a_wrong_answer_fails_with_useful_feedback(name):
    number, code, phrase = WRONG[name]
    with pytest.raises((CheckFailed, streamlab.RaceError)) as e:
        run(number, code)
    assert phrase in str(e.value), str(e.value)
    assert str(e.value).startswith(f"Part {number}") or isinstance(e.value, streamlab.RaceError)


def test_a_stub_is_not_done_yet(capsys):
    def capture_pipeline(builder, slots):
        raise NotImplementedError

    lab07.check_part1(capture_pipeline)
    assert "Part 1: not done yet" in capsys.readouterr().out
    assert not streamlab.graphs._active, "the check left a capture open"
