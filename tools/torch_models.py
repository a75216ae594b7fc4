"""The PyTorch twins of webgrad's models: the same parameter names and the same math, so that a
webgrad checkpoint loads with `load_state_dict` (after dropping its "optimizer." entries) and
golden values can be computed here and compared in tests/fidelity.rs."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class MLP(nn.Module):
    def __init__(self, inputs, outputs, depth, width, activation):
        super().__init__()
        sizes = [inputs] + [width] * depth + [outputs]
        self.layers = nn.ModuleList(nn.Linear(a, b) for a, b in zip(sizes, sizes[1:]))
        self.activation = activation

    def act(self, x):
        if self.activation == "gelu":
            return F.gelu(x, approximate="tanh")
        return getattr(torch, self.activation)(x)

    def forward(self, x):
        x = x.reshape(x.shape[0], -1)
        for i, layer in enumerate(self.layers):
            x = layer(x)
            if i + 1 < len(self.layers):
                x = self.act(x)
        return x


class CNN(nn.Module):
    """conv{i}: 3x3, padding 1, each followed by ReLU and 2x2 max-pooling; then fc1, ReLU, fc2."""

    def __init__(self, channels, hidden, classes, image):
        super().__init__()
        inputs = 1
        for i, c in enumerate(channels):
            setattr(self, f"conv{i + 1}", nn.Conv2d(inputs, c, 3, padding=1))
            inputs = c
        self.stages = len(channels)
        side = image >> len(channels)
        self.fc1 = nn.Linear(inputs * side * side, hidden)
        self.fc2 = nn.Linear(hidden, classes)

    def forward(self, x):
        side = int(round((x.numel() / x.shape[0]) ** 0.5))
        x = x.reshape(x.shape[0], 1, side, side)
        for i in range(self.stages):
            x = F.max_pool2d(F.relu(getattr(self, f"conv{i + 1}")(x)), 2)
        return self.fc2(F.relu(self.fc1(x.reshape(x.shape[0], -1))))


class Attention(nn.Module):
    def __init__(self, width, heads):
        super().__init__()
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)
        self.heads = heads

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(x).split(c, dim=2)
        split = lambda z: z.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        y = F.scaled_dot_product_attention(split(q), split(k), split(v), is_causal=True)
        return self.proj(y.transpose(1, 2).reshape(b, t, c))


class Feedforward(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.fc = nn.Linear(width, 4 * width)
        self.proj = nn.Linear(4 * width, width)

    def forward(self, x):
        return self.proj(F.gelu(self.fc(x), approximate="tanh"))


class Block(nn.Module):
    def __init__(self, width, heads, dropout=0.0):
        super().__init__()
        self.ln1 = nn.LayerNorm(width)
        self.attn = Attention(width, heads)
        self.ln2 = nn.LayerNorm(width)
        self.mlp = Feedforward(width)
        self.drop = nn.Dropout(dropout)

    def forward(self, x):
        x = x + self.drop(self.attn(self.ln1(x)))
        return x + self.drop(self.mlp(self.ln2(x)))


class GPT(nn.Module):
    """Learned positions, pre-LayerNorm blocks, output tied to the token embedding; dropout
    after the embeddings and on each block's two outputs into the residual stream."""

    def __init__(self, vocab, context, layers, heads, width, dropout=0.0):
        super().__init__()
        self.tok_emb = nn.Embedding(vocab, width)
        self.pos_emb = nn.Embedding(context, width)
        self.drop = nn.Dropout(dropout)
        self.blocks = nn.ModuleList(Block(width, heads, dropout) for _ in range(layers))
        self.ln_f = nn.LayerNorm(width)

    def forward(self, tokens):
        b, t = tokens.shape
        x = self.drop(self.tok_emb(tokens) + self.pos_emb(torch.arange(t, device=tokens.device)))
        for block in self.blocks:
            x = block(x)
        return (self.ln_f(x) @ self.tok_emb.weight.T).reshape(b * t, -1)


def from_config(model):
    """The torch module for a webgrad ModelConfig (as in a checkpoint's "config" metadata)."""
    (kind, c), = model.items()
    if kind == "Mlp":
        return MLP(c["inputs"], c["outputs"], c["depth"], c["width"], c["activation"])
    if kind == "Cnn":
        return CNN(c["channels"], c["hidden"], c["classes"], c["image"])
    return GPT(c["vocab"], c["context"], c["layers"], c["heads"], c["width"], c.get("dropout", 0.0))
