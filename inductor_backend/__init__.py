"""torch.compile for mydev: how Inductor generates and runs kernels for the device.

Installed as ``torch_mydev.inductor``. What plugs in where:

- Dynamo asks the device interface (``device_interface.MydevInterface``) about devices, streams and events.
- Inductor's registry (``register_backend_for_device``) gets, for "mydev", the scheduling of the selected code
  generator — Inductor's own ``CppScheduling`` (default) or ``TritonScheduling`` — with mydev's wrappers:
  ``wrapper.MydevPythonWrapperCodegen`` (defines C++ kernels through ``kernel_compiler``, which launches them on the
  mydev stream), ``cpp_wrapper.MydevCppWrapperCodegen`` (``torch._inductor.config.cpp_wrapper``), Inductor's
  ``WrapperFxCodegen``, and ``config`` as the device's codegen config (part of the FX graph cache key).
- ``register_device_op_overrides`` gets ``device_op_overrides.MydevDeviceOpOverrides``.
- ``dynamo_backend.mydev_backend`` is ``torch.compile(backend="mydev", options=...)``.
- ``triton_support`` runs Triton kernels on the mydev stream through Triton's interpreter.

torch 2.13 has no lazy registration for a PrivateUse1 device, so torch_mydev registers these right after torch
imports Dynamo's device interfaces and Inductor's compile_fx (``torch_mydev.patches.run_after_import``);
``import torch`` does not import either.
"""
import contextlib

from torch_mydev.inductor import config

CODEGENS = ("cpp", "triton")


def checked_codegen(value):
    """``value`` if it names a code generator mydev has, else a ValueError that names the choices."""
    if value not in CODEGENS:
        raise ValueError(
            f"mydev's Inductor backend: unknown codegen {value!r}; expected one of {', '.join(map(repr, CODEGENS))} "
            "(from options={'codegen': ...} or TORCH_MYDEV_INDUCTOR_CODEGEN)"
        )
    return value


def register_device_interface():
    """Dynamo's device interface for "mydev" and for each "mydev:<index>", as torch registers CUDA's."""
    from torch._dynamo.device_interface import register_interface_for_device

    import torch_mydev.mydev as mydev
    from torch_mydev.inductor.device_interface import MydevInterface

    register_interface_for_device("mydev", MydevInterface)
    for index in range(mydev.device_count()):
        register_interface_for_device(f"mydev:{index}", MydevInterface)


def register_inductor_backend():
    """Registers mydev with Inductor for the code generator ``config.codegen``; registering again replaces it."""
    from torch._inductor.codegen.common import register_backend_for_device, register_device_op_overrides
    from torch._inductor.codegen.wrapper_fxir import WrapperFxCodegen

    from torch_mydev.inductor.cpp_wrapper import MydevCppWrapperCodegen
    from torch_mydev.inductor.device_op_overrides import MydevDeviceOpOverrides
    from torch_mydev.inductor.wrapper import MydevPythonWrapperCodegen
    from torch_mydev.patches import patch_inductor_for_mydev

    if checked_codegen(config.codegen) == "triton":
        from torch_mydev.inductor.triton_support import prepare_triton

        prepare_triton()
        from torch._inductor.codegen.triton import TritonScheduling as scheduling
    else:
        from torch._inductor.codegen.cpp import CppScheduling as scheduling
    register_backend_for_device(
        "mydev",
        scheduling,
        MydevPythonWrapperCodegen,
        MydevCppWrapperCodegen,
        WrapperFxCodegen,
        device_custom_config=config,
    )
    register_device_op_overrides("mydev", MydevDeviceOpOverrides())
    patch_inductor_for_mydev()


@contextlib.contextmanager
def codegen_selected(codegen):
    """Inductor compiles for mydev with ``codegen`` inside the block (one model's choice); the process default after."""
    try:
        with config.patch(codegen=checked_codegen(codegen)):
            register_inductor_backend()
            yield
    finally:
        register_inductor_backend()
