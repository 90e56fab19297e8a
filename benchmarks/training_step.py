"""A transformer training step: forward, backward and an AdamW step of a small
GPT-style language model. Per step it mixes a few large matmuls with hundreds
of small operators (layer norms, biases, the optimizer's per-parameter
updates), so it shows what the per-operator cost amounts to in real training."""
import torch
import torch.nn.functional as F
from torch import nn

from case import Case

TARGET = 0.85
VOCAB_SIZE = 1024
SEQ_LEN = 128
D_MODEL = 256
HEADS = 4
BLOCKS = 4
BATCH_SIZE = 8


class Block(nn.Module):
    """Pre-norm transformer block: causal self-attention, then a GELU MLP."""

    def __init__(self):
        super().__init__()
        self.attention_norm = nn.LayerNorm(D_MODEL)
        self.qkv = nn.Linear(D_MODEL, 3 * D_MODEL)
        self.attention_out = nn.Linear(D_MODEL, D_MODEL)
        self.mlp_norm = nn.LayerNorm(D_MODEL)
        self.mlp = nn.Sequential(nn.Linear(D_MODEL, 4 * D_MODEL), nn.GELU(), nn.Linear(4 * D_MODEL, D_MODEL))

    def forward(self, x):
        batch, seq_len, _ = x.shape
        q, k, v = self.qkv(self.attention_norm(x)).split(D_MODEL, dim=-1)
        q, k, v = (t.view(batch, seq_len, HEADS, D_MODEL // HEADS).transpose(1, 2) for t in (q, k, v))
        attended = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.attention_out(attended.transpose(1, 2).reshape(batch, seq_len, D_MODEL))
        return x + self.mlp(self.mlp_norm(x))


class GPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.token_embedding = nn.Embedding(VOCAB_SIZE, D_MODEL)
        self.position_embedding = nn.Embedding(SEQ_LEN, D_MODEL)
        self.blocks = nn.Sequential(*(Block() for _ in range(BLOCKS)))
        self.final_norm = nn.LayerNorm(D_MODEL)
        self.head = nn.Linear(D_MODEL, VOCAB_SIZE, bias=False)

    def forward(self, tokens):
        positions = torch.arange(tokens.shape[1], device=tokens.device)
        x = self.token_embedding(tokens) + self.position_embedding(positions)
        return self.head(self.final_norm(self.blocks(x)))


def gpt_training_step(device):
    torch.manual_seed(0)
    model = GPT().to(device)
    # Each device's default AdamW implementation, as a user gets it: a
    # per-parameter loop on the CPU, the foreach one on mydev (as on CUDA).
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
    tokens = torch.randint(0, VOCAB_SIZE, (BATCH_SIZE, SEQ_LEN + 1), generator=torch.Generator().manual_seed(0))
    inputs, targets = tokens[:, :-1].to(device), tokens[:, 1:].to(device)

    def run():
        optimizer.zero_grad()
        logits = model(inputs)
        loss = F.cross_entropy(logits.reshape(-1, VOCAB_SIZE), targets.reshape(-1))
        loss.backward()
        optimizer.step()
        return loss

    return run


CASES = [
    Case(
        f"GPT {BLOCKS} blocks d{D_MODEL}, {BATCH_SIZE}x{SEQ_LEN} tokens: fwd+bwd+AdamW",
        "training step",
        TARGET,
        gpt_training_step,
    ),
]
