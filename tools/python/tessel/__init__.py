"""Run a model built by `tessel build` (MODEL.tsl) from Python.

    import numpy as np, tessel
    m = tessel.load("model.tsl")
    y = m(x)            # NumPy arrays in, NumPy arrays out (a tuple when the model has several outputs)
    y = m(x=x)          # inputs by name
    y = m(t)            # a cuda model and torch CUDA tensors: no copy through the host, torch tensors out

Inputs are float32, int64 or bool arrays of exactly the model's dtypes and shapes (m.inputs; a
Python list takes the input's dtype); anything else raises tessel.InputError naming the input, the
expected and the given dtype and shape. m(...) runs on a
context of the running thread, so threads may run one model at once; m.context() makes one of your
own. CUDA inputs are any object with __cuda_array_interface__ (torch, CuPy) on GPU 0.

The module is ctypes over the runtime's C API (runtime/tessel_runtime.h) in libtessel_runtime.so,
found at $TESSEL_RUNTIME_LIBRARY, beside this file, or on the system's library path.
"""

import ctypes
import ctypes.util
import os
import threading
from collections import namedtuple

import numpy as np

__all__ = ["load", "Model", "Context", "TensorInfo", "Error", "ArtifactError", "InputError", "DeviceError"]


class Error(Exception):
    """A failure the runtime reports, with its message."""


class ArtifactError(Error):
    """The model file: missing, damaged, not a tessel model, or built for another CPU or GPU."""


class InputError(Error, ValueError):
    """An input of the wrong dtype or shape, missing, or not one of the model's."""


class DeviceError(Error):
    """The CPU or GPU failed: out of memory, a CUDA error."""


TensorInfo = namedtuple("TensorInfo", "name dtype shape")

# TesselStatus and TesselDType (runtime/tessel_runtime.h).
_OK, _ERROR_ARGUMENT, _ERROR_ARTIFACT, _ERROR_INPUT, _ERROR_DEVICE = range(5)
_ERRORS = {_ERROR_ARGUMENT: InputError, _ERROR_ARTIFACT: ArtifactError, _ERROR_INPUT: InputError,
           _ERROR_DEVICE: DeviceError}
_DTYPES = [np.dtype(np.float32), np.dtype(np.int64), np.dtype(np.bool_)]
_CODES = {d: code for code, d in enumerate(_DTYPES)}
_TARGET_CUDA = 1
_API_VERSION = 2


class _MemoryUsage(ctypes.Structure):
    _fields_ = [(name, ctypes.c_int64) for name in ("weights", "arena", "outputs", "inputs", "liveness_bound")]


def _declare(lib):
    """Argument and result types of every C API function, so ctypes converts and checks them."""
    p, size, i64p = ctypes.c_void_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_int64)
    status, out = ctypes.c_int, ctypes.POINTER
    info = [p, size, out(ctypes.c_char_p), out(ctypes.c_int), out(size), out(i64p)]
    signatures = {
        "tessel_api_version": ([], ctypes.c_int),
        "tessel_last_error": ([], ctypes.c_char_p),
        "tessel_load": ([ctypes.c_char_p, out(p)], status),
        "tessel_model_free": ([p], None),
        "tessel_model_target": ([p, out(ctypes.c_int)], status),
        "tessel_model_num_inputs": ([p, out(size)], status),
        "tessel_model_num_outputs": ([p, out(size)], status),
        "tessel_model_input_info": (info, status),
        "tessel_model_output_info": (info, status),
        "tessel_context_create": ([p, out(p)], status),
        "tessel_context_free": ([p], None),
        "tessel_set_input": ([p, size, ctypes.c_int, i64p, size, p, ctypes.c_int], status),
        "tessel_run": ([p], status),
        "tessel_copy_output": ([p, size, p, size, ctypes.c_int], status),
        "tessel_context_memory": ([p, out(_MemoryUsage)], status),
    }
    for name, (args, result) in signatures.items():
        fn = getattr(lib, name)
        fn.argtypes, fn.restype = args, result
    return lib


_lib = None
_lib_lock = threading.Lock()


def _library():
    global _lib
    with _lib_lock:
        if _lib is None:
            here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "libtessel_runtime.so")
            path = (os.environ.get("TESSEL_RUNTIME_LIBRARY") or (here if os.path.exists(here) else None)
                    or ctypes.util.find_library("tessel_runtime"))
            if not path:
                raise Error("libtessel_runtime.so not found: set TESSEL_RUNTIME_LIBRARY to its path, or put it "
                            "beside tessel/__init__.py")
            lib = _declare(ctypes.CDLL(path))
            if lib.tessel_api_version() != _API_VERSION:
                raise Error("%s has C API version %d; this module speaks %d" %
                            (path, lib.tessel_api_version(), _API_VERSION))
            _lib = lib
        return _lib


