"""A Triton kernel under cproton PC sampling with hook="triton".
usage: triton_pcs.py OUT_NAME MODE WHEN   (MODE: a cproton mode string;
WHEN: cold = compiled and loaded under the session, warm = before start).
The dependent-load loop is on line 16, the FMA loop on line 18."""
import sys
import torch, triton, triton.language as tl
import cproton as proton


@triton.jit
def chase_kernel(x, y, n, ITERS: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    idx = offs
    acc = offs.to(tl.float32)
    for _ in range(ITERS):
        idx = tl.load(x + idx) % n
    for _ in range(ITERS):
        acc = acc * 1.0001 + 0.5
    tl.store(y + offs, acc + idx.to(tl.float32))


def main(name, mode, when):
    import logging, os
    debug = os.environ.get("CPROTON_LOG") == "debug"
    logging.basicConfig(level=logging.DEBUG if debug else logging.INFO)
    n = 1 << 20
    x = torch.randint(0, n, (n,), device="cuda", dtype=torch.int32)
    y = torch.empty(n, device="cuda")
    run = lambda: chase_kernel[(n // 256,)](x, y, n, ITERS=512, BLOCK=256)
    if when == "warm":
        run(); torch.cuda.synchronize()
    proton.start(name, hook="triton", backend="cupti", mode=mode)
    with proton.scope("test"):
        for _ in range(3):
            run()
    torch.cuda.synchronize()
    proton.finalize()


main(*sys.argv[1:])
