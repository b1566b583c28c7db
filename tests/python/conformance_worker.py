"""One rank of the backend conformance run (test_conformance.py): every collective of the dlcp
backend against the gloo backend on the same inputs, writing its failures to report<rank>.json."""

import json
import os
import sys

import torch
import torch.distributed as dist

import dlcp.torch  # noqa: F401  (registers the backend)

R = dist.ReduceOp
NAMES = {R.SUM: "SUM", R.AVG: "AVG", R.PRODUCT: "PRODUCT", R.MIN: "MIN", R.MAX: "MAX",
         R.BAND: "BAND", R.BOR: "BOR", R.BXOR: "BXOR"}
FLOATS = (torch.float32, torch.float64, torch.float16)
INTEGERS = (torch.int32, torch.int64, torch.int8, torch.uint8)
SIZES = (0, 1, 7, 1000, 100_003)
GLOO_REFUSES = (torch.bool, torch.complex64, torch.int16, torch.bfloat16)  # dtypes torch 1.13's gloo does not move
TORCH2 = int(torch.__version__.split(".")[0]) >= 2


def make(shape, dtype, seed, small=False):
    generator = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=generator).bool()
    if dtype.is_complex:
        return torch.randn(shape, generator=generator, dtype=dtype)
    if dtype.is_floating_point:
        values = torch.rand(shape, generator=generator, dtype=torch.float64)
        values = 0.5 + values if small else values * 8 - 4
        return values.to(dtype)
    high = 3 if small else 100
    return torch.randint(0, high, shape, generator=generator).to(dtype)


class Checker:
    def __init__(self, rank, world):
        self.rank, self.world = rank, world
        self.failures = []
        self.checks = 0

    def same(self, name, got, want, exact):
        self.checks += 1
        if got.dtype != want.dtype or got.shape != want.shape:
            self.failures.append(f"{name}: {got.dtype}{tuple(got.shape)} vs {want.dtype}{tuple(want.shape)}")
            return
        if exact:
            ok = torch.equal(got, want)
        else:
            tolerance = 2e-2 if want.dtype == torch.float16 else 1e-4
            ok = torch.allclose(got.double() if not got.is_complex() else got,
                                want.double() if not want.is_complex() else want,
                                rtol=tolerance, atol=tolerance)
        if not ok:
            self.failures.append(f"{name}: differs from gloo")
            print(self.failures[-1], file=sys.stderr, flush=True)

    def run(self, name, body):
        if os.environ.get("TRACE"):
            print("case", name, file=sys.stderr, flush=True)
        try:
            body()
        except Exception as error:  # recorded, so the other cases still run on every rank
            self.failures.append(f"{name}: raised {type(error).__name__}: {error}")
            print(self.failures[-1], file=sys.stderr, flush=True)


def exact_op(op, dtype):
    return not dtype.is_floating_point and not dtype.is_complex or op in (R.MIN, R.MAX)


def gloo_reduces(op, dtype):
    """Whether torch 1.13's gloo all-reduces `dtype` with `op` (a failed gloo call may leave its
    pairs out of step, so the unsupported ones are not even tried)."""
    if dtype in (torch.bool, torch.bfloat16) or op == R.AVG:
        return False
    return op not in (R.BAND, R.BOR, R.BXOR) or not (dtype.is_floating_point or dtype.is_complex)


def reference_reduce(parts, op):
    """The reduction of gathered tensors, in rank order (what gloo does not offer itself)."""
    result = parts[0].clone()
    for part in parts[1:]:
        if op in (R.SUM, R.AVG):
            result += part
        elif op == R.PRODUCT:
            result *= part
        elif op == R.MIN:
            result = torch.minimum(result, part)
        elif op == R.MAX:
            result = torch.maximum(result, part)
        elif op == R.BAND:
            result &= part
        elif op == R.BOR:
            result |= part
        else:
            result ^= part
    return result / len(parts) if op == R.AVG else result


