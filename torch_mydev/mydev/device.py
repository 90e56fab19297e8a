"""Device selection and properties: torch.mydev.device_count(), set_device(), device(...), ..."""
import torch

from torch_mydev import _C
from torch_mydev.mydev.lazy_init import _lazy_init


def _get_device_index(device, optional=False):
    """Index of a mydev device given as an int, a string, a torch.device or a torch.mydev.device; None means current."""
    if isinstance(device, str):
        device = torch.device(device)
    if isinstance(device, torch.device):
        if device.type != "mydev":
            raise ValueError(f"Expected a mydev device, but got: {device}")
        device = device.index
    elif isinstance(device, _DeviceContext):
        device = device.idx
    if device is None:
        if not optional:
            raise ValueError("Expected a mydev device index, got None")
        return current_device()
    if not isinstance(device, int) or isinstance(device, bool):
        raise TypeError(f"Expected a mydev device index (int, str or torch.device), got {type(device).__name__}")
    return device


def is_available():
    """Whether mydev can be used (at least one simulated device)."""
    return device_count() > 0


def device_count():
    """Number of mydev devices (MYDEV_DEVICE_COUNT, default 2)."""
    return _C._device_count()


def current_device():
    """Index of the current mydev device of this thread."""
    _lazy_init()
    return _C._current_device()


def set_device(device):
    """Sets the current mydev device of this thread; a negative index changes nothing, as in torch.cuda."""
    index = _get_device_index(device, optional=True)
    if index < 0:
        return
    _lazy_init()
    _C._set_device(index)


class _DeviceGuard:
    """The device guard of Inductor's generated code, as torch.cuda._DeviceGuard: an index the graph's tensors are
    on (so the device is initialized), without the argument handling of ``device``, which costs a compiled call
    ~4 µs. On exit the entry device is current again, whatever the block set (``set_device``)."""

    def __init__(self, index):
        self.idx = index
        self.prev_idx = -1

    def __enter__(self):
        self.prev_idx = _C._current_device()
        if self.prev_idx != self.idx:
            _C._set_device(self.idx)

    def __exit__(self, exc_type, exc_value, traceback):
        if _C._current_device() != self.prev_idx:
            _C._set_device(self.prev_idx)
        return False


class device(_DeviceGuard):
    """Context manager that makes a mydev device current and the previous one current again on exit.

    None means the current device; a negative index changes nothing, as in torch.cuda."""

    def __init__(self, device):
        super().__init__(_get_device_index(device, optional=True))

    def __enter__(self):
        if self.idx < 0:
            self.prev_idx = -1
            return
        _lazy_init()
        super().__enter__()

    def __exit__(self, exc_type, exc_value, traceback):
        if self.prev_idx >= 0:
            super().__exit__(exc_type, exc_value, traceback)
        return False


_DeviceContext = device


class device_of(device):
    """Context manager that makes the device of a tensor current (no-op for non-mydev tensors)."""

    def __init__(self, obj):
        super().__init__(obj.get_device() if obj.device.type == "mydev" else -1)


def synchronize(device=None):
    """Waits for all work on every stream of a mydev device; raises a pending kernel error."""
    if torch.compiler.is_compiling():
        # Dynamo puts torch.accelerator.synchronize in the graph, as it does torch.cuda.synchronize; it would break
        # the graph at the C calls below. (Its handler takes no None.)
        torch.accelerator.synchronize(*([] if device is None else [device]))
        return
    _lazy_init()
    _C._synchronize(_get_device_index(device, optional=True))


def get_device_properties(device=None):
    """Properties of a mydev device: name, total_memory, multi_processor_count, major, minor."""
    _lazy_init()
    return _C._get_device_properties(_get_device_index(device, optional=True))


def get_device_name(device=None):
    return get_device_properties(device).name


def get_device_capability(device=None):
    properties = get_device_properties(device)
    return properties.major, properties.minor


def is_bf16_supported(including_emulation=True):
    """bfloat16 kernels exist for every operator that has them on the CPU."""
    return is_available()
