# lab: lab08
# call: check_part1(launch_urgent, seed=8)
# desc: careless: urgent issued first, and a capture left open on a spare stream
from cuda.core import Device, StreamOptions
def launch_urgent(work_ns, last_end, out, started):
    err, lowest, highest = driver.cuCtxGetStreamPriorityRange()
    dev = Device()
    low = dev.create_stream(options=StreamOptions(priority=lowest))
    high = dev.create_stream(options=StreamOptions(priority=highest))
    urgent[1, 32, high](out, started)
    for _ in range(4):
        background[BLOCKS, THREADS, low](work_ns, last_end)
    streamlab.graph_builder(cuda.stream()).begin_building()