def gathered(tensor, gloo, world):
    parts = [torch.empty_like(tensor) for _ in range(world)]
    if tensor.numel() == 0:  # gloo's all_gather dies of SIGFPE on empty tensors
        return parts
    if tensor.dtype in GLOO_REFUSES:  # carried as bytes
        return [part.view(tensor.dtype) for part in gathered(tensor.view(torch.uint8), gloo, world)]
    dist.all_gather(parts, tensor, group=gloo)
    return parts


def reductions(c, gloo, lossless, world, rank):
    cases = [(op, dtype) for op in (R.SUM, R.PRODUCT, R.MIN, R.MAX) for dtype in FLOATS + INTEGERS]
    cases += [(op, dtype) for op in (R.BAND, R.BOR, R.BXOR) for dtype in INTEGERS]
    cases += [(R.MIN, torch.bool), (R.BOR, torch.bool), (R.SUM, torch.complex64), (R.AVG, torch.float32)]
    for k, (op, dtype) in enumerate(cases):
        for size in SIZES if k % 4 == 0 else (7, 1000):
            name = f"all_reduce {NAMES[op]} {dtype} {size}"
            small = op == R.PRODUCT

            def body():
                mine = make((size,), dtype, 1000 * k + rank, small)
                ours = mine.clone()
                dist.all_reduce(ours, op=op, group=lossless)
                if gloo_reduces(op, dtype) and size > 0:
                    want = mine.clone()
                    dist.all_reduce(want, op=op, group=gloo)
                else:  # the reference from the gathered tensors
                    want = reference_reduce(gathered(mine, gloo, world), op)
                c.same(name, ours, want, exact_op(op, dtype))
            c.run(name, body)
    for root in (0, world - 1):
        for op, dtype in ((R.SUM, torch.float32), (R.MAX, torch.int64), (R.BXOR, torch.int32)):
            name = f"reduce root {root} {NAMES[op]} {dtype}"

            def body():
                mine = make((1001,), dtype, 77 + rank)
                ours, want = mine.clone(), mine.clone()
                dist.reduce(ours, root, op=op, group=lossless)
                dist.reduce(want, root, op=op, group=gloo)  # (never empty here)
                if rank == root:
                    c.same(name, ours, want, exact_op(op, dtype))
                else:
                    c.same(name + " (non-root unchanged)", ours, mine, True)
            c.run(name, body)


def movement(c, gloo, lossless, world, rank):
    for dtype in (torch.float32, torch.float64, torch.int8, torch.bool, torch.complex64):
        for size in SIZES:
            tag = f"{dtype} {size}"

            def body():
                mine = make((size,), dtype, 5 + rank)
                ours, want = mine.clone(), mine.clone()
                dist.broadcast(ours, world - 1, group=lossless)
                if size > 0:  # gloo's collectives fail on empty tensors
                    dist.broadcast(want.view(torch.uint8) if dtype in GLOO_REFUSES else want,
                                   world - 1, group=gloo)
                c.same("broadcast " + tag, ours, want, True)
                ours = [torch.empty_like(mine) for _ in range(world)]
                dist.all_gather(ours, mine, group=lossless)
                for r, (got, expected) in enumerate(zip(ours, gathered(mine, gloo, world))):
                    c.same(f"all_gather {tag} part {r}", got, expected, True)
                flat = torch.empty(size * world, dtype=dtype)
                dist.all_gather_into_tensor(flat, mine, group=lossless)
                c.same("all_gather_into_tensor " + tag, flat, torch.cat(gathered(mine, gloo, world)), True)
                everyone = gathered(mine, gloo, world)  # on every rank: gloo calls must pair up
                for root in (0, world - 1):
                    outputs = [torch.empty_like(mine) for _ in range(world)] if rank == root else None
                    dist.gather(mine, outputs, dst=root, group=lossless)
                    if rank == root:
                        for r, (got, expected) in enumerate(zip(outputs, everyone)):
                            c.same(f"gather {tag} root {root} part {r}", got, expected, True)
                    inputs = [make((size,), dtype, 50 + r) for r in range(world)] if rank == root else None
                    received = torch.empty_like(mine)
                    dist.scatter(received, inputs, src=root, group=lossless)
                    c.same(f"scatter {tag} root {root}", received, make((size,), dtype, 50 + rank), True)
            c.run(tag, body)


