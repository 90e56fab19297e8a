"""torch_mydev.ops: the coverage table read from the dispatcher, per-operator
fallback counters, and the MYDEV_FALLBACK policy."""
import json
import subprocess
import sys

import torch
from torch.testing._internal.common_utils import run_tests, TestCase

import torch_mydev.ops as ops
from helpers import run_python


class TestCoverage(TestCase):
    def test_classifies_known_operators(self):
        table = {entry.op: entry.how for entry in ops.coverage()}
        self.assertEqual(table["aten::add.out"], "native")
        self.assertEqual(table["aten::mm.out"], "native")
        self.assertEqual(table["aten::native_layer_norm"], "native")
        self.assertEqual(table["aten::add.Tensor"], "native")
        self.assertEqual(table["aten::add_.Tensor"], "native")
        self.assertEqual(table["aten::atan2_"], "composite")
        self.assertEqual(table["aten::nonzero"], "fallback")
        self.assertEqual(table["aten::_thnn_fused_lstm_cell"], "native")
        self.assertEqual(table["aten::_cudnn_rnn"], "unsupported")
        # Operators only sparse tensors reach: the sparse mydev keys decide.
        self.assertEqual(table["aten::_coalesce"], "fallback")
        self.assertEqual(table["aten::_nnz"], "native")
        self.assertEqual(table["aten::sparse_sampled_addmm"], "fallback")
        self.assertEqual(set(table.values()), set(ops.HOW_IT_RUNS))
        self.assertGreater(len(table), 2000)

    def test_foreach_operators_are_native_only_with_a_kernel_of_their_own(self):
        table = {entry.op: entry for entry in ops.coverage()}
        for name in ("aten::_foreach_add_.List", "aten::_foreach_addcdiv_.Scalar", "aten::_foreach_sqrt",
                     "aten::_foreach_norm.Scalar", "aten::_foreach_zero_"):
            self.assertEqual(table[name].how, "native", msg=name)
            self.assertIn("ForeachPointwise.cpp", table[name].registered_at)
        for name in ("aten::_foreach_abs", "aten::_foreach_copy_", "aten::_foreach_pow.List"):
            self.assertEqual(table[name].how, "fallback", msg=name)
            self.assertIn("Fallback.cpp", table[name].registered_at)
        foreach = [entry for entry in table.values() if entry.op.startswith("aten::_foreach_")]
        self.assertEqual({entry.how for entry in foreach}, {"native", "fallback"})

    def test_command_line_table(self):
        result = subprocess.run(
            [sys.executable, "-m", "torch_mydev.ops", "--coverage", "--format", "json", "--ops", "aten::add*"],
            capture_output=True, text=True, check=True,
        )
        report = json.loads(result.stdout)
        rows = {row["op"]: row["how"] for row in report["operators"]}
        self.assertEqual(rows["aten::add.out"], "native")
        self.assertTrue(all(name.startswith("aten::add") for name in rows))
        self.assertEqual(sum(report["summary"].values()), len(ops.coverage()))


class TestFallbackCounters(TestCase):
    def test_counts_each_fallback_call_and_not_native_ones(self):
        x = torch.tensor([0.0, 1.0, 2.0], device="mydev")
        ops.reset_fallback_counts()
        for _ in range(3):
            torch.nonzero(x)
        y = x + 1
        counts = ops.fallback_counts()
        self.assertEqual(counts.get("aten::nonzero"), 3)
        self.assertNotIn("aten::add.out", counts)
        self.assertEqual(y.cpu().tolist(), [1.0, 2.0, 3.0])
        ops.reset_fallback_counts()
        self.assertEqual(ops.fallback_counts(), {})


    def test_counts_routed_foreach_operators_once_per_list(self):
        tensors = [torch.full((3,), -2.0, device="mydev"), torch.full((4,), 3.0, device="mydev")]
        ops.reset_fallback_counts()
        magnitudes = torch._foreach_abs(tensors)
        torch._foreach_add_(tensors, 1.0)
        counts = ops.fallback_counts()
        self.assertEqual(counts.get("aten::_foreach_abs"), 1)
        self.assertNotIn("aten::_foreach_add_.Scalar", counts)
        self.assertEqual([t.cpu().tolist() for t in magnitudes], [[2.0] * 3, [3.0] * 4])
        self.assertEqual(tensors[0].cpu().tolist(), [-1.0, -1.0, -1.0])


class TestFallbackPolicy(TestCase):
    def test_error_policy_refuses_fallback_but_not_native_kernels(self):
        x = torch.tensor([0.0, 1.0, 2.0], device="mydev")
        with ops.fallback_policy("error"):
            self.assertEqual(ops.get_fallback_policy(), "error")
            with self.assertRaisesRegex(NotImplementedError, "aten::nonzero has no native mydev kernel"):
                torch.nonzero(x)
            self.assertEqual((x * 2).cpu().tolist(), [0.0, 2.0, 4.0])
            with self.assertRaisesRegex(NotImplementedError, "aten::_foreach_abs has no native mydev kernel"):
                torch._foreach_abs([x])
            torch._foreach_mul_([x], 2.0)
            self.assertEqual(x.cpu().tolist(), [0.0, 2.0, 4.0])
        self.assertEqual(ops.get_fallback_policy(), "allow")
        self.assertEqual(torch.nonzero(x).cpu().flatten().tolist(), [1, 2])

    def test_warn_policy_warns_once_per_operator(self):
        x = torch.tensor([0.0, 1.0], device="mydev")
        with ops.fallback_policy("warn"), self.assertWarnsRegex(UserWarning, "aten::nonzero has no native mydev"):
            torch.nonzero(x)
        with ops.fallback_policy("warn"):
            import warnings

            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                torch.nonzero(x)
            self.assertEqual([str(w.message) for w in caught if "nonzero" in str(w.message)], [])

    def test_environment_variable_sets_the_policy(self):
        result = run_python(
            """
            import torch
            x = torch.ones(2, device="mydev")
            try:
                torch.nonzero(x)
            except NotImplementedError as error:
                print("refused:", error)
            """,
            env={"MYDEV_FALLBACK": "error"},
        )
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("refused: aten::nonzero has no native mydev kernel", result.stdout)

    def test_bad_policy_is_a_clear_error(self):
        with self.assertRaisesRegex(ValueError, "must be one of 'allow', 'warn' or 'error', got 'sometimes'"):
            ops.set_fallback_policy("sometimes")


if __name__ == "__main__":
    run_tests()
