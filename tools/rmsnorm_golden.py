"""Golden values for webgrad's RMSNorm (tests/ops_nn.rs, rmsnorm_matches_pytorch): torch.nn.RMSNorm
in float64 on inputs given by formulas, so the Rust test can rebuild them exactly.
x[i] = 2 sin(0.37 i) + 0.3 over [3, 8] row by row, weight[j] = 0.5 + 0.1 j, eps 1e-5, and the
loss sum(y * c) with c[i] = cos(0.11 i). Prints y, dx and dweight as Rust arrays."""
import math, torch

rows, cols = 3, 8
x = torch.tensor([2 * math.sin(0.37 * i) + 0.3 for i in range(rows * cols)], dtype=torch.float64)
x = x.reshape(rows, cols).requires_grad_()
norm = torch.nn.RMSNorm(cols, eps=1e-5, dtype=torch.float64)
with torch.no_grad():
    norm.weight.copy_(torch.tensor([0.5 + 0.1 * j for j in range(cols)], dtype=torch.float64))
y = norm(x)
c = torch.tensor([math.cos(0.11 * i) for i in range(rows * cols)], dtype=torch.float64).reshape(rows, cols)
(y * c).sum().backward()
for name, t in [("Y", y), ("DX", x.grad), ("DW", norm.weight.grad)]:
    values = ", ".join(f"{v:.9}" for v in t.detach().flatten().tolist())
    print(f"const {name}: [f64; {t.numel()}] = [{values}];")
print("torch", torch.__version__)
