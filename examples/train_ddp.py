"""Data-parallel training on mydev devices with torchrun: one process per device, DistributedDataParallel over the
"mccl" backend. Written as for CUDA with NCCL; only the device name differs.

    .venv/bin/torchrun --standalone --nproc-per-node=2 examples/train_ddp.py   # one host, mydev:0 and mydev:1
    MYDEV_DEVICE_COUNT=4 .venv/bin/torchrun --standalone --nproc-per-node=4 examples/train_ddp.py

Several hosts (run on each; GLOO_SOCKET_IFNAME names the interface mccl's gloo transport uses):

    GLOO_SOCKET_IFNAME=eth0 torchrun --nnodes=2 --nproc-per-node=2 --rdzv-backend=c10d \\
        --rdzv-endpoint=<first host>:29500 --rdzv-id=mydev-job examples/train_ddp.py
"""
import os

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.nn.parallel import DistributedDataParallel

VOCAB, SEQ, D_MODEL = 64, 16, 32


class TinyTransformer(nn.Module):
    def __init__(self):
        super().__init__()
        self.embedding = nn.Embedding(VOCAB, D_MODEL)
        self.block = nn.TransformerEncoderLayer(D_MODEL, 4, 4 * D_MODEL, dropout=0.0, batch_first=True)
        self.head = nn.Linear(D_MODEL, VOCAB)

    def forward(self, tokens):
        causal = nn.Transformer.generate_square_subsequent_mask(tokens.shape[1], device=tokens.device)
        return self.head(self.block(self.embedding(tokens), src_mask=causal, is_causal=True))


def main(steps=20, batch_per_rank=8):
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.mydev.set_device(local_rank)
    dist.init_process_group()  # mccl for mydev tensors, gloo for CPU tensors and objects
    rank, world = dist.get_rank(), dist.get_world_size()
    device = torch.device("mydev", local_rank)

    torch.manual_seed(0)  # the same initial weights everywhere; DDP also broadcasts rank 0's
    model = DistributedDataParallel(TinyTransformer().to(device), device_ids=[local_rank])
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    data = torch.Generator().manual_seed(1234 + rank)  # each rank its own shard of the data
    for step in range(steps):
        tokens = torch.randint(0, VOCAB, (batch_per_rank, SEQ + 1), generator=data).to(device)
        logits = model(tokens[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, VOCAB), tokens[:, 1:].reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        averaged = loss.detach().clone()
        dist.all_reduce(averaged, op=dist.ReduceOp.AVG)
        if rank == 0 and (step % 5 == 0 or step == steps - 1):
            print(f"step {step:3d}  loss averaged over {world} ranks: {averaged.item():.4f}", flush=True)

    # Every rank ends with the same weights: DDP averaged the gradients.
    first = next(model.parameters()).detach()
    copies = [torch.empty_like(first) for _ in range(world)]
    dist.all_gather(copies, first)
    in_sync = all(torch.equal(copies[0].cpu(), other.cpu()) for other in copies)
    if rank == 0:
        print(f"{world} ranks on {[f'mydev:{r}' for r in range(world)]}; weights identical on every rank: {in_sync}")
    dist.destroy_process_group()
    if not in_sync:
        raise SystemExit("ranks diverged")


if __name__ == "__main__":
    main()
