"""Every change torch_mydev makes to the internals of torch (and of Triton), in one place.

A backend should need none: everything else in torch_mydev goes through PyTorch's extension points. What torch
2.13 leaves no hook for is closed here, each patch with why it is needed and what upstream does about it, and applied
only on the release it was written against (``PATCHED_TORCH``, ``PATCHED_TRITON``). ``tests/test_patches.py`` fails when a
patch stops working, and when the torch behaviour it works around goes away (the patch is then no longer needed).

Import hooks: torch 2.13 has no lazy registration for a PrivateUse1 device's Dynamo device interface or Inductor
backend (upstream PRs #191731, #192896 add one). Registering them when torch_mydev loads would import Dynamo and
Inductor on every ``import torch`` (about 2 s), so they are registered right after the torch module that needs them
has been imported (``run_after_import``).
"""
import contextlib
import importlib.abc
import inspect
import sys
import warnings

import torch

PATCHED_TORCH = (2, 13)
PATCHED_TRITON = (3, 9)


def _release(version):
    return tuple(int(part) for part in version.split("+")[0].split(".")[:2])


def patches_apply():
    """Whether this torch is the one the patches were written against."""
    return _release(torch.__version__) == PATCHED_TORCH


def _skip_patch(name, package, version, written_for):
    warnings.warn(
        f"torch_mydev: not patching {name} on {package} {version} (the patch was written for {package} "
        f"{'.'.join(map(str, written_for))}); mydev features that depend on it may fail",
        stacklevel=3,
    )


def _replacing(original, replacement):
    """Marks ``replacement`` as torch_mydev's patch of ``original`` (which tests call to check it is still needed)."""
    replacement.mydev_patch = True
    replacement.original = original
    return replacement


def _is_patched(function):
    return getattr(function, "mydev_patch", False)


class _RunAfterImport(importlib.abc.MetaPathFinder):
    """Runs callbacks once a module has been imported (executed), without changing how it is found or loaded."""

    def __init__(self):
        self.callbacks = {}

    def find_spec(self, fullname, path, target=None):
        if fullname not in self.callbacks:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                break
        else:
            return None
        if spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        callbacks = self.callbacks.pop(fullname)
        execute = spec.loader.exec_module

        def exec_module(module):
            execute(module)
            try:
                for callback in callbacks:
                    callback()
            except BaseException:
                # The import fails with it (the module is dropped): the next import of the module runs them again,
                # and raises the same error rather than going on unregistered.
                self.callbacks[fullname] = callbacks + self.callbacks.get(fullname, [])
                raise

        spec.loader.exec_module = exec_module
        return spec


_after_import = _RunAfterImport()


def run_after_import(module_name, callback):
    """Calls ``callback()`` once ``module_name`` has been imported: now if it already is, else right after."""
    if module_name in sys.modules:
        callback()
        return
    if _after_import not in sys.meta_path:
        sys.meta_path.insert(0, _after_import)
    _after_import.callbacks.setdefault(module_name, []).append(callback)


