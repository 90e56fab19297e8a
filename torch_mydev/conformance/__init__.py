"""The vendor conformance kit: PyTorch's OpInfo and ModuleInfo databases run on
mydev and compared with the CPU, in crash-isolated worker processes.

Run it with ``python -m torch_mydev.conformance``; docs/conformance.md explains
the options, the statuses and the report. Nothing is imported here so that the
worker and the CUDA golden recorder pull in only what they use.
"""
