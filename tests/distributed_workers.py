"""What each rank runs in tests/test_distributed.py: functions a spawned process imports and calls as
``worker(rank, world_size, init_file, ...)``. A failed check raises in the rank, and the test then fails with that
rank's traceback."""
import datetime
import gc
import os
import threading
import time

import torch
import torch.distributed as dist
from torch.testing import assert_close

DTYPES = (torch.float32, torch.float16, torch.bfloat16, torch.int32, torch.int64)


def init(rank, world_size, init_file, backend="cpu:gloo,mydev:mccl", timeout_s=60):
    torch.mydev.set_device(rank)
    dist.init_process_group(backend, init_method=f"file://{init_file}", rank=rank, world_size=world_size,
                            timeout=datetime.timedelta(seconds=timeout_s))
    return torch.device("mydev", rank)


def values(rank, shape, dtype, offset=0):
    """Each rank's distinct input: small integers, exact in every dtype above."""
    return (torch.arange(int(torch.tensor(shape).prod()), dtype=torch.float32).reshape(shape) % 7 + rank + offset).to(dtype)


def reference_all_reduce(world_size, shape, dtype, op):
    inputs = [values(r, shape, dtype).double() for r in range(world_size)]
    stacked = torch.stack(inputs)
    if op == dist.ReduceOp.SUM:
        result = stacked.sum(0)
    elif op == dist.ReduceOp.MAX:
        result = stacked.max(0).values
    elif op == dist.ReduceOp.MIN:
        result = stacked.min(0).values
    elif op == dist.ReduceOp.PRODUCT:
        result = stacked.prod(0)
    elif op == dist.ReduceOp.AVG:
        result = stacked.mean(0)
    return result


