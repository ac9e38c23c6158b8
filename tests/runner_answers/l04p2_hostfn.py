# lab: lab04
# call: check_part2(pipeline, copy_compute_copy, seed=3)
# desc: clever (each host function 0.3 s late): host functions copy h_out into results; no final wait
def copy_compute_copy(h_in, h_out, d_in, d_out, stream):
    d_in.copy_to_device(h_in, stream=stream)
    transform[BLOCKS, THREADS, stream](d_out, d_in)
    d_out.copy_to_host(h_out, stream=stream)

import ctypes
import time as _time
from cuda.bindings import driver as _drv
_HOST_FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
_keep = []
def pipeline(chunks, slots):
    k = len(slots)
    results = [None] * len(chunks)
    @_HOST_FN
    def collect(user):
        _time.sleep(0.3)  # (so that no run finds its results filled by the return)
        i = user or 0
        results[i] = slots[i % k].h_out.copy()
    _keep.append(collect)
    addr = ctypes.cast(collect, ctypes.c_void_p).value
    for i, chunk in enumerate(chunks):
        slot = slots[i % k]
        if i >= k:
            slot.stream.synchronize()
        np.copyto(slot.h_in, chunk)
        copy_compute_copy(slot.h_in, slot.h_out, slot.d_in, slot.d_out, slot.stream)
        _drv.cuLaunchHostFunc(slot.stream.handle, addr, i)
    return results
