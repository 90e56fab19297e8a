"""Dynamo's view of mydev (``torch._dynamo.device_interface``): what Dynamo and Inductor ask of a device while they
trace and compile, answered by ``torch.mydev`` — the current device, streams and events, properties (Inductor sizes
its reductions by ``multi_processor_count``), synchronize and memory use."""
import torch
from torch._dynamo.device_interface import DeviceInterface

import torch_mydev.mydev as mydev


def _checked_index(device):
    """The index of a mydev device, with a clear error naming mydev when no such device exists."""
    index = mydev._get_device_index(device, optional=True)
    count = mydev.device_count()
    if not 0 <= index < count:
        raise ValueError(
            f"mydev device index {index} is out of range: this process has {count} mydev device(s) "
            "(MYDEV_DEVICE_COUNT)"
        )
    return index


class MydevInterface(DeviceInterface):
    device = mydev.device
    Event = mydev.Event
    Stream = mydev.Stream

    class Worker:
        # Inductor's compile workers ask for properties without touching the device; reading them costs nothing here.
        @staticmethod
        def set_device(device):
            mydev.set_device(_checked_index(device))

        @staticmethod
        def current_device():
            return mydev.current_device()

        @staticmethod
        def get_device_properties(device=None):
            return mydev.get_device_properties(_checked_index(device))

    current_device = staticmethod(mydev.current_device)
    device_count = staticmethod(mydev.device_count)
    is_available = staticmethod(mydev.is_available)
    stream = staticmethod(mydev.stream)
    current_stream = staticmethod(mydev.current_stream)
    set_stream = staticmethod(mydev.set_stream)
    is_bf16_supported = staticmethod(mydev.is_bf16_supported)

    @staticmethod
    def set_device(device):
        mydev.set_device(_checked_index(device))

    @staticmethod
    def exchange_device(device):
        previous = mydev.current_device()
        if device != previous:
            mydev.set_device(_checked_index(device))
        return previous

    @staticmethod
    def maybe_exchange_device(device):
        if device < 0:
            return -1
        return MydevInterface.exchange_device(device)

    @staticmethod
    def _set_stream_by_id(stream_id, device_index, device_type):
        mydev.set_stream(mydev.Stream(stream_id=stream_id, device_index=device_index, device_type=device_type))

    @staticmethod
    def get_raw_stream(device_idx):
        return mydev.current_stream(_checked_index(device_idx)).stream_id

    @staticmethod
    def synchronize(device=None):
        mydev.synchronize(_checked_index(device))

    @staticmethod
    def get_compute_capability(device=None):
        properties = mydev.get_device_properties(_checked_index(device))
        return properties.major * 10 + properties.minor

    @staticmethod
    def memory_allocated(device=None):
        return mydev.memory_allocated(_checked_index(device))

    @staticmethod
    def is_triton_capable(device=None):
        # Inductor generates Triton for mydev when it is selected (torch_mydev.inductor.config.codegen).
        from torch_mydev.inductor import config

        return config.codegen == "triton"

    @classmethod
    def raise_if_triton_unavailable(cls, device=None):
        from torch_mydev.inductor.triton_support import require_triton

        require_triton()


def is_mydev(device):
    return isinstance(device, torch.device) and device.type == "mydev"
