# lab: lab04
# call: check_part1(copy_compute_copy, seed=5)
# desc: careless: transform launched twice, and a capture left open on a spare stream
def copy_compute_copy(h_in, h_out, d_in, d_out, stream):
    d_in.copy_to_device(h_in, stream=stream)
    transform[BLOCKS, THREADS, stream](d_out, d_in)
    transform[BLOCKS, THREADS, stream](d_out, d_in)
    d_out.copy_to_host(h_out, stream=stream)
    streamlab.graph_builder(cuda.stream()).begin_building()
