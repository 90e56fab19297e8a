"""Build of torch_mydev: the Python package plus one C++ extension, torch_mydev._C,
holding the simulated runtime (csrc/runtime), the PyTorch glue (csrc/core), the
device-level operators and generic fallback (csrc/aten), the native kernels
(csrc/kernels), the autocast policy (csrc/amp), the torch.compile launch path
(csrc/inductor), the profiler (csrc/profiler), the c10d backend
(csrc/distributed) and the Python bindings (csrc/python).

Build without isolation so that the installed torch (pinned to 2.13.0) is the one
compiled against:  pip install --no-build-isolation -e .
"""
import glob
import os
import platform

# torch autoloads installed backends on import, this one included; while it is
# being built, its extension may be missing or stale.
os.environ["TORCH_DEVICE_BACKEND_AUTOLOAD"] = "0"

from setuptools import find_packages, setup  # noqa: E402
from torch.utils.cpp_extension import BuildExtension, CppExtension, include_paths  # noqa: E402

ROOT = os.path.dirname(os.path.abspath(__file__))


def sources():
    layers = ("runtime", "core", "aten", "kernels", "amp", "inductor", "profiler", "distributed", "python")
    found = []
    for layer in layers:
        found += sorted(glob.glob(os.path.join("csrc", layer, "*.cpp")))
    return found


# scripts/bootstrap.sh installs the package metadata (the torch.backends entry
# point) once with MYDEV_SKIP_EXTENSION=1, then compiles with
# `setup.py build_ext --build-lib build/lib` and copies the library into the
# package; the ninja build directory (build/) persists, where pip's editable
# build would compile everything again in a throwaway directory.
skip_extension = os.environ.get("MYDEV_SKIP_EXTENSION") == "1"

# Calling one of ATen's DispatchStubs (csrc/kernels/Normalization.cpp) links
# against DispatchStubImpl::get_call_ptr, whose parameter list depends on the
# CPU kernel variants the torch build defined: x86-64 wheels are built with
# AVX512 and AVX2 variants, and the extension must declare the same signature.
DISPATCH_STUB_ISA_FLAGS = (
    ["-DHAVE_AVX512_CPU_DEFINITION", "-DHAVE_AVX2_CPU_DEFINITION"] if platform.machine() in ("x86_64", "AMD64") else []
)

setup(
    name="torch_mydev",
    version="0.1.0",
    description="mydev: a simulated out-of-tree PyTorch accelerator backend (PrivateUse1)",
    # inductor_backend/ (the torch.compile hook) is installed as the subpackage torch_mydev.inductor.
    packages=find_packages(include=["torch_mydev", "torch_mydev.*"])
    + ["torch_mydev.inductor", "torch_mydev.inductor.triton_backend"],
    package_dir={"torch_mydev.inductor": "inductor_backend"},
    python_requires=">=3.11",
    install_requires=["torch==2.13.0", "numpy"],
    ext_modules=[] if skip_extension else [
        CppExtension(
            "torch_mydev._C",
            sources(),
            # Kineto's headers ship with torch but are not on cpp_extension's include path (csrc/profiler).
            include_dirs=[os.path.join(ROOT, "csrc", "runtime", "include"), os.path.join(include_paths()[0], "kineto")],
            extra_compile_args={"cxx": ["-O2", "-g0", "-Wno-interference-size"] + DISPATCH_STUB_ISA_FLAGS},
        )
    ],
    cmdclass={"build_ext": BuildExtension.with_options(use_ninja=True)},
    entry_points={
        "torch.backends": ["torch_mydev = torch_mydev:_autoload"],
        "torch_dynamo_backends": ["mydev = torch_mydev.inductor.dynamo_backend:mydev_backend"],
    },
)
