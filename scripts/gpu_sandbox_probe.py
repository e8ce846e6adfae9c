"""Does a sandboxed grading kernel see the GPU? Prints the sandbox and cgroup status, then what torch sees in one kernel.

Run from the repository root on a GPU machine (scripts/gpu-check runs it): exit status 0 when the kernel
ran a CUDA tensor, 1 otherwise."""
import tempfile, pathlib
from grader.engine.isolation.kernel import Kernel
from grader.engine.isolation.sandbox import Limits, sandbox_status
from grader.engine.isolation.cgroups import cgroup_support, cgroup_gaps
print("sandbox:", sandbox_status()); print("cgroup:", cgroup_support(), cgroup_gaps())
with Kernel(pathlib.Path(tempfile.mkdtemp()), Limits(cell_timeout_s=120), sandboxed=True) as k:
    print("group:", k.group and k.group.controllers)
    r = k.run("import torch; x = torch.ones(3, device='cuda' if torch.cuda.is_available() else 'cpu'); print(torch.cuda.is_available(), torch.cuda.device_count(), (x * 2).sum().item(), x.device)")
    print("kernel:", r.status, r.error, [o.get("text") for o in r.outputs])
raise SystemExit(0 if r.status == "ok" and "cuda:0" in "".join(o.get("text", "") for o in r.outputs) else 1)
