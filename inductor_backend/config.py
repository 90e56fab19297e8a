"""Settings of mydev's Inductor backend, a ``torch.utils._config_module`` config like ``torch._inductor.config``.

Inductor registers it as mydev's ``device_custom_config``, so it is part of the FX graph cache key: a graph compiled
with one code generator, or by another build of torch_mydev, is never served to another.

``codegen``: which code generator writes mydev's kernels. ``"cpp"`` (the default): Inductor's C++ code generator,
kernels launched on the mydev stream through the runtime. ``"triton"``: Inductor's Triton code generator, kernels run
by Triton's interpreter on the mydev stream (needs the optional ``triton`` package). ``TORCH_MYDEV_INDUCTOR_CODEGEN``
sets it for the whole process; ``torch.compile(m, backend="mydev", options={"codegen": "triton"})`` for one model.
"""
import hashlib
import os
import sys

from torch.utils._config_module import Config, install_config_module

codegen: str = Config(env_name_default="TORCH_MYDEV_INDUCTOR_CODEGEN", default="cpp")


def _build_identity():
    """A digest of what makes this build of the backend: the compiled extension (its size and modification time),
    the sources of this package and its subpackages, and torch_mydev's patches of Inductor, which change the code it
    generates, so that a rebuilt or changed torch_mydev gets cache entries of its own."""
    import torch_mydev
    from torch_mydev import _C

    digest = hashlib.sha256()
    status = os.stat(_C.__file__)
    digest.update(f"{status.st_size}:{status.st_mtime_ns}".encode())
    here = os.path.dirname(os.path.abspath(__file__))
    sources = [os.path.join(folder, name) for folder, _, names in os.walk(here) for name in names if name.endswith(".py")]
    sources.append(os.path.join(os.path.dirname(os.path.abspath(torch_mydev.__file__)), "patches.py"))
    for path in sorted(sources):
        with open(path, "rb") as source:
            digest.update(os.path.relpath(path, here).encode() + source.read())
    digest.update(getattr(torch_mydev, "__version__", "").encode())
    return digest.hexdigest()


# Read-only: the cache key's record of which torch_mydev build compiled a graph.
build_identity: str = _build_identity()


install_config_module(sys.modules[__name__])