def collectives(rank, world_size, init_file):
    device = init(rank, world_size, init_file)
    try:
        for dtype in DTYPES:
            ops = [dist.ReduceOp.SUM, dist.ReduceOp.MAX, dist.ReduceOp.MIN, dist.ReduceOp.PRODUCT]
            if dtype.is_floating_point:
                ops.append(dist.ReduceOp.AVG)
            for op in ops:
                tensor = values(rank, (3, 5), dtype).to(device)
                dist.all_reduce(tensor, op=op)
                assert_close(tensor.cpu().double(), reference_all_reduce(world_size, (3, 5), dtype, op).to(dtype).double(),
                             msg=f"all_reduce {op} {dtype}")
            # The CPU reference through gloo: the same numbers.
            cpu = values(rank, (3, 5), dtype)
            on_device = cpu.to(device)
            dist.all_reduce(cpu)
            dist.all_reduce(on_device)
            assert_close(on_device.cpu(), cpu, msg=f"mccl vs gloo {dtype}")

            tensor = values(rank, (4,), dtype).to(device)
            dist.broadcast(tensor, src=world_size - 1)
            assert_close(tensor.cpu(), values(world_size - 1, (4,), dtype))

            gathered = [torch.empty(4, dtype=dtype, device=device) for _ in range(world_size)]
            dist.all_gather(gathered, values(rank, (4,), dtype).to(device))
            for r in range(world_size):
                assert_close(gathered[r].cpu(), values(r, (4,), dtype))

            into = torch.empty(world_size * 4, dtype=dtype, device=device)
            dist.all_gather_into_tensor(into, values(rank, (4,), dtype).to(device))
            assert_close(into.cpu(), torch.cat([values(r, (4,), dtype) for r in range(world_size)]))

            scattered = torch.empty(2, dtype=dtype, device=device)
            dist.reduce_scatter_tensor(scattered, values(rank, (2 * world_size,), dtype).to(device))
            full = sum(values(r, (2 * world_size,), dtype).double() for r in range(world_size))
            assert_close(scattered.cpu().double(), full[2 * rank:2 * rank + 2])

            # The (world_size, n) layouts NCCL takes as well.
            stacked = torch.empty(world_size, 4, dtype=dtype, device=device)
            dist.all_gather_into_tensor(stacked, values(rank, (4,), dtype).to(device))
            assert_close(stacked.cpu(), torch.stack([values(r, (4,), dtype) for r in range(world_size)]))
            dist.reduce_scatter_tensor(scattered, values(rank, (world_size, 2), dtype).to(device))
            full = sum(values(r, (world_size, 2), dtype).double() for r in range(world_size))
            assert_close(scattered.cpu().double(), full[rank])

            chunks = [values(rank, (2,), dtype, offset=r).to(device) for r in range(world_size)]
            out = torch.empty(2, dtype=dtype, device=device)
            dist.reduce_scatter(out, chunks)
            assert_close(out.cpu().double(), sum(values(r, (2,), dtype, offset=rank).double() for r in range(world_size)))

            sent = torch.arange(world_size * 2, dtype=torch.float32).to(dtype).to(device) + rank * 100
            received = torch.empty_like(sent)
            dist.all_to_all_single(received, sent)
            expected = torch.cat([torch.arange(2 * rank, 2 * rank + 2, dtype=torch.float32) + r * 100
                                  for r in range(world_size)]).to(dtype)
            assert_close(received.cpu(), expected)

            inputs = [torch.full((3,), rank * 10 + r, dtype=dtype, device=device) for r in range(world_size)]
            outputs = [torch.empty(3, dtype=dtype, device=device) for _ in range(world_size)]
            dist.all_to_all(outputs, inputs)
            for r in range(world_size):
                assert_close(outputs[r].cpu(), torch.full((3,), r * 10 + rank, dtype=dtype))

            # Sizes that differ per rank, as NCCL takes them.
            gathered = [torch.empty(r + 1, 2, dtype=dtype, device=device) for r in range(world_size)]
            dist.all_gather(gathered, values(rank, (rank + 1, 2), dtype).to(device))
            for r in range(world_size):
                assert_close(gathered[r].cpu(), values(r, (r + 1, 2), dtype))
            inputs = [torch.full((rank + r + 1,), rank * 10 + r, dtype=dtype, device=device) for r in range(world_size)]
            outputs = [torch.empty(r + rank + 1, dtype=dtype, device=device) for r in range(world_size)]
            dist.all_to_all(outputs, inputs)
            for r in range(world_size):
                assert_close(outputs[r].cpu(), torch.full((r + rank + 1,), r * 10 + rank, dtype=dtype))

            tensor = values(rank, (5,), dtype).to(device)
            dist.reduce(tensor, dst=0)
            if rank == 0:
                assert_close(tensor.cpu().double(), sum(values(r, (5,), dtype).double() for r in range(world_size)))

            gather_list = [torch.empty(3, dtype=dtype, device=device) for _ in range(world_size)] if rank == 0 else None
            dist.gather(values(rank, (3,), dtype).to(device), gather_list, dst=0)
            if rank == 0:
                for r in range(world_size):
                    assert_close(gather_list[r].cpu(), values(r, (3,), dtype))

            scatter_list = [values(r, (3,), dtype).to(device) for r in range(world_size)] if rank == 0 else None
            mine = torch.empty(3, dtype=dtype, device=device)
            dist.scatter(mine, scatter_list, src=0)
            assert_close(mine.cpu(), values(rank, (3,), dtype))

        # PREMUL_SUM: each input scaled, then summed (as NCCL does); an input that is not the output stays as it was.
        tensor = values(rank, (6,), torch.float32).to(device)
        dist.all_reduce(tensor, op=dist._make_nccl_premul_sum(0.5))
        assert_close(tensor.cpu(), 0.5 * sum(values(r, (6,), torch.float32) for r in range(world_size)))
        tensor = values(rank, (6,), torch.float32).to(device)
        dist.all_reduce(tensor, op=dist._make_nccl_premul_sum(torch.tensor(0.25, device=device)))
        assert_close(tensor.cpu(), 0.25 * sum(values(r, (6,), torch.float32) for r in range(world_size)))
        source = values(rank, (2 * world_size,), torch.float32).to(device)
        scattered = torch.empty(2, device=device)
        dist.reduce_scatter_tensor(scattered, source, op=dist._make_nccl_premul_sum(2.0))
        full = 2.0 * sum(values(r, (2 * world_size,), torch.float32) for r in range(world_size))
        assert_close(scattered.cpu(), full[2 * rank:2 * rank + 2])
        assert_close(source.cpu(), values(rank, (2 * world_size,), torch.float32))

        # Point to point, in a ring.
        right, left = (rank + 1) % world_size, (rank - 1) % world_size
        outgoing = torch.full((8,), float(rank), device=device)
        incoming = torch.empty(8, device=device)
        requests = dist.batch_isend_irecv([dist.P2POp(dist.isend, outgoing, right), dist.P2POp(dist.irecv, incoming, left)])
        for request in requests:
            request.wait()
        assert_close(incoming.cpu(), torch.full((8,), float(left)))

        # The receive listed first: a send does not wait for a receive of other memory (that would close the ring
        # into a deadlock).
        incoming = torch.empty(8, device=device)
        requests = dist.batch_isend_irecv([dist.P2POp(dist.irecv, incoming, left), dist.P2POp(dist.isend, outgoing, right)])
        for request in requests:
            request.wait()
        assert_close(incoming.cpu(), torch.full((8,), float(left)))

        # Deterministic mode runs kernels before their launch returns, but not mccl's: both ranks may send first.
        torch.use_deterministic_algorithms(True)
        try:
            request = dist.isend(torch.full((3,), float(rank), device=device), right)
            incoming = torch.empty(3, device=device)
            dist.recv(incoming, left)
            request.wait()
            assert_close(incoming.cpu(), torch.full((3,), float(left)))
        finally:
            torch.use_deterministic_algorithms(False)

        # A receive is ordered before a collective issued after it on the same tensor: the all_reduce reads what
        # arrived, though nobody waited for the receive (on NCCL, whose receive has a stream of its own, a race).
        if rank == 0:
            dist.send(torch.full((16,), 5.0, device=device), 1)
            reduced = torch.ones(16, device=device)
        elif rank == 1:
            reduced = torch.zeros(16, device=device)
            dist.irecv(reduced, 0)
        else:
            reduced = torch.zeros(16, device=device)
        dist.all_reduce(reduced)
        assert_close(reduced.cpu(), torch.full((16,), 6.0))

        # A send is not held behind the collectives issued after it (its peer may wait for it before joining them).
        joined = torch.ones(2, device=device)
        if rank == 0:
            request = dist.isend(torch.full((4,), 7.0, device=device), 1)
            dist.all_reduce(joined)
            request.wait()
        else:
            if rank == 1:
                arrived = torch.empty(4, device=device)
                dist.recv(arrived, 0)
                assert_close(arrived.cpu(), torch.full((4,), 7.0))
            dist.all_reduce(joined)
        assert_close(joined.cpu(), torch.full((2,), float(world_size)))
        # With device_ids, barrier goes to mccl (without, a "cpu:gloo,mydev:mccl" group's goes to gloo).
        dist.barrier(device_ids=[device.index])

        # Strided tensors, which gloo cannot take, go through contiguous host copies inside the kernel.
        base = torch.arange(24, dtype=torch.float32, device=device).reshape(4, 6) + rank
        strided = base.t()
        dist.all_reduce(strided)
        expected = sum(torch.arange(24, dtype=torch.float32).reshape(4, 6) + r for r in range(world_size))
        assert_close(base.cpu(), expected)
        column = torch.zeros(4, 3, device=device)[:, 1]
        if rank == 0:
            dist.send(torch.arange(4, dtype=torch.float32, device=device).reshape(2, 2).t(), 1)
        elif rank == 1:
            dist.recv(column, 0)
            assert_close(column.cpu(), torch.tensor([0.0, 2.0, 1.0, 3.0]))

        # Object collectives and CPU tensors go to gloo.
        objects = [None] * world_size
        dist.all_gather_object(objects, {"rank": rank})
        assert objects == [{"rank": r} for r in range(world_size)], objects
        dist.barrier()
    finally:
        dist.destroy_process_group()


