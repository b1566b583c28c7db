"""One rank of test_hook_abi.py: the dlcp backend and the DDP communication hook with any
dlcp._torch made unimportable (earlier releases' libtorch extension). Sums over the backend,
trains over gloo, then with the hook (budget 0 and lossy), and saves the parameters and reports.

    hook_worker.py <output directory>
"""

import json
import os
import sys

sys.modules["dlcp._torch"] = None  # any import of the extension now raises ImportError

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
from torch.nn.parallel import DistributedDataParallel as DDP  # noqa: E402

import dlcp.torch  # noqa: E402
from ddp_worker import LOSSY, flat_parameters, make_model, train, train_with_hook  # noqa: E402


def main():
    output = sys.argv[1]
    rank = int(os.environ["RANK"])
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    report = {}
    try:
        values = torch.full((4,), float(rank + 1))
        dist.all_reduce(values, group=dist.new_group(backend="dlcp"))
        report["backend_sum"] = values[0].item()
        report["backend_error"] = ""
    except Exception as error:  # noqa: BLE001 - the message is what the test checks
        report["backend_error"] = str(error)
    parameters = {"gloo": train(DDP(make_model()), rank)}

    _, state, parameters["hook"] = train_with_hook(rank)
    report["hook"] = state.statistics()

    model, state, parameters["hook_lossy"] = train_with_hook(
        rank, loss_budget=0.1, broadcast_loss_budget=0.05, resync_every=4,
        options=dlcp.torch.Options(drop_seed=rank + 31, **LOSSY),
    )
    state.resync()
    parameters["resynced"] = flat_parameters(model)
    report["hook_lossy"] = state.statistics()
    state.close()
    report["extension_loaded"] = sys.modules.get("dlcp._torch") is not None

    torch.save(parameters, os.path.join(output, f"parameters{rank}.pt"))
    with open(os.path.join(output, f"report{rank}.json"), "w") as file:
        json.dump(report, file)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
