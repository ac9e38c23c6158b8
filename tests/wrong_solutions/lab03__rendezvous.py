"""Wrong solutions to lab 03 that its checks must reject (see lab01's file for the format)."""

WRONG = {
    "barrier recorded before the waits": ("make_barrier", '''
def make_barrier(producer_events, rendezvous_stream):
    barrier = cuda.event()
    barrier.record(rendezvous_stream)
    for ev in producer_events:
        ev.wait(rendezvous_stream)
    return barrier
''', "check_part1", "wait first, then record"),

    "forgets the last producer": ("make_barrier", '''
def make_barrier(producer_events, rendezvous_stream):
    for ev in producer_events[:-1]:
        ev.wait(rendezvous_stream)
    barrier = cuda.event()
    barrier.record(rendezvous_stream)
    return barrier
''', "check_part1", "never waits for producer 3"),

    "the host waits for the producers": ("make_barrier", '''
def make_barrier(producer_events, rendezvous_stream):
    for ev in producer_events:
        ev.synchronize()
    barrier = cuda.event()
    barrier.record(rendezvous_stream)
    return barrier
''', "check_part1", "you synchronized the host"),

    "consumer does not wait": ("launch_consumer", '''
def launch_consumer(stream, barrier, buffer, start, size):
    consumer_kernel[blocks(size), THREADS, stream](buffer, start, size)
''', "check_part2", "never waits on the barrier"),

    "consumer waits with the host": ("launch_consumer", '''
def launch_consumer(stream, barrier, buffer, start, size):
    barrier.synchronize()
    consumer_kernel[blocks(size), THREADS, stream](buffer, start, size)
''', "check_part2", "you synchronized the host"),

    "consumer on the default stream": ("launch_consumer", '''
def launch_consumer(stream, barrier, buffer, start, size):
    barrier.wait(stream)
    consumer_kernel[blocks(size), THREADS](buffer, start, size)
''', "check_part2", "legacy default stream"),

    "returns the last producer's event": ("make_barrier", '''
def make_barrier(producer_events, rendezvous_stream):
    for ev in producer_events:
        ev.wait(rendezvous_stream)
    return producer_events[-1]
''', "check_part1", "never recorded in the rendezvous stream"),

    "barrier recorded in the wrong stream": ("make_barrier", '''
def make_barrier(producer_events, rendezvous_stream):
    for ev in producer_events:
        ev.wait(rendezvous_stream)
    barrier = cuda.event()
    barrier.record(cuda.stream())
    return barrier
''', "check_part1", "never recorded in the rendezvous stream"),

    "waits on each producer twice": ("make_barrier", '''
def make_barrier(producer_events, rendezvous_stream):
    for ev in producer_events + producer_events:
        ev.wait(rendezvous_stream)
    barrier = cuda.event()
    barrier.record(rendezvous_stream)
    return barrier
''', "check_part1", "wait once for each producer event"),

    "barrier waited on in a stream of its own": ("launch_consumer", '''
def launch_consumer(stream, barrier, buffer, start, size):
    barrier.wait(cuda.stream())
    consumer_kernel[blocks(size), THREADS, stream](buffer, start, size)
''', "check_part2", "never waits on the barrier"),

    "one block per consumer": ("launch_consumer", '''
def launch_consumer(stream, barrier, buffer, start, size):
    barrier.wait(stream)
    consumer_kernel[1, THREADS, stream](buffer, start, size)
''', "check_part2", "values are wrong"),

    "polls the barrier on the host": ("launch_consumer", '''
def launch_consumer(stream, barrier, buffer, start, size):
    while not barrier.query():
        pass
    consumer_kernel[blocks(size), THREADS, stream](buffer, start, size)
''', "check_part2", "you synchronized the host"),
}

# Right answers in other words: each must pass its part (and every other part).
RIGHT = {
    "the event made first, recorded after the waits": ("make_barrier", '''
def make_barrier(producer_events, rendezvous_stream):
    barrier = cuda.event(timing=False)
    for i in range(len(producer_events)):
        producer_events[i].wait(rendezvous_stream)
    barrier.record(rendezvous_stream)
    return barrier
''', "check_part1"),

    "a consumer that names its grid first": ("launch_consumer", '''
def launch_consumer(stream, barrier, buffer, start, size):
    grid = (size + THREADS - 1) // THREADS
    barrier.wait(stream)
    consumer_kernel[grid, THREADS, stream](buffer, start, size)
''', "check_part2"),
}
