"""Where a conformance run happened: versions, device, date and the command line, for the report."""
import datetime
import importlib.metadata
import platform
import shlex
import sys

import torch


def describe_environment(device):
    device_module = torch.get_device_module(device)
    return {
        "torch_version": torch.__version__,
        "torch_mydev_version": _installed_version("torch_mydev"),
        "device_type": device.type,
        "device_name": device_module.get_device_name(),
        "device_count": device_module.device_count(),
        "python_version": platform.python_version(),
        "platform": platform.platform(),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "command_line": shlex.join(["python", "-m", "torch_mydev.conformance", *sys.argv[1:]]),
    }


def _installed_version(distribution):
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None
