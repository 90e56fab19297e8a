"""The simulated runtime's own test program (csrc/runtime/tests), built without
PyTorch and run as-is, and again with AddressSanitizer and
UndefinedBehaviorSanitizer."""
import os
import re
import subprocess

from torch.testing._internal.common_utils import run_tests, TestCase

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "csrc", "runtime", "tests", "build_and_run.sh")


def run_runtime_tests(*flags):
    return subprocess.run(["bash", SCRIPT, *flags], cwd=ROOT, capture_output=True, text=True, timeout=600)


class TestRuntime(TestCase):
    def check(self, result):
        output = result.stdout + result.stderr
        summary = re.search(r"^(\d+) passed, (\d+) failed$", result.stdout, re.MULTILINE)
        self.assertIsNotNone(summary, output)
        self.assertEqual(int(summary.group(2)), 0, output)
        self.assertGreaterEqual(int(summary.group(1)), 30, output)
        self.assertEqual(result.returncode, 0, output)

    def test_runtime_tests_pass(self):
        self.check(run_runtime_tests())

    def test_runtime_tests_pass_under_address_and_undefined_behaviour_sanitizers(self):
        self.check(run_runtime_tests("--sanitize"))


if __name__ == "__main__":
    run_tests()
