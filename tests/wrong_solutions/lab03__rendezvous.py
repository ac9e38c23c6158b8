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
}
