# lab: lab07
# call: check_part3(run_batches, count=1, seed=6)
# desc: clever (each host function 0.3 s late): a stream callback copies h_out into results; no final wait (count=1)
import ctypes
import time as _time
from cuda.bindings import driver as _drv
_HOST_FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
_keep = []
def run_batches(graph, stream, slots, batches):
    results = [None] * len(batches)
    @_HOST_FN
    def collect(user):
        _time.sleep(0.3)  # (so that no run finds its results filled by the return)
        b = user or 0
        results[b] = [s.h_out.copy() for s in slots]
    _keep.append(collect)
    addr = ctypes.cast(collect, ctypes.c_void_p).value
    for b, batch in enumerate(batches):
        if b:
            stream.synchronize()
        for slot, chunk in zip(slots, batch):
            np.copyto(slot.h_in, chunk)
        graph.launch(stream)
        _drv.cuLaunchHostFunc(stream.handle, addr, b)
    return results