def sharded(c, gloo, lossless, world, rank):
    for op, dtype in ((R.SUM, torch.float32), (R.SUM, torch.int64), (R.MAX, torch.float64),
                      (R.BAND, torch.int32), (R.AVG, torch.float32)):
        for size in (0, 1, 333):
            name = f"reduce_scatter {NAMES[op]} {dtype} {size}"

            def body():
                pieces = [make((size,), dtype, 300 + 10 * rank + r) for r in range(world)]
                total = torch.cat(pieces)
                reference = reference_reduce(gathered(total, gloo, world), op)
                want = reference[rank * size:(rank + 1) * size]
                ours = torch.empty(size, dtype=dtype)
                dist.reduce_scatter(ours, pieces, op=op, group=lossless)
                c.same(name, ours, want, exact_op(op, dtype))
                ours = torch.empty(size, dtype=dtype)
                dist.reduce_scatter_tensor(ours, total, op=op, group=lossless)
                c.same(name + " (tensor)", ours, want, exact_op(op, dtype))
            c.run(name, body)
    for dtype in (torch.float32, torch.int16):
        name = f"all_to_all_single even {dtype}"

        def body():
            mine = make((4 * world, 3), dtype, 900 + rank)
            ours, want = torch.empty_like(mine), torch.empty_like(mine)
            dist.all_to_all_single(ours, mine, group=lossless)
            if dtype in GLOO_REFUSES:
                wide = torch.empty(want.shape, dtype=torch.int32)
                dist.all_to_all_single(wide, mine.to(torch.int32), group=gloo)
                want = wide.to(dtype)
            else:
                dist.all_to_all_single(want, mine, group=gloo)
            c.same(name, ours, want, True)
        c.run(name, body)
    name = "all_to_all_single uneven"

    def uneven():
        # Rank s sends s + d + 1 rows to rank d (and 0 rows to rank 0 when s is 0 ... by design).
        sends = [(rank + d) % 3 for d in range(world)]
        receives = [(s + rank) % 3 for s in range(world)]
        mine = make((sum(sends), 2), torch.float64, 700 + rank)
        ours = torch.empty(sum(receives), 2, dtype=torch.float64)
        want = torch.empty(sum(receives), 2, dtype=torch.float64)
        dist.all_to_all_single(ours, mine, receives, sends, group=lossless)
        dist.all_to_all_single(want, mine, receives, sends, group=gloo)
        c.same(name, ours, want, True)
    c.run(name, uneven)
    name = "all_to_all list"

    def listed():
        inputs = [make((rank + d + 1,), torch.int32, 800 + 10 * rank + d) for d in range(world)]
        outputs = [torch.empty(s + rank + 1, dtype=torch.int32) for s in range(world)]
        dist.all_to_all(outputs, inputs, group=lossless)
        for s in range(world):
            c.same(f"{name} from {s}", outputs[s], make((s + rank + 1,), torch.int32, 800 + 10 * s + rank), True)
    c.run(name, listed)