def patch_inductor_for_mydev():
    """Inductor 2.13 takes "the C++ code generator" to mean "the CPU device" in several places; mydev's C++ kernels
    need the CPU's answer there (upstream RFC pytorch#189138: ask the scheduling, not the device type).

    1. ``BaseSchedulerNode.is_cpu()`` gates three Triton-only scheduler passes (loop index inversion, loop
       reordering, pointwise reindexing for reductions); with C++ kernels they fail (``TypeError: can't multiply
       sequence by non-int of type 'tuple'`` in ``_try_reindex_pointwise_for_reduction``, for a softmax).
    2. ``get_current_backend()`` answers ``config.cuda_backend`` ("triton") for any device it does not know; the C++
       kernel then misses the C++ code generator's dtype fix-ups (``AssertionError`` in ``CppVecKernel.arange`` for
       ``Linear``). It is imported by name into three modules, so each binding is replaced.
    3. ``cpp_utils.DEVICE_TO_ATEN`` has no entry for a PrivateUse1 device: the C++ wrapper names mydev's device type
       ``at::kPrivateUse1`` when it allocates.
    4. ``argmax``/``argmin`` over several dims of a non-contiguous input: the reduction lowering computes the logical
       index only for Triton and for "cpu" with the C++ backend, so mydev's C++ kernel returned the position in
       memory order (``x.t().argmax()`` gave 1 where eager gives 4). Such an input is made contiguous first, which
       gives the logical index at the cost of a copy.

    And where Inductor's C++ code generator serves a device with streams, which only mydev does:

    5. A node without a device (``torch.accelerator.synchronize()``, an event's record or synchronize) is emitted
       without flushing the kernels held before it, so they merge with the kernels after it into one function placed
       after the node, past inputs already freed (``UnboundLocalError`` for the freed input, or a synchronization
       before the kernel it was meant to wait for). Triton's scheduling emits each kernel at once, so CUDA never
       meets this; the patch flushes before such a node.
    6. ``device_need_guard`` is true only for GPU device types, and only inside a device guard does the Python wrapper
       declare the stream variables that a ``with stream:`` block of a compiled function switches to: for mydev the
       generated code raised ``NameError: name 'stream1' is not defined``. mydev's Python wrapper takes the guard
       (``torch.mydev._DeviceGuard``, as ``torch.cuda._DeviceGuard`` for CUDA); the C++ wrapper has no mydev guard
       type and goes on without it.
    7. For the same reason as 5, entering or leaving a stream context emits no held kernel first: a block's kernels
       merged with the kernels after it, on the stream after the block (the block's output buffer allocated for
       ``stream1``, written on the default stream). The patch flushes before each stream switch.
    """
    if not patches_apply():
        _skip_patch("Inductor", "torch", torch.__version__, PATCHED_TORCH)
        return
    import torch._inductor.codegen.common as codegen_common
    import torch._inductor.codegen.cpp_utils as cpp_utils
    import torch._inductor.kernel.mm_common as mm_common
    import torch._inductor.lowering as lowering
    import torch._inductor.scheduler as scheduler
    import torch._inductor.utils as inductor_utils
    from torch._inductor import ir

    from torch_mydev.inductor import config as mydev_config

    if _is_patched(scheduler.BaseSchedulerNode.is_cpu):
        return

    def is_cpu(node):
        device = node.get_device()
        if device is None:
            return False
        return device.type == "cpu" or (device.type == "mydev" and mydev_config.codegen == "cpp")

    scheduler.BaseSchedulerNode.is_cpu = _replacing(scheduler.BaseSchedulerNode.is_cpu, is_cpu)

    original_backend = inductor_utils.get_current_backend

    def get_current_backend(device_type=None):
        if device_type is None:
            from torch._inductor.virtualized import V

            device_type = V.graph.get_current_device_or_throw().type
        if device_type == "mydev":
            return mydev_config.codegen
        return original_backend(device_type)

    _replacing(original_backend, get_current_backend)
    for module in (inductor_utils, codegen_common, scheduler, mm_common):
        module.get_current_backend = get_current_backend

    cpp_utils.DEVICE_TO_ATEN["mydev"] = "at::kPrivateUse1"

    def in_logical_order(original):
        def argreduce(x, *args, **kwargs):
            dim = args[0] if args else kwargs.get("dim")
            device = x.get_device()
            if (dim is None and len(x.get_size()) > 1 and device is not None and device.type == "mydev"
                    and mydev_config.codegen == "cpp"):
                x = ir.ExternKernel.require_contiguous(x)
            return original(x, *args, **kwargs)

        return _replacing(original, argreduce)

    for op in (torch.ops.aten.argmax, torch.ops.aten.argmin):
        for key in (op, op.default):
            lowering.lowerings[key] = in_logical_order(lowering.lowerings[key])

    original_extern_call = scheduler.Scheduler.codegen_extern_call

    def codegen_extern_call(self, scheduler_node):
        if scheduler_node.get_device() is None:
            self.flush()
        return original_extern_call(self, scheduler_node)

    scheduler.Scheduler.codegen_extern_call = _replacing(original_extern_call, codegen_extern_call)

    original_need_guard = scheduler.device_need_guard

    def device_need_guard(device_type):
        from torch._inductor.virtualized import V

        return original_need_guard(device_type) or (device_type == "mydev" and not V.graph.cpp_wrapper)

    scheduler.device_need_guard = _replacing(original_need_guard, device_need_guard)

    def flushed_first(original):
        def switch(self, *args, **kwargs):
            self.flush()
            return original(self, *args, **kwargs)

        return _replacing(original, switch)

    scheduler.Scheduler.generate_stream_ctx_enter = flushed_first(scheduler.Scheduler.generate_stream_ctx_enter)
    scheduler.Scheduler.generate_stream_ctx_exit = flushed_first(scheduler.Scheduler.generate_stream_ctx_exit)


