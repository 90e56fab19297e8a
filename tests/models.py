"""Small models written in plain PyTorch, each with the loss it trains on and a
batch of inputs, for the mydev-against-reference parity tests.

The sizes are small so that a few training steps run in well under a second on
mydev, where every operator still pays the device machinery's per-call cost.
Nothing in them draws random numbers after construction (dropout is 0), so two
copies of a model fed the same batch must compute the same thing on any device.
"""
import torch
import torch.nn.functional as F
from torch import nn


class TinyLanguageModel(nn.Module):
    """A GPT-shaped decoder: token and learned position embeddings, pre-norm
    transformer blocks under a causal mask, a final LayerNorm and a vocabulary head."""

    def __init__(self, vocab_size=64, max_seq_len=16, d_model=32, heads=4, blocks=2):
        super().__init__()
        self.token_embedding = nn.Embedding(vocab_size, d_model)
        self.position_embedding = nn.Embedding(max_seq_len, d_model)
        # A ModuleList rather than nn.TransformerEncoder: the encoder deep-copies
        # one layer, so its blocks would all start from the same weights.
        self.blocks = nn.ModuleList(
            nn.TransformerEncoderLayer(
                d_model,
                heads,
                dim_feedforward=4 * d_model,
                dropout=0.0,
                activation="gelu",
                batch_first=True,
                norm_first=True,
            )
            for _ in range(blocks)
        )
        self.final_norm = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab_size)

    def forward(self, tokens):
        seq_len = tokens.shape[1]
        positions = torch.arange(seq_len, device=tokens.device)
        hidden = self.token_embedding(tokens) + self.position_embedding(positions)
        causal_mask = nn.Transformer.generate_square_subsequent_mask(seq_len, device=tokens.device)
        for block in self.blocks:
            hidden = block(hidden, src_mask=causal_mask, is_causal=True)
        return self.head(self.final_norm(hidden))

    @staticmethod
    def loss(logits, tokens):
        """Next-token prediction: position t predicts token t + 1."""
        return F.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]), tokens[:, 1:].reshape(-1))

    @staticmethod
    def batch(generator, batch_size=4, seq_len=16, vocab_size=64):
        tokens = torch.randint(0, vocab_size, (batch_size, seq_len), generator=generator)
        return tokens, tokens


class SmallConvNet(nn.Module):
    """An image classifier: conv, batch norm, ReLU, max pool, conv, global average pool, linear."""

    def __init__(self, in_channels=3, classes=10):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(in_channels, 8, 3, padding=1),
            nn.BatchNorm2d(8),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(8, 16, 3, padding=1),
            nn.ReLU(),
            nn.AdaptiveAvgPool2d(1),
        )
        self.classifier = nn.Linear(16, classes)

    def forward(self, images):
        return self.classifier(self.features(images).flatten(1))

    @staticmethod
    def loss(logits, labels):
        return F.cross_entropy(logits, labels)

    @staticmethod
    def batch(generator, batch_size=4, image_size=16, classes=10):
        images = torch.randn(batch_size, 3, image_size, image_size, generator=generator)
        labels = torch.randint(0, classes, (batch_size,), generator=generator)
        return images, labels


class MultiLayerPerceptron(nn.Module):
    """A classifier of feature vectors: three linear layers with GELU between them."""

    def __init__(self, features=20, hidden=64, classes=5):
        super().__init__()
        self.layers = nn.Sequential(
            nn.Linear(features, hidden),
            nn.GELU(),
            nn.Linear(hidden, hidden),
            nn.GELU(),
            nn.Linear(hidden, classes),
        )

    def forward(self, features):
        return self.layers(features)

    @staticmethod
    def loss(logits, labels):
        return F.cross_entropy(logits, labels)

    @staticmethod
    def batch(generator, batch_size=8, features=20, classes=5):
        inputs = torch.randn(batch_size, features, generator=generator)
        labels = torch.randint(0, classes, (batch_size,), generator=generator)
        return inputs, labels


class TinyBertEncoder(nn.Module):
    """A BERT-shaped encoder: token, position and segment embeddings with a LayerNorm, post-norm bidirectional
    transformer blocks that ignore padding (token 0) through a key padding mask, and a masked-token head."""

    def __init__(self, vocab_size=64, max_seq_len=16, d_model=32, heads=4, blocks=2):
        super().__init__()
        self.token_embedding = nn.Embedding(vocab_size, d_model, padding_idx=0)
        self.position_embedding = nn.Embedding(max_seq_len, d_model)
        self.segment_embedding = nn.Embedding(2, d_model)
        self.embedding_norm = nn.LayerNorm(d_model)
        self.blocks = nn.ModuleList(
            nn.TransformerEncoderLayer(
                d_model, heads, dim_feedforward=4 * d_model, dropout=0.0, activation="gelu", batch_first=True
            )
            for _ in range(blocks)
        )
        self.head = nn.Sequential(nn.Linear(d_model, d_model), nn.GELU(), nn.LayerNorm(d_model), nn.Linear(d_model, vocab_size))

    def forward(self, tokens):
        seq_len = tokens.shape[1]
        positions = torch.arange(seq_len, device=tokens.device)
        segments = (positions >= seq_len // 2).long()
        hidden = self.token_embedding(tokens) + self.position_embedding(positions) + self.segment_embedding(segments)
        hidden = self.embedding_norm(hidden)
        padding = tokens == 0
        for block in self.blocks:
            hidden = block(hidden, src_key_padding_mask=padding)
        return self.head(hidden)

    @staticmethod
    def loss(logits, targets):
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))

    @staticmethod
    def batch(generator, batch_size=4, seq_len=16, vocab_size=64):
        tokens = torch.randint(1, vocab_size, (batch_size, seq_len), generator=generator)
        tokens[:, -3:] = 0
        return tokens, tokens


class TinyVisionTransformer(nn.Module):
    """A ViT-shaped image classifier: patches embedded by a strided convolution, a class token and learned
    positions, pre-norm transformer blocks, and a head on the class token."""

    def __init__(self, image_size=16, patch_size=4, channels=3, d_model=32, heads=4, blocks=2, classes=10):
        super().__init__()
        patches = (image_size // patch_size) ** 2
        self.patch_embedding = nn.Conv2d(channels, d_model, patch_size, stride=patch_size)
        self.class_token = nn.Parameter(torch.randn(1, 1, d_model) * 0.02)
        self.position_embedding = nn.Parameter(torch.randn(1, patches + 1, d_model) * 0.02)
        self.blocks = nn.ModuleList(
            nn.TransformerEncoderLayer(
                d_model, heads, dim_feedforward=2 * d_model, dropout=0.0, activation="gelu", batch_first=True,
                norm_first=True,
            )
            for _ in range(blocks)
        )
        self.final_norm = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, classes)

    def forward(self, images):
        patches = self.patch_embedding(images).flatten(2).transpose(1, 2)
        hidden = torch.cat([self.class_token.expand(images.shape[0], -1, -1), patches], dim=1)
        hidden = hidden + self.position_embedding
        for block in self.blocks:
            hidden = block(hidden)
        return self.head(self.final_norm(hidden[:, 0]))

    @staticmethod
    def loss(logits, labels):
        return F.cross_entropy(logits, labels)

    @staticmethod
    def batch(generator, batch_size=4, image_size=16, classes=10):
        images = torch.randn(batch_size, 3, image_size, image_size, generator=generator)
        labels = torch.randint(0, classes, (batch_size,), generator=generator)
        return images, labels


MODELS = {
    "transformer": TinyLanguageModel,
    "convnet": SmallConvNet,
    "mlp": MultiLayerPerceptron,
}
