"""The Python module (tools/python/tessel) on model files and expected outputs that test_python.cpp
wrote into DIR: results, inputs by position and by name, arrays NumPy lays out in other ways,
every dtype, errors as exceptions with the runtime's message, threads, memory. Exits 0 when all
hold, 77 (skipped) without NumPy, else with the failing assertion.

    python3 python_check.py DIR
"""

import os
import sys
import threading

try:
    import numpy as np
except ImportError:
    print("skipped: NumPy is not installed")
    sys.exit(77)

import tessel

M, K, N = 8, 24, 20


def close(got, want):
    scale = max(1.0, float(np.max(np.abs(want))))
    bad = np.abs(got.astype(np.float64) - want) > 1e-5 * scale + 1e-4 * np.abs(want)
    assert not bad.any(), "first mismatch at %s: got %s, want %s" % (
        np.argwhere(bad)[0], got[tuple(np.argwhere(bad)[0])], want[tuple(np.argwhere(bad)[0])])
    return True


def raises(kind, fn, *texts):
    try:
        fn()
    except kind as e:
        for text in texts:
            assert text in str(e), "%r not in %r" % (text, str(e))
        return str(e)
    raise AssertionError("no %s raised" % kind.__name__)


def check_two_kernel(d):
    m = tessel.load(os.path.join(d, "model.tsl"))
    assert m.target == "llvm"
    assert [(t.name, t.dtype, t.shape) for t in m.inputs] == [("x", np.float32, (M, K))], m.inputs
    assert m.outputs[0].shape == (M, N)
    x = np.fromfile(os.path.join(d, "x0.bin"), np.float32).reshape(M, K)
    want = np.fromfile(os.path.join(d, "y0.bin"), np.float64).reshape(M, N)

    y = m(x)
    assert isinstance(y, np.ndarray) and y.dtype == np.float32 and y.shape == (M, N)
    assert close(y, want)
    assert close(m(x=x), want)
    assert close(m(np.asfortranarray(x)), want)  # column-major: made contiguous
    odd = np.empty(M * K + 1, np.float32)[1:].reshape(M, K)  # 4 bytes off any 64-byte boundary
    odd[...] = x
    assert close(m(odd), want)
    assert close(m(x.tolist()), want)  # a list has no dtype: it takes the input's

    raises(tessel.InputError, lambda: m(x.astype(np.float64)), "input 0 ('x'): expected float32[8, 24]",
           "got float64[8, 24]")
    raises(tessel.InputError, lambda: m(x[:, :23]), "input 0 ('x'): expected float32[8, 24], got float32[8, 23]")
    raises(tessel.InputError, lambda: m(x.astype(np.int64)), "got int64[8, 24]")
    raises(tessel.InputError, lambda: m(), "inputs not set: 0 ('x')")
    raises(tessel.InputError, lambda: m(x, x), "2 inputs given; the model has 1")
    raises(tessel.InputError, lambda: m(X=x), "no input 'X'", "'x'")
    raises(tessel.ArtifactError, lambda: tessel.load(os.path.join(d, "missing.tsl")), "missing.tsl")
    raises(tessel.ArtifactError, lambda: tessel.load(os.path.join(d, "bad.tsl")), "damaged")

    # Threads: each runs the model on its own input, on its own context, at once.
    inputs = [np.fromfile(os.path.join(d, "x%d.bin" % k), np.float32).reshape(M, K) for k in range(3)]
    wants = [np.fromfile(os.path.join(d, "y%d.bin" % k), np.float64).reshape(M, N) for k in range(3)]
    errors = []

    def worker(k):
        try:
            for _ in range(20):
                close(m(inputs[k]), wants[k])
        except Exception as e:  # reported by the main thread
            errors.append("thread %d: %r" % (k, e))

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors

    ctx = m.context()
    assert close(ctx.run(x), want)
    usage = ctx.memory()
    assert usage["outputs"] == M * N * 4 and usage["arena"] >= M * K * 4, usage
    assert usage["liveness_bound"] == M * K * 4, usage


class FakeCudaArray:
    """Describes GPU memory it does not have: what the module reads from __cuda_array_interface__ is
    checked, and a CPU model refuses a device pointer before anything reads it."""

    def __init__(self, shape, typestr, strides=None):
        self.__cuda_array_interface__ = {"shape": shape, "typestr": typestr, "data": (4096, False),
                                         "strides": strides, "stream": None, "version": 3}


def check_device_inputs(d):
    m = tessel.load(os.path.join(d, "model.tsl"))
    raises(tessel.InputError, lambda: m(FakeCudaArray((M, K), "<f4")), "input 0 ('x')",
           "a device pointer was given, but the model runs on the CPU")
    raises(tessel.InputError, lambda: m(FakeCudaArray((M, K), "<f8")), "got float64[8, 24] on the GPU")
    raises(tessel.InputError, lambda: m(FakeCudaArray((M, K), "<f4", (4, 4 * M))), "not contiguous")


def check_torch_cpu(d):
    import torch
    m = tessel.load(os.path.join(d, "model.tsl"))
    x = np.fromfile(os.path.join(d, "x0.bin"), np.float32).reshape(M, K)
    want = np.fromfile(os.path.join(d, "y0.bin"), np.float64).reshape(M, N)
    y = m(torch.from_numpy(x))  # a CPU tensor is an array like any other
    assert isinstance(y, np.ndarray)
    assert close(y, want)
    raises(tessel.InputError, lambda: m(torch.from_numpy(x).double()), "got float64[8, 24]")


def check_typed(d):
    m = tessel.load(os.path.join(d, "typed.tsl"))
    assert [t.dtype for t in m.inputs] == [np.float32, np.int64, np.bool_]
    x = np.fromfile(os.path.join(d, "tx.bin"), np.float32).reshape(4, 8)
    n = np.fromfile(os.path.join(d, "tn.bin"), np.int64).reshape(4, 8)
    mask = np.fromfile(os.path.join(d, "tm.bin"), np.uint8).reshape(4, 8).astype(np.bool_)
    want = np.fromfile(os.path.join(d, "ty.bin"), np.float64).reshape(4, 8)
    assert close(m(x, n, mask), want)
    assert close(m(m=mask, n=n, x=x), want)
    assert close(m(x, n=n.tolist(), m=mask.tolist()), want)  # Python ints and bools
    raises(tessel.InputError, lambda: m(x, n.astype(np.int32), mask), "input 1 ('n'): expected int64[4, 8]",
           "got int32[4, 8]")
    raises(tessel.InputError, lambda: m(x, n, mask.astype(np.uint8)), "input 2 ('m'): expected bool[4, 8]")


def main():
    d = sys.argv[1]
    check_two_kernel(d)
    check_typed(d)
    check_device_inputs(d)
    try:
        import torch  # noqa: F401
    except ImportError:
        print("torch is not installed: torch tensors are not checked here")
    else:
        check_torch_cpu(d)
    print("ok")


if __name__ == "__main__":
    main()