def stream_semantics(rank, world_size, init_file):
    """A collective waits for the kernels that produced its input; wait() orders the caller's stream after it."""
    device = init(rank, world_size, init_file)
    try:
        big = torch.randn(512, 512, device=device)
        for _ in range(3):
            side = torch.mydev.Stream()
            side.wait_stream(torch.mydev.current_stream())  # big's randn, as on CUDA
            with torch.mydev.stream(side):
                produced = (big @ big).sum().reshape(1) * 0 + rank + 1  # slow kernels before the input is ready
                work = dist.all_reduce(produced, async_op=True)
                work.wait()  # side stream now waits for the collective's copies back
                result = produced * 2
            side.synchronize()
            assert_close(result.cpu(), torch.tensor([2.0 * sum(range(1, world_size + 1))]))

        # getFuture does not block, and its value is the output list. As NCCL's, it is completed when taken, with
        # events on the comm stream: its callbacks run at once on the caller's thread, their streams ordered after
        # the collective, even one taken while the collective still waits for a peer (rank 0's here).
        tensor = torch.ones(4, device=device)
        if rank != 0:
            time.sleep(0.5)  # so that rank 0's collective cannot end before rank 0 takes its future
        work = dist.all_reduce(tensor, async_op=True)
        callback_threads = []

        def times_three(future):
            callback_threads.append(current_thread_name())
            return future.value()[0] * 3

        done = work.get_future().then(times_three)
        assert callback_threads == [current_thread_name()], callback_threads
        assert_close(done.wait().cpu(), torch.full((4,), 3.0 * world_size))
        work.wait()
        assert work.is_completed() and work.is_success()

        # A collective launched by a callback is launched where the program takes the future, on every rank, however
        # the ranks' collectives end in time (PowerSGD's hook does this); so a callback may wait for its future.
        first, nested, after = (torch.ones(4, device=device), torch.ones(2, device=device),
                                torch.full((2,), 10.0, device=device))
        if rank == 1:
            time.sleep(0.3)
        work = dist.all_reduce(first, async_op=True)
        if rank == 1:
            work.wait()
            time.sleep(0.2)
        nested_result = work.get_future().then(
            lambda future: dist.all_reduce(nested, async_op=True).get_future().wait()[0] + future.value()[0][:2])
        dist.all_reduce(after)
        assert_close(nested_result.wait().cpu(), torch.full((2,), 2.0 * world_size))
        assert_close(nested.cpu(), torch.full((2,), float(world_size)))
        assert_close(after.cpu(), torch.full((2,), 10.0 * world_size))

        # A dtype gloo cannot reduce is refused at the call, as NCCL refuses one, and the group stays usable.
        try:
            dist.all_reduce(torch.ones(2, dtype=torch.int16, device=device))
            raise AssertionError("an int16 all_reduce was accepted")
        except TypeError as error:
            assert "not supported for mccl process group: Short" in str(error), error
        try:  # gloo gathers no complex tensor (its other collectives take them as pairs of reals)
            complex_input = torch.ones(2, dtype=torch.cfloat, device=device)
            dist.gather(complex_input, [torch.empty_like(complex_input) for _ in range(world_size)] if rank == 0 else None)
            raise AssertionError("a complex gather was accepted")
        except TypeError as error:
            assert "does not gather complex tensors" in str(error), error
        usable = torch.ones(2, device=device)
        dist.all_reduce(usable)
        assert_close(usable.cpu(), torch.full((2,), float(world_size)))
        late = dist.all_reduce(torch.ones(4, device=device), async_op=True)
        late.wait()
        late_done = late.get_future().then(times_three)
        assert late_done.done()
        # wait(), not value(): it orders this stream after the callback's kernel, which ran on a stream of its own.
        assert_close(late_done.wait().cpu(), torch.full((4,), 3.0 * world_size))
        assert callback_threads[-1] == current_thread_name(), callback_threads

        # A Work nobody keeps or waits for: the comm stream still orders the caller's synchronize after it.
        dropped = torch.full((1024,), float(rank + 1), device=device)
        dist.all_reduce(dropped, async_op=True)
        torch.mydev.synchronize()
        assert_close(dropped.cpu(), torch.full((1024,), float(sum(range(1, world_size + 1)))))
        dist.barrier()

        # A collective with nothing to wait for is handed to gloo as a host task of the comm stream: no stream worker
        # wakes for it (through a kernel, each cost the worker ~70 us of CPU time), and the stream still orders the
        # kernel queued behind it (a strided tensor's collective, which gloo cannot take as it is).
        ready = torch.full((256,), float(rank + 1), device=device)
        torch.mydev.synchronize()
        before = stream_workers_cpu_ns()
        for _ in range(300):
            dist.all_reduce(ready, op=dist.ReduceOp.MAX)
        spent_ms = (stream_workers_cpu_ns() - before) / 1e6
        assert spent_ms < 5, f"stream workers ran for {spent_ms:.1f} ms during 300 ready collectives"
        dist.all_reduce(ready[::2])
        expected = torch.full((256,), float(world_size))
        expected[::2] *= world_size
        assert_close(ready.cpu(), expected)

        # The other collectives whose gloo Work completes by itself take the same path once their inputs are ready.
        mine = torch.arange(4 * world_size, dtype=torch.float32, device=device) + 100 * rank
        everyone = [torch.arange(4 * world_size, dtype=torch.float32) + 100 * r for r in range(world_size)]
        torch.mydev.synchronize()
        before = stream_workers_cpu_ns()
        for _ in range(20):
            reduced = mine.clone()
            torch.mydev.synchronize()
            dist.reduce(reduced, dst=0)
            gathered = [torch.empty_like(mine) for _ in range(world_size)] if rank == 0 else None
            dist.gather(mine, gathered, dst=0)
            scattered = torch.empty(4, device=device)
            dist.scatter(scattered, list(mine.chunk(world_size)) if rank == 0 else None, src=0)
            exchanged = torch.empty_like(mine)
            dist.all_to_all_single(exchanged, mine)
            dist.barrier()
        spent_ms = (stream_workers_cpu_ns() - before) / 1e6
        # Measured: 8.8 ms when these went through kernels; 1.0 ms as host tasks (the clones' kernels).
        assert spent_ms < 5, f"stream workers ran for {spent_ms:.1f} ms during 100 ready collectives"
        # Not a host task: the list all-to-all copies its results out in its Work's wait(), which a kernel runs.
        exchanged_list = [torch.empty(4, device=device) for _ in range(world_size)]
        dist.all_to_all(exchanged_list, list(mine.chunk(world_size)))
        if rank == 0:
            assert_close(reduced.cpu(), sum(everyone))
            assert_close(torch.stack([tensor.cpu() for tensor in gathered]), torch.stack(everyone))
        assert_close(scattered.cpu(), everyone[0].chunk(world_size)[rank])
        expected_exchange = torch.cat([everyone[r].chunk(world_size)[rank] for r in range(world_size)])
        assert_close(exchanged.cpu(), expected_exchange)
        assert_close(torch.cat([tensor.cpu() for tensor in exchanged_list]), expected_exchange)

        # Memory taken from a tensor while its collective may still run (its storage resized to nothing, as FSDP
        # frees one): the caching allocator hands it out again only once the comm stream is past the collective, so
        # a new tensor is never written by it.
        slow_input = big @ big  # a producer that the collective waits for
        freed_input = slow_input.sum().expand(1 << 16).contiguous()
        freed_address = freed_input.data_ptr()
        dist.all_reduce(freed_input, async_op=True)
        freed_input.untyped_storage().resize_(0)
        fresh = torch.zeros(1 << 16, device=device)
        torch.mydev.synchronize()
        assert fresh.data_ptr() != freed_address
        assert_close(fresh.cpu(), torch.zeros(1 << 16))

        # Under the profiler a collective gets its range on the host and its row on the device (through a kernel).
        activities = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.PrivateUse1]
        profiled = torch.ones(8, device=device)
        with torch.profiler.profile(activities=activities) as profile:
            dist.all_reduce(profiled)
            torch.mydev.synchronize()
        rows = {(event.name, event.device_type) for event in profile.events()}
        assert ("mccl:all_reduce", torch.autograd.DeviceType.CPU) in rows, rows
        assert any(name.endswith("mccl:all_reduce") and kind == torch.autograd.DeviceType.PrivateUse1
                   for name, kind in rows), rows
        assert_close(profiled.cpu(), torch.full((8,), float(world_size)))
    finally:
        dist.destroy_process_group()
    def none_of_mccl(names):
        return not any(name.startswith("mccl") for name in names)

    names = thread_names_once(none_of_mccl)
    assert none_of_mccl(names), names