def point_to_point(c, lossless, world, rank):
    name = "send/recv ring"

    def ring():
        after, before = (rank + 1) % world, (rank - 1) % world
        big = make((100_003,), torch.float32, 60 + rank)
        small = make((5,), torch.int64, 61 + rank)
        got_big, got_small = torch.empty_like(big), torch.empty_like(small)
        # Receives posted in the other order than the sends: tags tell them apart.
        requests = [dist.irecv(got_small, before, group=lossless, tag=2),
                    dist.irecv(got_big, before, group=lossless, tag=1),
                    dist.isend(big, after, group=lossless, tag=1),
                    dist.isend(small, after, group=lossless, tag=2)]
        for request in requests:
            request.wait()
        c.same(name + " big", got_big, make((100_003,), torch.float32, 60 + before), True)
        c.same(name + " small", got_small, make((5,), torch.int64, 61 + before), True)
        # From any source: rank 0 takes every other rank's tensor in arrival order.
        if rank == 0:
            senders = []
            for _ in range(world - 1):
                got = torch.empty(33, dtype=torch.int32)
                sender = dist.recv(got, group=lossless, tag=7)
                senders.append(sender)
                c.same(f"{name} any source from {sender}", got, make((33,), torch.int32, 90 + sender), True)
            c.checks += 1
            if sorted(senders) != list(range(1, world)):
                c.failures.append(f"{name} any source: senders {senders}")
        else:
            dist.send(make((33,), torch.int32, 90 + rank), 0, group=lossless, tag=7)
        if rank == 0:
            dist.send(torch.arange(3), 1, group=lossless)
        elif rank == 1:
            blocking = torch.empty(3, dtype=torch.int64)
            dist.recv(blocking, 0, group=lossless)
            c.same(name + " blocking", blocking, torch.arange(3), True)
    c.run(name, ring)


def asynchronous(c, gloo, lossless, world, rank):
    name = "async_op and get_future"

    def body():
        mine = make((2048,), torch.float32, 11 + rank)
        ours = mine.clone()
        work = dist.all_reduce(ours, async_op=True, group=lossless)
        value = work.get_future().wait()
        c.same(name + " all_reduce", value[0], ours, True)
        want = mine.clone()
        dist.all_reduce(want, group=gloo)
        c.same(name + " all_reduce result", ours, want, False)
        pieces = [make((64,), torch.int32, 12 + r) for r in range(world)]
        out = torch.empty(64, dtype=torch.int32)
        dist.reduce_scatter(out, pieces, op=R.MAX, group=lossless, async_op=True).get_future().wait()
        c.same(name + " reduce_scatter", out, make((64,), torch.int32, 12 + rank), True)
        flat = torch.empty(64 * world, dtype=torch.int32)
        work = dist.all_gather_into_tensor(flat, out, group=lossless, async_op=True)
        work.wait()
        c.same(name + " all_gather_into_tensor", flat, torch.cat(gathered(out, gloo, world)), True)
    c.run(name, body)


def coalesced_and_torch2(c, gloo, lossless, world, rank):
    """The coalesced forms FSDP2 and DDP use, bf16, and what torch 2.x adds (PREMUL_SUM, the
    coalescing manager, group names)."""
    name = "all_reduce_coalesced"

    def reduce_coalesced():
        mine = [make((n,), torch.float32, 40 + 3 * rank + k) for k, n in enumerate((5, 2000, 1))]
        ours = [t.clone() for t in mine]
        dist.all_reduce_coalesced(ours, group=lossless)
        for k, tensor in enumerate(mine):
            c.same(f"{name} {k}", ours[k], reference_reduce(gathered(tensor, gloo, world), R.SUM), False)
    c.run(name, reduce_coalesced)
    for op in (R.SUM, R.AVG):
        name = f"all_reduce {NAMES[op]} bfloat16"

        def bf16():
            mine = make((3001,), torch.bfloat16, 70 + rank)
            ours = mine.clone()
            dist.all_reduce(ours, op=op, group=lossless)
            want = reference_reduce([p.float() for p in gathered(mine, gloo, world)], op)
            c.checks += 1
            if ours.dtype != torch.bfloat16 or not torch.allclose(ours.float(), want, rtol=2e-2, atol=2e-2):
                c.failures.append(f"{name}: differs from the reference")
        c.run(name, bf16)
    if not TORCH2:
        return  # torch 1.13: none of what follows exists in this form
    name = "PREMUL_SUM"

    def premul():
        mine = make((1500,), torch.float32, 20 + rank)
        ours = mine.clone()
        dist.all_reduce(ours, op=dist._make_nccl_premul_sum(0.5), group=lossless)
        c.same(name, ours, reference_reduce(gathered(mine, gloo, world), R.SUM) * 0.5, False)
    c.run(name, premul)
    name = "coalescing manager"

    def manager():
        inputs = [make((n,), torch.float32, 30 + 7 * rank + n) for n in (1, 999, 4096)]
        outputs = [torch.empty(n * world) for n in (1, 999, 4096)]
        with dist._coalescing_manager(group=lossless, async_ops=True) as cm:
            for output, tensor in zip(outputs, inputs):
                dist.all_gather_into_tensor(output, tensor, group=lossless)
        cm.wait()
        for k, (output, tensor) in enumerate(zip(outputs, inputs)):
            c.same(f"{name} all_gather {k}", output, torch.cat(gathered(tensor, gloo, world)), True)
        shards = [torch.empty(n) for n in (1, 999, 4096)]
        wholes = [make((n * world,), torch.float32, 90 + 7 * rank + n) for n in (1, 999, 4096)]
        with dist._coalescing_manager(group=lossless, async_ops=True) as cm:
            for shard, whole in zip(shards, wholes):
                dist.reduce_scatter_tensor(shard, whole, op=R.AVG, group=lossless)
        cm.wait()
        for k, (shard, whole) in enumerate(zip(shards, wholes)):
            n = shard.numel()
            want = reference_reduce(gathered(whole, gloo, world), R.AVG)[rank * n:(rank + 1) * n]
            c.same(f"{name} reduce_scatter {k}", shard, want, False)
    c.run(name, manager)
    name = "group name"

    def group_name():
        c.checks += 1
        given = dist.distributed_c10d._get_process_group_name(lossless)
        if not given or lossless.group_name != given:
            c.failures.append(f"{name}: {lossless.group_name!r} != {given!r}")
        c.checks += 1
        if dist.get_backend(lossless) != "dlcp":
            c.failures.append(f"{name}: backend {dist.get_backend(lossless)!r}")
    c.run(name, group_name)