def _check(status):
    if status != _OK:
        message = _library().tessel_last_error().decode("utf-8", "replace")
        raise _ERRORS.get(status, Error)(message)


def _row_major_strides(shape, itemsize):
    strides, step = [], itemsize
    for extent in reversed(shape):
        strides.append(step)
        step *= extent
    return tuple(reversed(strides))


def _describe(dtype, shape):
    return "%s[%s]" % (dtype, ", ".join(str(d) for d in shape))


class Model:
    """A loaded model: its kernels and weights (a cuda model's on the GPU), shared by its contexts."""

    def __init__(self, path):
        lib = _library()
        handle = ctypes.c_void_p()
        _check(lib.tessel_load(os.fsencode(path), ctypes.byref(handle)))
        self._handle = handle
        target = ctypes.c_int()
        _check(lib.tessel_model_target(handle, ctypes.byref(target)))
        self.path = path
        self.target = "cuda" if target.value == _TARGET_CUDA else "llvm"
        self.inputs = self._tensors(lib.tessel_model_num_inputs, lib.tessel_model_input_info)
        self.outputs = self._tensors(lib.tessel_model_num_outputs, lib.tessel_model_output_info)
        self._local = threading.local()

    def _tensors(self, count_fn, info_fn):
        count = ctypes.c_size_t()
        _check(count_fn(self._handle, ctypes.byref(count)))
        tensors = []
        for i in range(count.value):
            name, dtype, rank = ctypes.c_char_p(), ctypes.c_int(), ctypes.c_size_t()
            dims = ctypes.POINTER(ctypes.c_int64)()
            _check(info_fn(self._handle, i, ctypes.byref(name), ctypes.byref(dtype), ctypes.byref(rank),
                           ctypes.byref(dims)))
            shape = tuple(dims[d] for d in range(rank.value))
            tensors.append(TensorInfo(name.value.decode(), _DTYPES[dtype.value], shape))
        return tensors

    def context(self):
        """A context of your own: its memory allocated once, for one thread at a time."""
        return Context(self)

    def __call__(self, *args, **kwargs):
        """Runs the model on this thread's context; see Context.run."""
        ctx = getattr(self._local, "context", None)
        if ctx is None:
            ctx = self._local.context = Context(self)
        return ctx.run(*args, **kwargs)

    def __del__(self):
        if getattr(self, "_handle", None) and _lib is not None:
            _lib.tessel_model_free(self._handle)
            self._handle = None

    def __repr__(self):
        ins = ", ".join("%s: %s" % (t.name, _describe(t.dtype, t.shape)) for t in self.inputs)
        outs = ", ".join("%s: %s" % (t.name, _describe(t.dtype, t.shape)) for t in self.outputs)
        return "tessel.Model(%r, %s, (%s) -> (%s))" % (self.path, self.target, ins, outs)