def current_thread_name():
    with open(f"/proc/self/task/{threading.get_native_id()}/comm") as file:
        return file.read().strip()


def named_threads():
    """(thread id, name) of each of this process's threads; one that ends meanwhile is left out."""
    for thread in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{thread}/comm") as file:
                yield thread, file.read().strip()
        except OSError:
            pass


def stream_workers_cpu_ns():
    """CPU time the process's stream workers (threads named mydev<device> s<id>) have run, in ns."""
    total = 0
    for thread, name in named_threads():
        if name.startswith("mydev"):
            try:
                with open(f"/proc/self/task/{thread}/schedstat") as file:
                    total += int(file.read().split()[0])
            except OSError:  # a thread that ended meanwhile
                pass
    return total


def thread_names():
    return [name for _, name in named_threads()]


def thread_names_once(settled, timeout_s=5.0):
    """This process's thread names as soon as settled(names) holds, or after timeout_s. A thread that was joined can
    still be listed for a moment: pthread_join returns once the kernel clears the thread's id, a step of its exit that
    comes before its /proc entry is removed."""
    deadline = time.monotonic() + timeout_s
    while not settled(names := thread_names()) and time.monotonic() < deadline:
        time.sleep(0.01)
    return names


def default_backends(rank, world_size, init_file):
    """No backend given: mydev tensors go to mccl, CPU tensors to gloo (the patch in torch_mydev/patches.py). After
    destroy_process_group, the process has the threads it had before (mccl's comm streams are its own)."""
    torch.mydev.set_device(rank)
    (torch.ones(2, device="mydev") + 1).cpu()
    threads_before = sorted(thread_names())
    dist.init_process_group(init_method=f"file://{init_file}", rank=rank, world_size=world_size)
    try:
        group = dist.group.WORLD
        assert group._get_backend(torch.device("mydev")).name() == "mccl"
        cpu = torch.ones(2)
        dist.all_reduce(cpu)
        on_device = torch.ones(2, device="mydev")
        dist.all_reduce(on_device)
        assert_close(cpu, torch.full((2,), float(world_size)))
        assert_close(on_device.cpu(), cpu)
        # After shutdown, a collective fails instead of waiting for threads that are gone.
        backend = group._get_backend(torch.device("mydev"))
        backend.shutdown()
        try:
            backend.allreduce([on_device]).wait()
            raise AssertionError("a collective after shutdown ran")
        except RuntimeError as error:
            assert "shut down or aborted" in str(error), error
    finally:
        dist.destroy_process_group()
    del backend, group
    gc.collect()
    def as_before(names):
        return sorted(names) == threads_before

    names = thread_names_once(as_before)
    assert as_before(names), (names, threads_before)


def train_on_my_shard(model, optimizer, rank, world_size, device):
    """Four SGD steps on this rank's 8 rows of each batch of 8 * world_size (the data test_distributed's
    single-process reference trains on whole)."""
    generator = torch.Generator().manual_seed(1)
    for _ in range(4):
        inputs = torch.randn(8 * world_size, 16, generator=generator)
        targets = torch.randn(8 * world_size, 4, generator=generator)
        shard = slice(8 * rank, 8 * rank + 8)
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(model(inputs[shard].to(device)), targets[shard].to(device))
        loss.backward()
        optimizer.step()


def ddp_training(rank, world_size, init_file, result_file):
    """DDP over mccl: the model after a few steps equals single-process training on the whole batch."""
    from torch.nn.parallel import DistributedDataParallel

    device = init(rank, world_size, init_file)
    try:
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.GELU(), torch.nn.Linear(32, 4)).to(device)
        ddp = DistributedDataParallel(model, device_ids=[rank])
        optimizer = torch.optim.SGD(ddp.parameters(), lr=0.1)
        train_on_my_shard(ddp, optimizer, rank, world_size, device)
        # DDP times its iterations with mydev's timer (csrc/distributed/ReducerTimer.cpp).
        logging_data = ddp._get_ddp_logging_data()
        assert logging_data["avg_forward_compute_time"] > 0, logging_data
        assert logging_data["avg_backward_compute_time"] > 0, logging_data
        assert logging_data["avg_backward_comm_time"] > 0, logging_data
        if rank == 0:
            torch.save([p.detach().cpu() for p in model.parameters()], result_file)
        check_power_sgd_hook(rank, world_size, device)
    finally:
        dist.destroy_process_group()


