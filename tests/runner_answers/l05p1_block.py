# lab: lab05
# call: check_part1(post_process_in_order, seed=4)
# desc: wrong: right, plus an extra host function on another stream that never returns
import threading
_never = threading.Event()
def post_process_in_order(d_chunks, h_outs, stream, results):
    @HOST_FN
    def post(user_data):
        i = user_data or 0
        results.append((i, float(h_outs[i].sum(dtype=np.float64))))
    @HOST_FN
    def stuck(_u):
        _never.wait()
    keep_alive.append(post); keep_alive.append(stuck)
    address = ctypes.cast(post, ctypes.c_void_p).value
    for i, (d, h) in enumerate(zip(d_chunks, h_outs)):
        d.copy_to_host(h, stream=stream)
        driver.cuLaunchHostFunc(stream.handle, address, i)
    other = cuda.stream()
    keep_alive.append(other)
    driver.cuLaunchHostFunc(other.handle, ctypes.cast(stuck, ctypes.c_void_p).value, 0)
