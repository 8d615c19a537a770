"""bench/workloads.py -- the real-program workloads of bench/realworld.py.

Each workload is a function `make(scope)` returning (step, sync): `step()`
runs one unit of work, `sync()` waits for the GPU, and `scope(name)` is the
profiler's scope context manager (a no-op for variants without scopes), so
that the same program runs under every profiler.

  train   a torch.compile'd GPT training step: Inductor's Triton kernels,
          cuBLAS matmuls, and autograd's own thread for the backward pass
  graph   torch.compile(mode="reduce-overhead") GPT inference: CUDA graphs
  eager   an eager PyTorch GPT training loop with forward/backward/optimizer
          scopes (what a person instrumenting a training script writes)
  launch  two tiny kernels per step (one Triton, one PyTorch): launch-bound
  cpu     pure-Python work inside scopes, no GPU and no PyTorch: checks the
          harness end to end on any machine (tests/python/test_realworld.py)

Sizes are small on purpose: these programs are CPU-bound, which is where a
kernel profiler's per-launch cost shows.
"""
import os

VOCAB, DIM, HEADS, LAYERS, SEQ, BATCH = 1024, 256, 4, 4, 128, 8


def _gpt(device="cuda"):
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(DIM), nn.LayerNorm(DIM)
            self.qkv = nn.Linear(DIM, 3 * DIM)
            self.proj = nn.Linear(DIM, DIM)
            self.fc1, self.fc2 = nn.Linear(DIM, 4 * DIM), nn.Linear(4 * DIM, DIM)

        def forward(self, x):
            b, t, c = x.shape
            q, k, v = self.qkv(self.ln1(x)).split(DIM, dim=2)
            q, k, v = (y.view(b, t, HEADS, c // HEADS).transpose(1, 2) for y in (q, k, v))
            a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.proj(a.transpose(1, 2).reshape(b, t, c))
            return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(VOCAB, DIM)
            self.pos = nn.Parameter(torch.zeros(1, SEQ, DIM))
            self.blocks = nn.Sequential(*[Block() for _ in range(LAYERS)])
            self.head = nn.Linear(DIM, VOCAB)

        def forward(self, idx):
            return self.head(self.blocks(self.emb(idx) + self.pos))

    torch.manual_seed(0)
    return GPT().to(device)


def _batch():
    import torch
    g = torch.Generator(device="cuda").manual_seed(1)
    x = torch.randint(0, VOCAB, (BATCH, SEQ), device="cuda", generator=g)
    return x, torch.roll(x, -1, dims=1)


def _train_step(model, opt, x, y, scope):
    import torch.nn.functional as F
    with scope("forward"):
        loss = F.cross_entropy(model(x).view(-1, VOCAB), y.view(-1))
    with scope("backward"):
        loss.backward()
    with scope("optimizer"):
        opt.step()
        opt.zero_grad(set_to_none=True)


def make_train(scope):
    import torch
    model = _gpt()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    cmodel = torch.compile(model)
    x, y = _batch()
    return (lambda: _train_step(cmodel, opt, x, y, scope)), torch.cuda.synchronize


def make_eager(scope):
    import torch
    model = _gpt()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    x, y = _batch()
    return (lambda: _train_step(model, opt, x, y, scope)), torch.cuda.synchronize


def make_graph(scope):
    import torch
    model = _gpt().eval()
    cmodel = torch.compile(model, mode="reduce-overhead")
    x, _ = _batch()

    def step():
        with torch.no_grad(), scope("infer"):
            cmodel(x)

    return step, torch.cuda.synchronize


def make_launch(scope):
    """The launch-bound loop of bench/cupti_overhead.py, shared with it."""
    from cupti_overhead import make_workload
    return make_workload()


def make_cpu(scope):
    data = list(range(64))

    def step():
        with scope("step"):
            for _ in range(4):
                with scope("inner"):
                    sum(x * x for x in data)

    return step, (lambda: None)


WORKLOADS = {"train": make_train, "graph": make_graph, "eager": make_eager,
             "launch": make_launch, "cpu": make_cpu}
# Steps per timed loop (bench/realworld.py runs two loops per block, one
# unprofiled, one profiled): about half a second each on an H100 host, so a
# block stays short enough that slow drift is the same on both sides.
# `launch` keeps 40,000 launches per profiled loop: the finalize target is
# stated for that many.
STEPS = {"train": 100, "graph": 600, "eager": 100, "launch": 20000, "cpu": 2000}
# Kernels per step where the workload fixes it (profiles give the others).
KERNELS_PER_STEP = {"launch": 2, "cpu": 0}
GPU_FREE = {"cpu"}  # workloads that start profilers without a GPU backend


def configure_caches(root):
    """One Inductor/Triton cache for every child process, so that only the
    first process of a workload compiles; the rest load from disk. Keep
    `root` outside the output folder: the caches are tens of megabytes."""
    os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", os.path.join(root, "inductor"))
    os.environ.setdefault("TRITON_CACHE_DIR", os.path.join(root, "triton"))
