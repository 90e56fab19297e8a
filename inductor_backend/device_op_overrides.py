"""The device operations Inductor splices into generated wrapper code for mydev (``DeviceOpOverrides``).

The C++ code generator's kernels need none of them: they are launched on the current stream of their tensors'
device. Inductor's GPU-style wrapper, used for Triton kernels, guards the device and fetches a raw stream for each
launch; mydev answers with its own ``torch.mydev`` calls."""
from textwrap import dedent

from torch._inductor.codegen.common import DeviceOpOverrides


class MydevDeviceOpOverrides(DeviceOpOverrides):
    def import_get_raw_stream_as(self, name):
        return dedent(
            f"""
            def {name}(device_index):
                return torch.mydev.current_stream(device_index).stream_id
            """
        )

    def set_device(self, device_idx):
        return f"torch.mydev.set_device({device_idx})"

    def synchronize(self):
        return "torch.mydev.synchronize()"

    def device_guard(self, device_idx):
        return f"torch.mydev.device({device_idx})"

    def current_stream(self):
        return "torch.mydev.current_stream()"

    def cpp_kernel_type(self):
        return "void*"
