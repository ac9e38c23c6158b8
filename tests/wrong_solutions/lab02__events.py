"""Wrong solutions to lab 02 that its checks must reject (see lab01's file for the format)."""

WRONG = {
    "host waits instead of the stream": ("produce_then_consume", '''
def produce_then_consume(src, data, out, producer_stream, consumer_stream):
    producer[BLOCKS, THREADS, producer_stream](data, src)
    producer_stream.synchronize()
    consumer[BLOCKS, THREADS, consumer_stream](data, out)
''', "check_part1", "you synchronized the host"),

    "no wait at all": ("produce_then_consume", '''
def produce_then_consume(src, data, out, producer_stream, consumer_stream):
    producer[BLOCKS, THREADS, producer_stream](data, src)
    consumer[BLOCKS, THREADS, consumer_stream](data, out)
''', "check_part1", "never waits"),

    "wait before record": ("produce_then_consume", '''
def produce_then_consume(src, data, out, producer_stream, consumer_stream):
    ready = cuda.event()
    ready.wait(consumer_stream)
    producer[BLOCKS, THREADS, producer_stream](data, src)
    ready.record(producer_stream)
    consumer[BLOCKS, THREADS, consumer_stream](data, out)
''', "check_part1", "not been recorded yet"),

    "event recorded in the consumer's stream": ("produce_then_consume", '''
def produce_then_consume(src, data, out, producer_stream, consumer_stream):
    ready = cuda.event()
    producer[BLOCKS, THREADS, producer_stream](data, src)
    ready.record(consumer_stream)
    ready.wait(consumer_stream)
    consumer[BLOCKS, THREADS, consumer_stream](data, out)
''', "check_part1", "recorded in another stream"),

    "an event per consumer": ("fan_out", '''
def fan_out(src, data, outs, producer_stream, consumer_streams):
    producer[BLOCKS, THREADS, producer_stream](data, src)
    for out, s in zip(outs, consumer_streams):
        ready = cuda.event()
        ready.record(producer_stream)
        ready.wait(s)
        consumer[BLOCKS, THREADS, s](data, out)
''', "check_part2", "one event"),

    "reads the counter without waiting": ("add_in_two_streams", '''
def add_in_two_streams(counter, s0, s1):
    update_counter[1, 1, s0](counter, 10)
    update_counter[1, 1, s1](counter, 20)
    return int(counter.copy_to_host()[0])
''', "check_part3", "read before waiting for s0"),

    "both additions in one stream": ("add_in_two_streams", '''
def add_in_two_streams(counter, s0, s1):
    update_counter[1, 1, s0](counter, 10)
    update_counter[1, 1, s0](counter, 20)
    s0.synchronize()
    return int(counter.copy_to_host()[0])
''', "check_part3", "stream 0 got 2 launches"),
}