def refusals(c, lossless, world, rank):
    """Bad arguments raise at once with torch's error type, on every rank alike (no hang).
    Torch 2.x checks some arguments itself first and raises ValueError (dlcp's own refusals
    are both: InvalidArgumentError derives from RuntimeError and ValueError)."""
    cases = {
        "all_gather output count": lambda: dist.all_gather([torch.empty(3)] * (world + 1), torch.ones(3), group=lossless),
        "all_gather dtype": lambda: dist.all_gather([torch.empty(3, dtype=torch.int32)] * world, torch.ones(3), group=lossless),
        "reduce_scatter sizes": lambda: dist.reduce_scatter_tensor(torch.empty(3), torch.ones(3 * world + 1), group=lossless),
        "bitwise on floats": lambda: dist.all_reduce(torch.ones(3), op=R.BAND, group=lossless),
        "average of integers": lambda: dist.all_reduce(torch.ones(3, dtype=torch.int32), op=R.AVG, group=lossless),
        "a tensor on another device": lambda: dist.all_reduce(torch.ones(3, device="meta"), group=lossless),
        "uneven splits that do not add up": lambda: dist.all_to_all_single(torch.empty(world), torch.ones(world), [1] * world, [2] * world, group=lossless),
    }
    for name, call in cases.items():
        c.checks += 1
        try:
            call()
            c.failures.append(f"refusal {name}: accepted")
        except (RuntimeError, ValueError):
            pass
        except Exception as error:
            c.failures.append(f"refusal {name}: raised {type(error).__name__}, not RuntimeError")


def main():
    output = sys.argv[1]
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    dist.init_process_group("gloo")
    gloo = dist.group.WORLD
    lossless = dist.new_group(backend="dlcp")
    c = Checker(rank, world)
    reductions(c, gloo, lossless, world, rank)
    movement(c, gloo, lossless, world, rank)
    sharded(c, gloo, lossless, world, rank)
    point_to_point(c, lossless, world, rank)
    asynchronous(c, gloo, lossless, world, rank)
    coalesced_and_torch2(c, gloo, lossless, world, rank)
    refusals(c, lossless, world, rank)
    dist.barrier(group=gloo)
    with open(os.path.join(output, f"report{rank}.json"), "w") as report:
        json.dump({"failures": c.failures, "checks": c.checks}, report)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
