# PyTorch's test framework decides at import time which device types exist
# (common_device_type / common_utils read the PrivateUse1 backend name once),
# so mydev must be registered before anything from torch.testing._internal is
# imported. `import torch` autoloads it; importing torch_mydev makes that
# explicit and also covers TORCH_DEVICE_BACKEND_AUTOLOAD=0.
import torch  # noqa: F401
import torch_mydev  # noqa: F401