def check_power_sgd_hook(rank, world_size, device):
    """PowerSGD's comm hook, over several buckets: its callbacks launch collectives and wait for their futures, which
    needs every rank to launch them in the same order (hung before mccl's futures completed when taken). The ranks
    train on different data and must end with the same parameters."""
    from torch.distributed.algorithms.ddp_comm_hooks import powerSGD_hook
    from torch.nn.parallel import DistributedDataParallel

    torch.manual_seed(0)
    model = torch.nn.Sequential(*(torch.nn.Linear(32, 32) for _ in range(4))).to(device)
    ddp = DistributedDataParallel(model, device_ids=[rank], bucket_cap_mb=0.005)
    state = powerSGD_hook.PowerSGDState(process_group=None, matrix_approximation_rank=1, start_powerSGD_iter=2)
    ddp.register_comm_hook(state, powerSGD_hook.powerSGD_hook)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=0.1)
    for step in range(4):
        optimizer.zero_grad()
        ddp(torch.full((8, 32), float(rank + step), device=device)).square().mean().backward()
        optimizer.step()
    flat = torch.cat([parameter.detach().flatten() for parameter in model.parameters()])
    everyone = [torch.empty_like(flat) for _ in range(world_size)]
    dist.all_gather(everyone, flat)
    for other in everyone[1:]:
        assert torch.equal(other.cpu(), everyone[0].cpu())


def dead_peer(rank, world_size, init_file):
    """The last rank exits without joining the collective; the others must fail within the timeout, and say so in
    <init_file>.rank<N>."""
    device = init(rank, world_size, init_file, timeout_s=5)
    if rank == world_size - 1:
        os._exit(0)
    tensor = torch.ones(4, device=device)
    messages = []
    for _ in range(2):  # the second finds the group already broken, at once
        start = time.monotonic()
        try:
            dist.all_reduce(tensor)
            messages.append("no error")
        except Exception as error:  # noqa: BLE001  (the message is what the test checks)
            messages.append(f"{type(error).__name__}: {error} [{time.monotonic() - start:.1f} s]")
    # A future taken right after the launch (as DDP takes its buckets') carries the failure too.
    future = dist.all_reduce(tensor, async_op=True).get_future()
    try:
        future.wait()
        messages.append("future: no error")
    except Exception as error:  # noqa: BLE001
        messages.append(f"future: {error}")
    with open(f"{init_file}.rank{rank}", "w") as file:
        file.write("\n".join(messages))
    os._exit(0)


def abort_during_a_receive(rank, world_size, init_file):
    """Rank 0 receives from rank 1, which does not send yet, and queues an all_reduce of the receive's tensor (which
    waits for the receive); then aborts. The
    abort must end the receive at once (the group's timeout is 60 s), and both Works fail with the abort. Rank 1 then
    sends after all, into the aborted receive's buffer, which rank 0 must survive. Rank 0 writes the abort's seconds,
    the two messages and what became of the late send to <init_file>.rank0. (torch 2.13's gloo drops a message for a
    released receive buffer; the aborted receive's buffer is kept all the same, in case a gloo does not.)"""
    device = init(rank, world_size, init_file, backend="mccl", timeout_s=60)
    aborted, sent = f"{init_file}.aborted", f"{init_file}.sent"
    if rank == 1:
        wait_for_file(aborted)
        dist.send(torch.full((4,), 7.0, device=device), dst=0)
        open(sent, "w").close()
        dist.destroy_process_group()
        return
    backend = dist.group.WORLD._get_backend(device)  # gloo's connections stay open while this lives
    received = torch.zeros(4, device=device)
    receive = dist.irecv(received, src=1)
    queued = dist.all_reduce(received, async_op=True)
    time.sleep(2)  # the receive is inside gloo by now (its stream started first), waiting for its peer
    start = time.monotonic()
    dist.distributed_c10d._abort_process_group()
    lines = [f"{time.monotonic() - start:.2f}"]
    for work in (receive, queued):
        try:
            work.wait()
            lines.append("no error")
        except Exception as error:  # noqa: BLE001  (the message is what the test checks)
            lines.append(f"{type(error).__name__}: {str(error).splitlines()[0]}")  # without c10's backtrace
    open(aborted, "w").close()
    wait_for_file(sent)
    time.sleep(0.5)  # for gloo's thread to take the late message in
    lines.append(f"late send delivered, process alive, backend {backend.name()}")
    with open(f"{init_file}.rank{rank}", "w") as file:
        file.write("\n".join(lines))


