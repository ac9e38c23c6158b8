# lab: lab02
# call: check_part2(fan_out, seed=5)
# desc: right: consumes consumer_streams and outs with pop()
def fan_out(src, data, outs, producer_stream, consumer_streams):
    ready = cuda.event()
    producer[BLOCKS, THREADS, producer_stream](data, src)
    ready.record(producer_stream)
    while consumer_streams:
        s = consumer_streams.pop()
        ready.wait(s)
        consumer[BLOCKS, THREADS, s](data, outs.pop())
