"""``torch.compile(model, backend="mydev", mode=..., options=...)``: Inductor, with mydev's own option.

``options`` takes what ``backend="inductor"`` takes (Inductor config entries, checked the same way) plus
``"codegen"``: ``"cpp"`` or ``"triton"`` (default ``torch_mydev.inductor.config.codegen``). ``mode`` is Inductor's:
``"reduce-overhead"`` asks for CUDA graphs, which Inductor applies to CUDA devices only, so on mydev it compiles as
the default mode does; ``"max-autotune"`` autotunes the choices Inductor has for the device's kernels (C++ code
generation has ATen's matmul alone, so it changes little).

The backend is registered with Dynamo under the ``torch_dynamo_backends`` entry point, so ``backend="mydev"``
resolves without importing torch_mydev first.
"""
import torch

from torch_mydev.inductor import checked_codegen, codegen_selected, config


def mydev_backend(graph_module, example_inputs, mode=None, options=None):
    from torch._inductor.compile_fx import compile_fx, compile_fx_inner

    options = dict(options or {})
    codegen = checked_codegen(options.pop("codegen", config.codegen))
    # Inductor's own handling of mode and options: the same presets, the same checks and errors.
    inductor_patches = torch._TorchCompileInductorWrapper(mode, options, dynamic=None).config

    def inner_compile(*args, **kwargs):
        # Inductor compiles the backward graph later, at the first backward pass: it too runs in here.
        with codegen_selected(codegen):
            return compile_fx_inner(*args, **kwargs)

    with codegen_selected(codegen):
        return compile_fx(graph_module, example_inputs, config_patches=inductor_patches, inner_compile=inner_compile)
