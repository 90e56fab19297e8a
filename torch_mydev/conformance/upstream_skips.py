"""Upstream device-generic tests the kit skips on mydev, each with the reason a reviewer can check.

Keys are fnmatch patterns over pytest node ids
(``test_view_ops.py::TestViewOpsPRIVATEUSE1::test_name_mydev``); values are the
reasons, shown in the report. Only tests that cannot pass on any PrivateUse1
backend, or that test something mydev does not claim, belong here; a defect of
mydev stays failing in the report.
"""
UPSTREAM_SKIPS = {}