def point_to_point_beside_collectives(rank, world_size, init_file):
    """On 3 ranks, programs that finish on NCCL (whose unbatched sends and receives run on a stream per pair of ranks)
    and on gloo: a receive does not hold up the collectives issued after it, nor a receive from another peer, nor
    operations on other slices of its tensor; and a send of what a receive fills waits for it, though nobody did."""
    device = init(rank, world_size, init_file, timeout_s=30)
    try:
        # Rank 1 receives before an all_reduce that rank 0 makes before it sends.
        arrived = torch.zeros(4, device=device)
        joined = torch.full((2,), float(rank), device=device)
        if rank == 0:
            dist.all_reduce(joined)
            dist.send(torch.full((4,), 5.0, device=device), 1)
        elif rank == 1:
            receive = dist.irecv(arrived, 0)
            dist.all_reduce(joined)
            receive.wait()
            assert_close(arrived.cpu(), torch.full((4,), 5.0))
        else:
            dist.all_reduce(joined)
        assert_close(joined.cpu(), torch.full((2,), 3.0))

        # Rank 2 receives from rank 0 first, but rank 0 sends only after rank 1's message reached it, which rank 1
        # sends after its message to rank 2.
        if rank == 2:
            from_0, from_1 = torch.zeros(2, 3, device=device)  # rows of one tensor: disjoint memory waits for nothing
            receives = [dist.irecv(from_0, 0), dist.irecv(from_1, 1)]
            for receive in receives:
                receive.wait()
            assert_close(from_0.cpu(), torch.full((3,), 10.0))
            assert_close(from_1.cpu(), torch.full((3,), 11.0))
        elif rank == 1:
            dist.send(torch.full((3,), 11.0, device=device), 2)
            dist.send(torch.full((2,), 12.0, device=device), 0)
        else:
            relayed = torch.zeros(2, device=device)
            dist.recv(relayed, 1)
            assert_close(relayed.cpu(), torch.full((2,), 12.0))
            dist.send(torch.full((3,), 10.0, device=device), 2)

        # A ring exchange through one buffer: each rank sends its slice and receives its left neighbour's into
        # another slice of the same tensor, in both orders.
        right, left = (rank + 1) % world_size, (rank - 1) % world_size
        for receive_first in (False, True):
            ring = torch.zeros(world_size, 4, device=device)
            ring[rank] = rank + 1
            operations = [dist.P2POp(dist.isend, ring[rank], right), dist.P2POp(dist.irecv, ring[left], left)]
            for request in dist.batch_isend_irecv(operations[::-1] if receive_first else operations):
                request.wait()
            assert_close(ring[left].cpu(), torch.full((4,), float(left + 1)))

        # Nobody waits for the receive before the tensor it fills is sent on: the send waits for it.
        if rank == 0:
            dist.send(torch.full((6,), 1.0, device=device), 1)
        elif rank == 1:
            relayed = torch.zeros(6, device=device)
            dist.irecv(relayed, 0)
            dist.isend(relayed, 2).wait()
        else:
            relayed = torch.zeros(6, device=device)
            dist.recv(relayed, 1)
            assert_close(relayed.cpu(), torch.full((6,), 1.0))
        dist.barrier(device_ids=[device.index])
    finally:
        dist.destroy_process_group()


def wait_for_file(path, seconds=120):
    deadline = time.monotonic() + seconds
    while not os.path.exists(path):
        assert time.monotonic() < deadline, f"{path} did not appear within {seconds} s"
        time.sleep(0.05)


def fsdp2_training(rank, world_size, init_file, result_file):
    """FSDP2 (fully_shard) over mccl: parameters sharded across the ranks, gathered for each layer's compute (with
    its prefetch streams), gradients reduce-scattered; the result equals single-process training."""
    from torch.distributed.fsdp import fully_shard

    device = init(rank, world_size, init_file)
    try:
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.GELU(), torch.nn.Linear(32, 4)).to(device)
        for layer in (model[0], model[2]):
            fully_shard(layer)
        fully_shard(model)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        train_on_my_shard(model, optimizer, rank, world_size, device)
        full = [p.full_tensor().detach().cpu() for p in model.parameters()]
        if rank == 0:
            torch.save(full, result_file)
    finally:
        dist.destroy_process_group()