def patch_dlpack_for_mydev():
    """DLPack for mydev tensors: ``Tensor.__dlpack_device__`` and the stream handshake of ``Tensor.__dlpack__``.

    1. torch 2.13's ``__dlpack_device__`` recognises a PrivateUse1 tensor only by the literal device type
       "privateuse1", so after the rename it raises ``ValueError: Unknown device type mydev for Dlpack``, and
       ``torch.from_dlpack(tensor)`` with it. C++ already maps PrivateUse1 to ``kDLExtDev`` both ways
       (``to_dlpack``, ``from_dlpack``, ``__dlpack__``). The upstream fix is one comparison: against
       ``torch._C._get_privateuse1_backend_name()``, as the rest of torch names a renamed backend.
    2. ``__dlpack__(stream=...)`` makes the consumer's stream wait for the producer's current stream only for CUDA.
       For mydev it does the same: ``stream`` is the consumer's mydev stream (its ``stream_id``) or None for the
       device's default stream; -1 (the default) asks for no synchronisation, as on CUDA.
    """
    if not patches_apply():
        _skip_patch("Tensor.__dlpack_device__", "torch", torch.__version__, PATCHED_TORCH)
        return
    if _is_patched(torch.Tensor.__dlpack_device__):
        return
    from torch.overrides import has_torch_function_unary
    from torch.utils.dlpack import DLDeviceType

    original_device = torch.Tensor.__dlpack_device__
    original_dlpack = torch.Tensor.__dlpack__

    def __dlpack_device__(self):
        if not has_torch_function_unary(self) and self.device.type == "mydev":
            return (DLDeviceType.kDLExtDev, self.device.index)
        return original_device(self)

    def __dlpack__(self, *, stream=-1, max_version=None, dl_device=None, copy=None):
        if not has_torch_function_unary(self) and self.device.type == "mydev" and stream != -1:
            if stream is not None and type(stream) is not int:
                raise TypeError("stream must be ``int`` or ``none``")
            device = self.device.index
            producer = torch.mydev.current_stream(device)
            consumer = (torch.mydev.default_stream(device) if stream is None
                        else torch.mydev.Stream(stream_id=stream, device_index=device, device_type=producer.device_type))
            if consumer != producer:
                consumer.wait_stream(producer)
            stream = -1
        return original_dlpack(self, stream=stream, max_version=max_version, dl_device=dl_device, copy=copy)

    __dlpack_device__.__doc__ = original_device.__doc__
    __dlpack__.__doc__ = original_dlpack.__doc__
    torch.Tensor.__dlpack_device__ = _replacing(original_device, __dlpack_device__)
    torch.Tensor.__dlpack__ = _replacing(original_dlpack, __dlpack__)


def patch_profiler_exit_for_mydev():
    """``torch.autograd.profiler.profile.__exit__`` ends the profile even when the device reports an error there.

    The exit first synchronizes the device, then disables the profiler, with nothing in between to catch an error.
    A kernel error still pending surfaces at that synchronization. On CUDA it would have ruined the context anyway;
    a mydev device reports it once and stays usable, so the program went on with the profiler still on, recording
    every later operator without end (170 MB more over 60,000 additions). The patch finishes the exit without the
    synchronization, then raises the device's error. Upstream's fix would be a ``try``/``finally`` around it.
    """
    if not patches_apply():
        _skip_patch("profile.__exit__", "torch", torch.__version__, PATCHED_TORCH)
        return
    profile = torch.autograd.profiler.profile
    if _is_patched(profile.__exit__):
        return
    original_exit = profile.__exit__

    def __exit__(self, exc_type, exc_val, exc_tb):
        try:
            return original_exit(self, exc_type, exc_val, exc_tb)
        except Exception:
            if self.use_device != "mydev" or not torch._C._autograd._profiler_enabled():
                raise
            device, self.use_device = self.use_device, None
            try:
                original_exit(self, exc_type, exc_val, exc_tb)
            finally:
                self.use_device = device
            raise

    profile.__exit__ = _replacing(original_exit, __exit__)


def patch_default_process_group_backends():
    """``init_process_group()`` with no backend on a mydev machine: torch 2.13's ``BackendConfig`` maps only the
    accelerator's device type (``{"mydev": "mccl"}``), so CPU tensors and object collectives then fail ("No backend
    type associated with device type cpu"), and the process group's default backend (gloo) is never created. Later
    torch releases also map the CPU to gloo when no backend is given, as torch_npu patches 2.x to do; this patch adds
    ``"cpu": "gloo"`` to the map for mydev in the same case, so that it behaves as ``"cpu:gloo,mydev:mccl"``.
    """
    from torch.distributed import distributed_c10d

    if not patches_apply():
        _skip_patch("BackendConfig", "torch", torch.__version__, PATCHED_TORCH)
        return
    if _is_patched(distributed_c10d.BackendConfig.__init__):
        return
    original = distributed_c10d.BackendConfig.__init__

    def __init__(self, backend):
        original(self, backend)
        backends = self.device_backend_map
        if str(backend) == distributed_c10d.Backend.UNDEFINED and "mydev" in backends and "cpu" not in backends:
            backends["cpu"] = distributed_c10d.Backend(distributed_c10d.Backend.GLOO)

    distributed_c10d.BackendConfig.__init__ = _replacing(original, __init__)
    _patch_default_backend_type(distributed_c10d)


