"""Which teardown of a cuda.core GraphBuilder kills the process? (the cause of lesson 07's
kernel deaths; NVIDIA/cuda-python#2834)

    python scripts/probes/probe_invalidated_builders.py [--runs 3] [--captures 20]

Each case runs ``--runs`` times, each in a fresh process under faulthandler, and makes
``--captures`` captures. A capture is invalidated by a refused synchronize and ended with
the driver's cuStreamEndCapture (which destroys its graph), as lesson 07's section 6 does.
Prints a table: how many processes of each case died, and where. Needs a GPU.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import textwrap

SETUP = textwrap.dedent("""
    import faulthandler, gc
    faulthandler.enable()
    import numpy as np
    from numba import cuda
    from cuda.core import Device
    from cuda.bindings import driver
    dev = Device(); dev.set_current()
    @cuda.jit
    def k(a):
        i = cuda.grid(1)
        if i < a.size:
            a[i] += 1.0
    k[16, 256](cuda.device_array(4096, np.float32)); cuda.synchronize()
    kept = []
    def invalidated(via_streamlab=False):
        st, d = cuda.stream(), cuda.device_array(4096, np.float32)
        if via_streamlab:
            import streamlab
            b = streamlab.graph_builder(st).begin_building()
        else:
            b = dev.create_stream(st).create_graph_builder().begin_building("relaxed")
        k[16, 256, st](d)
        try:
            st.synchronize()            # refused: invalidates the capture
        except Exception:
            pass
        if via_streamlab:
            streamlab.end_capture(b)
        else:
            try:
                b.end_building()
            except Exception:
                pass
            h = driver.CUstream(int(st.__cuda_stream__()[1]))
            driver.cuStreamEndCapture(h)    # the driver ends it and destroys its graph
        return st, b
""")

CASES = {
    "cuda.core, each builder dropped at once": "st, b = invalidated(); del b; gc.collect()",
    "cuda.core, builders kept until exit": "kept.append(invalidated())",
    "cuda.core, one kept until exit": "kept.append(invalidated()) if n == 0 else invalidated()",
    "streamlab.end_capture, builders kept until exit": "kept.append(invalidated(True))",
    "streamlab.end_capture, each dropped at once": "st, b = invalidated(True); del b; gc.collect()",
}


def run(body: str, captures: int) -> tuple[int, str]:
    src = SETUP + f"for n in range({captures}):\n    {body}\nprint('end of script')\n"
    p = subprocess.run([sys.executable, "-X", "faulthandler", "-c", src], capture_output=True,
                       text=True, timeout=300, env={**os.environ, "STREAMLAB_DEVICE": "gpu"})
    where = "after the script's end" if "end of script" in p.stdout else "during the script"
    return p.returncode, where


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--captures", type=int, default=20)
    a = ap.parse_args()
    if a.runs < 1 or a.captures < 1:
        print("--runs and --captures take 1 or more", file=sys.stderr)
        return 2
    print(f"| case | processes | died | where |\n| --- | ---: | ---: | --- |")
    for name, body in CASES.items():
        results = [run(body, a.captures) for _ in range(a.runs)]
        died = [w for rc, w in results if rc != 0]
        print(f"| {name} | {a.runs} | {len(died)} | {', '.join(sorted(set(died))) or '-'} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