def dtensor_matmul(rank, world_size, init_file):
    """DeviceMesh and DTensor on mydev: a row-sharded matmul, redistribution, tensor parallelism."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import distribute_tensor, Replicate, Shard
    from torch.distributed.tensor.parallel import ColwiseParallel, parallelize_module, RowwiseParallel

    init(rank, world_size, init_file)
    try:
        mesh = init_device_mesh("mydev", (world_size,))
        torch.manual_seed(0)
        a, b = torch.randn(8, 6), torch.randn(6, 4)
        a_sharded = distribute_tensor(a.to("mydev"), mesh, [Shard(0)])
        b_replicated = distribute_tensor(b.to("mydev"), mesh, [Replicate()])
        product = a_sharded @ b_replicated
        assert product.placements == (Shard(0),), product.placements
        assert_close(product.full_tensor().cpu(), a @ b, rtol=1e-5, atol=1e-5)
        assert_close(product.redistribute(mesh, [Replicate()]).to_local().cpu(), a @ b, rtol=1e-5, atol=1e-5)
        assert_close(product.redistribute(mesh, [Shard(1)]).full_tensor().cpu(), a @ b, rtol=1e-5, atol=1e-5)

        torch.manual_seed(0)
        mlp = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 8))
        x = torch.randn(4, 8)
        reference = mlp(x)
        parallel = parallelize_module(mlp.to("mydev"), mesh, {"0": ColwiseParallel(), "2": RowwiseParallel()})
        assert parallel[0].weight.placements == (Shard(0),)
        assert_close(parallel(x.to("mydev")).cpu(), reference, rtol=1e-5, atol=1e-5)

        # DTensor's random ops: its offset-based tracker reads and sets mydev's (seed, offset) generator state, so
        # each shard draws its own part of one Philox stream, the same on every run from the same seed.
        from torch.distributed.tensor import _random

        def sharded_noise():
            torch.manual_seed(5)
            noise = torch.distributed.tensor.randn((world_size * 4, 3), device_mesh=mesh, placements=[Shard(0)])
            return noise.to_local().cpu()

        local = sharded_noise()
        assert isinstance(_random._rng_tracker, _random.OffsetBasedRNGTracker), type(_random._rng_tracker)
        assert torch.equal(sharded_noise(), local)
        gathered = [None] * world_size
        dist.all_gather_object(gathered, local)
        assert all(not torch.equal(gathered[0], other) for other in gathered[1:]), "shards drew the same numbers"
        replicated = distribute_tensor(torch.zeros(6, device="mydev"), mesh, [Replicate()])
        dropped = torch.nn.functional.dropout(replicated + 1, p=0.5).to_local().cpu()
        every_rank = [None] * world_size
        dist.all_gather_object(every_rank, dropped)
        assert all(torch.equal(every_rank[0], other) for other in every_rank), "a replicated dropout differs by rank"
    finally:
        dist.destroy_process_group()


def two_dimensional_mesh(rank, world_size, init_file):
    """A 2-D mesh: its dimensions are subgroups, each its own mccl backend."""
    from torch.distributed.device_mesh import init_device_mesh

    init(rank, world_size, init_file)
    try:
        mesh = init_device_mesh("mydev", (2, world_size // 2), mesh_dim_names=("dp", "tp"))
        tp_group = mesh.get_group("tp")
        dp_group = mesh.get_group("dp")
        tensor = torch.full((2,), float(rank), device="mydev")
        dist.all_reduce(tensor, group=tp_group)
        tp_ranks = dist.get_process_group_ranks(tp_group)
        assert_close(tensor.cpu(), torch.full((2,), float(sum(tp_ranks))))
        tensor = torch.full((2,), float(rank), device="mydev")
        dist.all_reduce(tensor, group=dp_group)
        assert_close(tensor.cpu(), torch.full((2,), float(sum(dist.get_process_group_ranks(dp_group)))))
    finally:
        dist.destroy_process_group()


def tensor_of_each_collective(rank, device):
    """Every rank's part in all_reduce(SUM) of ones(4) (all_gather for "refused"), but for one way in which the ranks
    disagree."""
    ones = torch.ones(4, device=device)
    return {
        "shape": lambda: dist.all_reduce(torch.ones(4 + 4 * rank, device=device)),
        "dtype": lambda: dist.all_reduce(ones.to(torch.int32) if rank % 2 else ones),
        "reduction": lambda: dist.all_reduce(ones, op=dist.ReduceOp.MAX if rank % 2 else dist.ReduceOp.SUM),
        "collective": lambda: dist.broadcast(ones, src=0) if rank % 2 else dist.all_reduce(ones),
        "root": lambda: dist.broadcast(ones, src=rank % 2),
        # Every rank refuses at the call (gloo has no int16), alike.
        "refused_by_all": lambda: dist.all_reduce(ones.to(torch.int16)),
        # Odd ranks refuse at the call: their input is not the size of their own output entry.
        "refused": lambda: dist.all_gather([torch.zeros(4, device=device) for _ in range(dist.get_world_size())],
                                           torch.ones(4 + 4 * (rank % 2), device=device)),
    }


def mismatched_collectives(rank, world_size, init_file, cases):
    """The ranks disagree on a collective in each of `cases` (tensor_of_each_collective's); what each rank raised
    goes to <init_file>.rank<N>, a line per case. The group must reduce correctly after them."""
    device = init(rank, world_size, init_file, timeout_s=20)
    calls = tensor_of_each_collective(rank, device)
    messages = []
    for case in cases:
        try:
            calls[case]()
            messages.append("no error")
        except (RuntimeError, TypeError, ValueError) as error:
            messages.append(str(error).replace("\n", " "))
    tensor = torch.full((3,), float(rank + 1), device=device)
    dist.all_reduce(tensor)
    assert_close(tensor.cpu(), torch.full((3,), float(sum(range(1, world_size + 1)))))
    with open(f"{init_file}.rank{rank}", "w") as file:
        file.write("\n".join(messages))
    dist.destroy_process_group()


def refused_at_the_call(rank, world_size, init_file):
    """Inputs gloo refuses only on its own thread, where the refusal would break the group, are refused at the call,
    as NCCL refuses them; the group goes on."""
    device = init(rank, world_size, init_file, timeout_s=20)
    premul_half = dist._make_nccl_premul_sum(0.5)
    refused = [
        (TypeError, "all_reduce cannot average Long tensors",
         lambda: dist.all_reduce(torch.ones(4, dtype=torch.long, device=device), op=dist.ReduceOp.AVG)),
        (TypeError, "all_reduce cannot average Bool tensors",
         lambda: dist.all_reduce(torch.ones(4, dtype=torch.bool, device=device), op=dist.ReduceOp.AVG)),
        (TypeError, "all_reduce: bitwise reductions need integer or bool tensors, got Float",
         lambda: dist.all_reduce(torch.ones(4, device=device), op=dist.ReduceOp.BAND)),
        (ValueError, "reduce supports only SUM, AVG and PREMUL_SUM of complex tensors, got ComplexFloat",
         lambda: dist.reduce(torch.ones(4, dtype=torch.complex64, device=device), 0, op=dist.ReduceOp.MAX)),
        (ValueError, "reduce_scatter_tensor supports only SUM, AVG and PREMUL_SUM of complex tensors",
         lambda: dist.reduce_scatter_tensor(torch.empty(2, dtype=torch.complex64, device=device),
                                            torch.ones(2 * world_size, dtype=torch.complex64, device=device),
                                            op=dist.ReduceOp.PRODUCT)),
        (TypeError, "reduce_scatter_tensor with PREMUL_SUM scales by a real factor: Long tensors",
         lambda: dist.reduce_scatter_tensor(torch.empty(2, dtype=torch.long, device=device),
                                            torch.ones(2 * world_size, dtype=torch.long, device=device),
                                            op=premul_half)),
        (RuntimeError, "cannot write into a tensor whose elements share memory",
         lambda: dist.all_reduce(torch.ones(1, device=device).expand(4))),
        (ValueError, "all_to_all_single's input splits [1, 1] are not one per rank (2) adding up to its 4 rows",
         lambda: dist.all_to_all_single(torch.empty(2 * world_size, device=device), torch.ones(4, device=device),
                                        output_split_sizes=[2] * world_size, input_split_sizes=[1, 1])),
    ]
    for error, message, call in refused:
        try:
            call()
        except error as raised:
            assert message in str(raised), (message, str(raised))
        else:
            raise AssertionError(f"not refused: {message}")

    tensor = torch.full((4,), float(rank + 1), device=device)
    dist.all_reduce(tensor)
    assert_close(tensor.cpu(), torch.full((4,), float(sum(range(1, world_size + 1)))))
    # A factor of one element in one dimension scales without promoting the bfloat16 inputs.
    scattered = torch.empty(2, dtype=torch.bfloat16, device=device)
    dist.reduce_scatter_tensor(scattered, torch.full((2 * world_size,), 2.0, dtype=torch.bfloat16, device=device),
                               op=dist._make_nccl_premul_sum(torch.tensor([0.5])))
    assert_close(scattered.cpu(), torch.full((2,), float(world_size), dtype=torch.bfloat16))
    dist.destroy_process_group()


def mixed_check_settings(rank, world_size, init_file):
    """Rank 0 checks collectives, the others do not: the group refuses to start, on every rank."""
    os.environ["MCCL_CHECK_COLLECTIVES"] = "1" if rank == 0 else "0"
    try:
        init(rank, world_size, init_file, backend="mccl", timeout_s=20)
        message = "no error"
    except ValueError as error:
        message = str(error)
    with open(f"{init_file}.rank{rank}", "w") as file:
        file.write(message)


def split_groups(rank, world_size, init_file):
    """With device_id=, split_group splits mccl (through gloo's split) and a 2-D DeviceMesh is built by splitting."""
    from torch.distributed.device_mesh import init_device_mesh

    torch.mydev.set_device(rank)
    dist.init_process_group("cpu:gloo,mydev:mccl", init_method=f"file://{init_file}", rank=rank,
                            world_size=world_size, device_id=torch.device("mydev", rank))
    try:
        halves = [list(range(world_size // 2)), list(range(world_size // 2, world_size))]
        group = dist.split_group(split_ranks=halves)
        mine = halves[0] if rank in halves[0] else halves[1]
        tensor = torch.full((3,), float(rank), device="mydev")
        dist.all_reduce(tensor, group=group)
        assert_close(tensor.cpu(), torch.full((3,), float(sum(mine))))
        assert group._get_backend(torch.device("mydev")).name() == "mccl"

        mesh = init_device_mesh("mydev", (2, world_size // 2), mesh_dim_names=("dp", "tp"))
        tensor = torch.full((2,), float(rank), device="mydev")
        dist.all_reduce(tensor, group=mesh.get_group("tp"))
        assert_close(tensor.cpu(), torch.full((2,), float(sum(dist.get_process_group_ranks(mesh.get_group("tp"))))))
    finally:
        dist.destroy_process_group()


def where_gloo_and_nccl_differ(rank, world_size, init_file):
    """What mccl takes from NCCL where its transport (gloo) differs, and from gloo where NCCL refuses, on a world made
    with mccl before the CPU's gloo and bound to a device (the order once made split_group crash)."""
    import torch.distributed._functional_collectives as functional

    torch.mydev.set_device(rank)
    device = torch.device("mydev", rank)
    dist.init_process_group("mydev:mccl,cpu:gloo", init_method=f"file://{init_file}", rank=rank,
                            world_size=world_size, device_id=device)
    try:
        # Sparse: reduced through the group's gloo, in place as gloo does for CPU tensors.
        sparse = torch.sparse_coo_tensor([[rank]], [float(rank + 1)], (4,)).to(device)
        dist.all_reduce(sparse)
        assert_close(sparse.to_dense().cpu(), torch.tensor([1.0, 2.0, 0.0, 0.0]))

        # Coalesced all-gathers of several dtypes, which gloo packs into one buffer of the first dtype.
        floats = torch.full((3,), float(rank + 1), device=device)
        doubles = torch.full((2,), rank + 0.5, dtype=torch.float64, device=device)
        gathered = functional.all_gather_into_tensor_coalesced([floats, doubles], dist.group.WORLD)
        assert_close(gathered[0].cpu(), torch.tensor([1.0] * 3 + [2.0] * 3))
        assert_close(gathered[1].cpu(), torch.tensor([0.5] * 2 + [1.5] * 2, dtype=torch.float64))

        # float8, which gloo has no type for, moved as bytes as NCCL does.
        eight = (torch.arange(4.0) + 4 * rank).to(torch.float8_e4m3fn).to(device)
        output = torch.empty(8, dtype=torch.float8_e4m3fn, device=device)
        dist.all_gather_into_tensor(output, eight)
        assert_close(output.cpu().float(), torch.arange(8.0))
        dist.broadcast(eight, src=1)
        assert_close(eight.cpu().float(), torch.arange(4.0) + 4)

        # A failed kernel whose output a collective reads is reported once, to the caller: by the blocking
        # collective's wait or by the next synchronization (the comm stream that waited for it holds a copy,
        # which mccl's bookkeeping of finished collectives leaves alone).
        with torch.mydev.inject_fault("aten::mul"):
            doubled = torch.ones(2, device=device) * 2
        reported = []
        for step in (lambda: dist.all_reduce(doubled), lambda: dist.all_reduce(torch.ones(2, device=device)),
                     torch.mydev.synchronize, torch.mydev.synchronize):
            try:
                step()
            except torch.AcceleratorError as error:
                reported.append(str(error))
        assert len(reported) == 1 and "aten::mul.Tensor' failed" in reported[0], reported

        # A coalescing block bound to the device, as NCCL's (mccl had no startCoalescing).
        first = torch.full((2,), float(rank), device=device)
        second = torch.full((3,), float(rank + 1), device=device)
        with dist._coalescing_manager(device=device, async_ops=True) as coalesced:
            dist.all_reduce(first)
            dist.all_reduce(second)
        coalesced.wait()
        assert_close(first.cpu(), torch.full((2,), 1.0))
        assert_close(second.cpu(), torch.full((3,), 3.0))

        # reduce leaves the other ranks' tensors as they were (gloo reduces in every rank's buffer).
        tensor = torch.full((3,), float(rank + 1), device=device)
        dist.reduce(tensor, dst=1)
        assert_close(tensor.cpu(), torch.full((3,), 3.0 if rank == 1 else 1.0))

        whole = dist.split_group(split_ranks=[list(range(world_size))])
        on_device = torch.full((2,), float(rank), device=device)
        on_host = torch.full((2,), float(rank))
        dist.all_reduce(on_device, group=whole)
        dist.all_reduce(on_host, group=whole)
        assert_close(on_device.cpu(), torch.full((2,), 1.0))
        assert_close(on_host, torch.full((2,), 1.0))

        # A group this rank is not in: torch asks NCCL's split of every parent rank.
        others = dist.new_group([1])
        if rank == 1:
            ones = torch.ones(2, device=device)
            dist.all_reduce(ones, group=others)
            assert_close(ones.cpu(), torch.ones(2))
        else:
            assert others == dist.GroupMember.NON_GROUP_MEMBER
    finally:
        dist.destroy_process_group()