def _patch_default_backend_type(distributed_c10d):
    """``init_process_group("cpu:gloo,mydev:mccl")``: torch 2.13 picks a process group's default backend type, for a
    string naming several backends, by looking for ``Backend._plugins``' first key among the string's backends. The
    keys are upper case ("MCCL"), the backends lower case ("mccl"), so a plugin never matches and the type stays
    UNDEFINED: ``pg.name()`` says "undefined" and ``destroy_process_group`` warns "No backend of type 0 found" on
    every rank. With "cpu:gloo,cuda:nccl" the accelerator's backend is the default; this patch makes mccl the
    default (type CUSTOM) in the same case. Upstream reworks the choice (pytorch#189193).

    The same wrapper gives the world group's CPU gloo its global ranks. torch passes it none, and gloo's ``split``
    then assumes ranks 0..size-1 only for the first gloo group a process creates: one created after mccl's private
    gloo (``"mydev:mccl,cpu:gloo"``, and ``init_process_group()`` with no backend, which creates mccl first) read
    past an empty list in ``split_group`` and in a DeviceMesh built with ``device_id=``, a segfault. NCCL creates
    no gloo group, so CUDA never meets this.
    """
    original = distributed_c10d._new_process_group_helper
    parameters = inspect.signature(original)

    def _new_process_group_helper(*args, **kwargs):
        pg, prefix_store = original(*args, **kwargs)
        arguments = parameters.bind(*args, **kwargs).arguments
        if not isinstance(pg, distributed_c10d.ProcessGroup):
            return pg, prefix_store
        backends = distributed_c10d.BackendConfig(arguments["backend"]).get_device_backend_map()
        if backends.get("mydev") != "mccl":
            return pg, prefix_store
        if pg._get_backend_name() == "undefined":
            pg._set_default_backend(distributed_c10d.ProcessGroup.BackendType.CUSTOM)
        if not arguments["global_ranks_in_group"] and backends.get("cpu") == "gloo":
            gloo = pg._get_backend(torch.device("cpu"))
            while isinstance(gloo, distributed_c10d._ProcessGroupWrapper):  # TORCH_DISTRIBUTED_DEBUG=DETAIL
                gloo = gloo.wrapped_pg
            if isinstance(gloo, distributed_c10d.ProcessGroupGloo) and not gloo.options.global_ranks_in_group:
                gloo.options.global_ranks_in_group = list(range(arguments["group_size"]))
        return pg, prefix_store

    distributed_c10d._new_process_group_helper = _replacing(original, _new_process_group_helper)


def register_triton_backend(name, compiler, driver):
    """Adds a backend to Triton's registry of backends, as its ``triton.backends`` entry point would.

    A Triton device plugin is found through that entry point when ``triton`` is imported. mydev's backend only names
    the target of interpreted kernels (inductor_backend/triton_backend), and an entry point would import torch_mydev
    (and claim the PrivateUse1 backend) in every process that imports triton, so it registers when mydev's Triton
    code generation is selected instead. A vendor's compiled backend uses the entry point
    (docs/extension-points/inductor.md).
    """
    import triton
    from triton.backends import Backend

    if _release(triton.__version__) != PATCHED_TRITON:
        _skip_patch("triton.backends.backends", "triton", triton.__version__, PATCHED_TRITON)
    triton.backends.backends[name] = Backend(compiler=compiler, driver=driver)


@contextlib.contextmanager
def jit_functions_interpreted():
    """Inside the block, calling a ``@triton.jit`` function runs it as a device function in Triton's interpreter.

    Triton decides at decoration time whether ``@triton.jit`` makes a compiled or an interpreted function, from
    ``TRITON_INTERPRET``; its own library (``tl.sum``, ``tl.sigmoid``... in ``triton.language.standard``) is
    decorated when triton is imported, which torch does before mydev's Triton code generation can be selected. An
    interpreted mydev kernel calling one of them then fails with "Cannot call @triton.jit'd outside of the scope of
    a kernel". Applied only while torch_mydev's interpreter lock is held (triton_support.py), so no other kernel
    sees it. Upstream Triton has no interpreter switch after import.
    """
    import triton
    from triton.runtime.interpreter import InterpretedFunction
    from triton.runtime.jit import JITFunction

    if _release(triton.__version__) != PATCHED_TRITON:
        _skip_patch("JITFunction.__call__", "triton", triton.__version__, PATCHED_TRITON)
        yield
        return
    compiled_call = JITFunction.__call__

    def interpreted_call(function, *args, **kwargs):
        interpreted = _interpreted_functions.get(function.fn)
        if interpreted is None:
            interpreted = _interpreted_functions[function.fn] = InterpretedFunction(function.fn)
        return interpreted(*args, **kwargs)

    JITFunction.__call__ = _replacing(compiled_call, interpreted_call)
    try:
        yield
    finally:
        JITFunction.__call__ = compiled_call


_interpreted_functions = {}