class Context:
    """One run's memory (intermediates, outputs); runs one model, from one thread at a time."""

    def __init__(self, model):
        self.model = model  # the C side keeps the model alive too; this keeps its Python handle
        handle = ctypes.c_void_p()
        _check(_library().tessel_context_create(model._handle, ctypes.byref(handle)))
        self._handle = handle

    def run(self, *args, **kwargs):
        """Runs the model on every input, by position or by name, and returns its outputs: NumPy
        arrays, or torch tensors on the inputs' GPU when an input is a torch CUDA tensor. A single
        output is returned as itself, several as a tuple."""
        values = self._gather(args, kwargs)
        keep = []  # what the runtime reads stays alive until the run returns
        torch_device = None
        for i, value in enumerate(values):
            if hasattr(value, "__cuda_array_interface__"):
                torch_device = self._bind_device(i, value) or torch_device
            else:
                keep.append(self._bind_host(i, value))
        lib = _library()
        _check(lib.tessel_run(self._handle))
        outputs = tuple(self._output(i, t, torch_device) for i, t in enumerate(self.model.outputs))
        return outputs[0] if len(outputs) == 1 else outputs

    def memory(self):
        """What this context holds, in bytes, on the model's target (a dict)."""
        usage = _MemoryUsage()
        _check(_library().tessel_context_memory(self._handle, ctypes.byref(usage)))
        return {name: getattr(usage, name) for name, _ in _MemoryUsage._fields_}

    def _gather(self, args, kwargs):
        inputs = self.model.inputs
        if len(args) > len(inputs):
            raise InputError("%d inputs given; the model has %d" % (len(args), len(inputs)))
        values = list(args) + [None] * (len(inputs) - len(args))
        names = [t.name for t in inputs]
        for name, value in kwargs.items():
            if name not in names:
                raise InputError("the model has no input '%s' (its inputs: %s)" %
                                 (name, ", ".join("'%s'" % n for n in names)))
            if values[names.index(name)] is not None:
                raise InputError("input '%s' given twice (by position and by name)" % name)
            values[names.index(name)] = value
        missing = ["%d ('%s')" % (i, names[i]) for i, v in enumerate(values) if v is None]
        if missing:
            raise InputError("inputs not set: %s; nothing was run" % ", ".join(missing))
        return values

    def _set(self, i, dtype_code, shape, pointer, on_device):
        dims = (ctypes.c_int64 * max(len(shape), 1))(*shape)
        _check(_library().tessel_set_input(self._handle, i, dtype_code, dims, len(shape),
                                           ctypes.c_void_p(pointer), on_device))

    def _bind_host(self, i, value):
        want = self.model.inputs[i]
        # An array's dtype must be the input's (no silent conversion); a list or a number has none
        # and takes the input's.
        typed = isinstance(value, np.ndarray) or hasattr(value, "__array__") or hasattr(value, "dtype")
        array = np.asarray(value) if typed else np.asarray(value, dtype=want.dtype)
        if array.dtype not in _CODES:
            raise InputError("input %d ('%s'): expected %s, got %s (tessel takes float32, int64 and bool)" %
                             (i, want.name, _describe(want.dtype, want.shape), _describe(array.dtype, array.shape)))
        array = np.ascontiguousarray(array)
        self._set(i, _CODES[array.dtype], array.shape, array.ctypes.data, 0)
        return array

    def _bind_device(self, i, value):
        """Binds a CUDA array in place; returns its torch device when it is a torch tensor."""
        want = self.model.inputs[i]
        iface = value.__cuda_array_interface__
        shape = tuple(iface["shape"])
        dtype = np.dtype(iface["typestr"])
        if dtype not in _CODES:
            raise InputError("input %d ('%s'): expected %s, got %s on the GPU" %
                             (i, want.name, _describe(want.dtype, want.shape), _describe(dtype, shape)))
        strides = iface.get("strides")
        if strides is not None and tuple(strides) != _row_major_strides(shape, dtype.itemsize):
            raise InputError("input %d ('%s'): a GPU array that is not contiguous (make it so first)" %
                             (i, want.name))
        device = None
        module = type(value).__module__
        if module.startswith("torch"):
            device = value.device
            if device.index not in (None, 0):
                raise InputError("input %d ('%s'): on %s; tessel runs on cuda:0" % (i, want.name, device))
            import torch
            torch.cuda.current_stream(device).synchronize()  # the producer's writes land first
        elif iface.get("stream") not in (None, 0):
            _cuda_driver().cuStreamSynchronize(ctypes.c_void_p(iface["stream"]))
        self._set(i, _CODES[dtype], shape, iface["data"][0], 1)
        return device

    def _output(self, i, info, torch_device):
        lib = _library()
        if torch_device is not None:
            import torch
            torch_dtype = {np.dtype(np.float32): torch.float32, np.dtype(np.int64): torch.int64,
                           np.dtype(np.bool_): torch.bool}[info.dtype]
            out = torch.empty(info.shape, dtype=torch_dtype, device=torch_device)
            _check(lib.tessel_copy_output(self._handle, i, ctypes.c_void_p(out.data_ptr()),
                                          out.numel() * out.element_size(), 1))
            return out
        out = np.empty(info.shape, dtype=info.dtype)
        _check(lib.tessel_copy_output(self._handle, i, ctypes.c_void_p(out.ctypes.data), out.nbytes, 0))
        return out

    def __del__(self):
        if getattr(self, "_handle", None) and _lib is not None:
            _lib.tessel_context_free(self._handle)
            self._handle = None


_driver = None


def _cuda_driver():
    """libcuda, to wait for a CUDA array's producer stream (__cuda_array_interface__ v3)."""
    global _driver
    if _driver is None:
        _driver = ctypes.CDLL("libcuda.so.1")
        _driver.cuStreamSynchronize.argtypes = [ctypes.c_void_p]
    return _driver


def load(path):
    """Loads a model file written by `tessel build`; raises ArtifactError when it cannot run here."""
    return Model(path)
