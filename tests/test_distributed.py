"""torch.distributed on mydev through the "mccl" backend: every collective and dtype against gloo on the CPU, NCCL's
stream semantics, the default backends, DDP training equal to single-process training, and a dead rank failing the
others within the timeout. Each test spawns its ranks as processes (one mydev device each)."""
import os
import re
import subprocess
import sys
import tempfile
import time
from unittest import mock

import torch
import torch.multiprocessing as mp
from torch.testing._internal.common_utils import run_tests, TestCase

import distributed_workers


RANKS_TIMEOUT_S = 300  # a hung collective fails its test instead of hanging the suite


def run_ranks(worker, world_size, *args, env=None):
    """Runs worker(rank, world_size, init_file, *args) in world_size spawned processes, rank r on mydev:r, with
    `env` added to their environment; returns what each rank wrote to <init_file>.rank<r>, if anything."""
    with tempfile.TemporaryDirectory() as folder, mock.patch.dict(os.environ, env or {}):
        os.environ["MYDEV_DEVICE_COUNT"] = str(max(2, world_size))
        # As torchrun does: ranks sharing the host's cores, each with as many threads as all of them, slow every
        # rank down several times over.
        os.environ.setdefault("OMP_NUM_THREADS", str(max(1, (os.cpu_count() or 1) // world_size)))
        init_file = os.path.join(folder, "init")
        context = mp.start_processes(worker, args=(world_size, init_file, *args), nprocs=world_size,
                                     start_method="spawn", join=False)
        deadline = time.monotonic() + RANKS_TIMEOUT_S
        while not context.join(timeout=5):
            if time.monotonic() > deadline:
                for process in context.processes:
                    process.kill()
                raise AssertionError(f"{worker.__name__} on {world_size} ranks still running after {RANKS_TIMEOUT_S} s")
        return [open(f"{init_file}.rank{r}").read() if os.path.exists(f"{init_file}.rank{r}") else None
                for r in range(world_size)]


def single_process_training():
    """What the DDP and FSDP2 workers train, on the CPU in one process on the whole batch."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.GELU(), torch.nn.Linear(32, 4))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    generator = torch.Generator().manual_seed(1)
    for _ in range(4):
        inputs = torch.randn(16, 16, generator=generator)
        targets = torch.randn(16, 4, generator=generator)
        optimizer.zero_grad()
        torch.nn.functional.mse_loss(model(inputs), targets).backward()
        optimizer.step()
    return [parameter.detach() for parameter in model.parameters()]


class TestCollectives(TestCase):
    def test_every_collective_and_dtype_on_2_ranks(self):
        run_ranks(distributed_workers.collectives, 2)

    def test_every_collective_and_dtype_on_4_ranks(self):
        run_ranks(distributed_workers.collectives, 4)

    def test_collectives_follow_the_streams(self):
        run_ranks(distributed_workers.stream_semantics, 2)

    def test_no_backend_means_mccl_for_mydev_and_gloo_for_the_cpu(self):
        run_ranks(distributed_workers.default_backends, 2)

    def test_sparse_float8_mixed_dtypes_reduce_and_subgroups_where_gloo_and_nccl_differ(self):
        run_ranks(distributed_workers.where_gloo_and_nccl_differ, 2)


class TestDistributedDataParallel(TestCase):
    def test_ddp_matches_single_process_training(self):
        with tempfile.TemporaryDirectory() as folder:
            result_file = os.path.join(folder, "params.pt")
            run_ranks(distributed_workers.ddp_training, 2, result_file)
            trained = torch.load(result_file)
        for reference, parameter in zip(single_process_training(), trained):
            self.assertEqual(parameter, reference, atol=1e-5, rtol=1e-4)


class TestFullyShardedDataParallel(TestCase):
    def test_fsdp2_matches_single_process_training(self):
        with tempfile.TemporaryDirectory() as folder:
            result_file = os.path.join(folder, "params.pt")
            run_ranks(distributed_workers.fsdp2_training, 2, result_file)
            trained = torch.load(result_file)
        for reference, parameter in zip(single_process_training(), trained):
            self.assertEqual(parameter, reference, atol=1e-5, rtol=1e-4)


class TestDTensor(TestCase):
    def test_sharded_matmul_redistribution_and_tensor_parallel(self):
        run_ranks(distributed_workers.dtensor_matmul, 2)

    def test_two_dimensional_mesh_on_4_ranks(self):
        run_ranks(distributed_workers.two_dimensional_mesh, 4)

    def test_split_group_and_a_mesh_split_from_device_id_on_4_ranks(self):
        run_ranks(distributed_workers.split_groups, 4)


class TestTorchrun(TestCase):
    def test_the_ddp_example_under_torchrun(self):
        example = os.path.join(os.path.dirname(__file__), "..", "examples", "train_ddp.py")
        result = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node=2",
                                 example], capture_output=True, text=True, timeout=300)
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        self.assertIn("2 ranks on ['mydev:0', 'mydev:1']; weights identical on every rank: True", result.stdout)
        losses = [float(line.split()[-1]) for line in result.stdout.splitlines() if line.startswith("step")]
        self.assertLess(losses[-1], losses[0])


class TestFailures(TestCase):
    def test_a_dead_rank_fails_the_others_within_the_timeout(self):
        start = time.monotonic()
        messages = run_ranks(distributed_workers.dead_peer, 2)
        self.assertLess(time.monotonic() - start, 60)
        self.assertIsNotNone(messages[0])
        first, second, future = messages[0].split("\n")
        self.assertRegex(first, "(?i)timed out|connection|closed|peer")
        self.assertIn("unusable after an earlier collective failed", second)
        self.assertTrue(second.endswith("[0.0 s]"), second)
        self.assertIn("future: mccl: the group is unusable after an earlier collective failed", future)

    def test_abort_ends_a_receive_waiting_for_its_peer_at_once_and_survives_a_late_send(self):
        took, receive, queued, late = run_ranks(distributed_workers.abort_during_a_receive, 2)[0].split("\n")
        self.assertLess(float(took), 10)  # the group's timeout: 60 s
        self.assertRegex(receive, "^DistBackendError: mccl: the process group was shut down or aborted")
        self.assertRegex(queued, "^DistBackendError: mccl: .*shut down or aborted")
        self.assertEqual(late, "late send delivered, process alive, backend mccl")

    def test_sends_and_receives_hold_up_neither_collectives_nor_other_peers(self):
        run_ranks(distributed_workers.point_to_point_beside_collectives, 3)

    def test_inputs_gloo_refuses_late_are_refused_at_the_call_and_the_group_goes_on(self):
        run_ranks(distributed_workers.refused_at_the_call, 2)

    def test_every_mismatch_is_reported_on_every_rank_when_checked(self):
        cases = ["shape", "dtype", "reduction", "collective", "root"]
        messages = run_ranks(distributed_workers.mismatched_collectives, 2, cases, env={"MCCL_CHECK_COLLECTIVES": "1"})
        calls = {"shape": ("all_reduce(op=SUM) of Float[4]", "all_reduce(op=SUM) of Float[8]"),
                 "dtype": ("all_reduce(op=SUM) of Float[4]", "all_reduce(op=SUM) of Int[4]"),
                 "reduction": ("all_reduce(op=SUM) of Float[4]", "all_reduce(op=MAX) of Float[4]"),
                 "collective": ("all_reduce(op=SUM) of Float[4]", "broadcast(root=0) of Float[4]"),
                 "root": ("broadcast(root=0) of Float[4]", "broadcast(root=1) of Float[4]")}
        for message in messages:
            for case, line in zip(cases, message.split("\n")):
                first, second = calls[case]
                self.assertRegex(line, rf"mccl: the ranks called different collectives \(rank 0: #\d+ "
                                       rf"{re.escape(first)}; rank 1: #\d+ {re.escape(second)}\); no rank ran it")

    def test_a_call_one_rank_refuses_is_reported_and_keeps_the_ranks_in_step_when_checked(self):
        # The worker's all_reduce after the refused all_gather checks that the ranks are still in step.
        # Refused by every rank alike, the records agree and nothing more happens.
        messages = run_ranks(distributed_workers.mismatched_collectives, 2, ["refused", "refused_by_all"],
                             env={"MCCL_CHECK_COLLECTIVES": "1"})
        (first, first_alike), (second, second_alike) = (message.split("\n") for message in messages)
        call = re.escape("all_gather() of Float, Float[4], Float[4]")
        self.assertRegex(first, rf"mccl: the ranks called different collectives \(rank 0: #\d+ {call}; rank 1: #\d+ "
                                rf"{call}, refused at the call\); no rank ran it")
        self.assertIn("mccl: all_gather's input has 8 elements, but its output for rank 1 has 4", second)
        for alike in (first_alike, second_alike):
            self.assertIn("Input tensor data type is not supported for mccl process group: Short", alike)

    def test_every_collective_of_matching_ranks_passes_the_check(self):
        run_ranks(distributed_workers.collectives, 2, env={"MCCL_CHECK_COLLECTIVES": "1"})

    def test_ranks_that_disagree_on_checking_refuse_to_start(self):
        messages = run_ranks(distributed_workers.mixed_check_settings, 2)
        for message in messages:
            self.assertIn("mccl: ranks [0] of this group check collectives and the others do not", message)

    def test_a_mismatched_collective_is_reported_in_debug_mode(self):
        # torch's wrapper compares shapes, dtypes and collectives; mccl's check adds the reduction.
        messages = run_ranks(distributed_workers.mismatched_collectives, 2, ["shape", "reduction"],
                             env={"TORCH_DISTRIBUTED_DEBUG": "DETAIL"})
        for rank, message in enumerate(messages):
            shape, reduction = message.split("\n")
            self.assertIn("Detected mismatch between collectives on ranks", shape)
            self.assertIn("TensorShape=[4]" if rank == 1 else "TensorShape=[8]", shape)
            self.assertIn("all_reduce(op=SUM) of Float[4]; rank 1: #", reduction)
            self.assertIn("all_reduce(op=MAX) of Float[4]); no rank ran it", reduction)


if __name__ == "__main__":
    run_tests()
