"""Bad options, unsupported tensors and failures of the dlcp backend raise clear errors."""

import datetime
import threading
import unittest

import torch
import torch.distributed as dist

import dlcp
import dlcp.torch


class OptionsTest(unittest.TestCase):
    def test_unknown_option_is_named(self):
        with self.assertRaisesRegex(dlcp.InvalidArgumentError, "unknown dlcp.torch option 'bud"):
            dlcp.torch.Options(budget=0.1)

    def test_out_of_range_values_are_named(self):
        with self.assertRaisesRegex(dlcp.InvalidArgumentError, "loss_budget must be within"):
            dlcp.torch.Options(loss_budget=2.0)
        with self.assertRaisesRegex(dlcp.InvalidArgumentError, "layer must be 0..1, got 3"):
            dlcp.torch.Options(layer=3, num_layers=2)
        with self.assertRaisesRegex(dlcp.InvalidArgumentError, "drop_rate"):
            dlcp.torch.Options(drop_rate=-0.5)
        with self.assertRaisesRegex(dlcp.InvalidArgumentError, "aggregation='fancy'"):
            dlcp.torch.Options(aggregation="fancy")
        with self.assertRaisesRegex(dlcp.InvalidArgumentError, "parameter-server"):
            dlcp.torch.Options(algorithm="ps")
        with self.assertRaisesRegex(dlcp.InvalidArgumentError, "receive_rate"):
            dlcp.torch.Options(receive_rate=-1.0)
        with self.assertRaisesRegex(dlcp.InvalidArgumentError, "shared_band_pacing='yes'"):
            dlcp.communicator_options(shared_band_pacing="yes")
        with self.assertRaisesRegex(
            dlcp.InvalidArgumentError,
            r"^dlcp\.torch\.Options\.lossy_min_entries must be an integer >= 0, got -1$",
        ):
            dlcp.torch.Options(lossy_min_entries=-1)
        with self.assertRaisesRegex(dlcp.InvalidArgumentError, r"^dlcp\.torch\.Options\.servers "):
            dlcp.torch.Options(servers=1)

    def test_shared_band_pacing_reaches_the_transport(self):
        self.assertFalse(dlcp.communicator_options().transport.rate.shared_band_pacing)
        options = dlcp.communicator_options(shared_band_pacing=True)
        self.assertTrue(options.transport.rate.shared_band_pacing)


class WorldOfOneTest(unittest.TestCase):
    """A one-rank default group: enough to exercise argument checks without other processes."""

    @classmethod
    def setUpClass(cls):
        dist.init_process_group("dlcp", store=dist.HashStore(), rank=0, world_size=1)

    @classmethod
    def tearDownClass(cls):
        dist.destroy_process_group()

    def test_collectives_work(self):
        values = torch.arange(6, dtype=torch.float32).reshape(2, 3).t()  # not contiguous
        dist.all_reduce(values)
        self.assertTrue(torch.equal(values, torch.arange(6, dtype=torch.float32).reshape(2, 3).t()))
        self.assertEqual(dist.get_backend(), "dlcp")

    def test_unsupported_tensors_are_refused_with_reasons(self):
        with self.assertRaisesRegex(dlcp.InvalidArgumentError, "sparse"):
            dist.all_reduce(torch.eye(3).to_sparse())
        with self.assertRaisesRegex(dlcp.InvalidArgumentError, "ReduceOp.SUM on a bool tensor"):
            dist.all_reduce(torch.ones(3, dtype=torch.bool))
        with self.assertRaisesRegex(dlcp.InvalidArgumentError, "ReduceOp.AVG on an integer"):
            dist.all_reduce(torch.ones(3, dtype=torch.int32), op=dist.ReduceOp.AVG)
        with self.assertRaisesRegex(RuntimeError, "ReduceOp.BXOR with non-integral dtype"):
            dist.all_reduce(torch.ones(3), op=dist.ReduceOp.BXOR)
        with self.assertRaisesRegex(RuntimeError, "any source in a world of one"):
            dist.recv(torch.ones(3))

    def test_integers_beyond_float32_are_exact(self):
        # Integers are reduced in their own dtype, so values float32 cannot hold survive.
        values = torch.tensor([2**53 + 1, -(2**40) - 3], dtype=torch.int64)
        dist.all_reduce(values)
        self.assertEqual(values.tolist(), [2**53 + 1, -(2**40) - 3])
        largest = torch.tensor([7, -2], dtype=torch.int16)
        dist.all_reduce(largest, op=dist.ReduceOp.MAX)
        self.assertEqual(largest.tolist(), [7, -2])

    def test_wrong_pg_options_type(self):
        with self.assertRaisesRegex(TypeError, "pg_options must be dlcp.torch.Options, got dict"):
            dist.new_group(backend="dlcp", pg_options={"loss_budget": 0.1})

    def test_hook_state_errors_name_the_option(self):
        model = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.Linear(2, 2))
        with self.assertRaisesRegex(dlcp.InvalidArgumentError, "2 layers"):
            dlcp.torch.HookState(model, loss_budget=[0.1, 0.1, 0.1])
        with self.assertRaisesRegex(dlcp.InvalidArgumentError, "layer 0 must be within"):
            dlcp.torch.HookState(model, loss_budget=lambda layer, n: -1.0)
        with self.assertRaisesRegex(dlcp.InvalidArgumentError, "pass loss_budget to HookState"):
            dlcp.torch.HookState(model, options=dlcp.torch.Options(loss_budget=0.1))
        with self.assertRaisesRegex(dlcp.InvalidArgumentError, "no trainable parameters"):
            dlcp.torch.HookState(torch.nn.ReLU())
        with self.assertRaisesRegex(dlcp.InvalidArgumentError, "HookState: wire='int8'"):
            dlcp.torch.HookState(model, wire="int8")
        with self.assertRaisesRegex(dlcp.InvalidArgumentError, "error_feedback needs wire"):
            dlcp.torch.HookState(model, error_feedback=True)
        with self.assertRaisesRegex(dlcp.InvalidArgumentError, "wire='bf17'"):
            dlcp.torch.Options(wire="bf17")


class PeerFailureTest(unittest.TestCase):
    def test_collective_after_a_peer_left_raises_a_dlcp_error(self):
        store = dist.HashStore()
        groups = [None, None]

        def create(rank):
            options = dlcp.torch.Options(deadline_ms=3000)
            groups[rank] = dlcp.torch.ProcessGroupDlcp(
                store, rank, 2, options, timeout=datetime.timedelta(seconds=10)
            )

        threads = [threading.Thread(target=create, args=(rank,)) for rank in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
        groups[1].shutdown()
        # Through torch.distributed's functions, as a training script calls it.
        with self.assertRaises(dlcp.PeerLostError) as caught:
            dist.all_reduce(torch.ones(1000), group=groups[0])
        self.assertIn("rank 1", str(caught.exception))
        with self.assertRaisesRegex(dlcp.AbortedError, "shut down"):
            groups[1].allreduce([torch.ones(10)])
        groups[0].shutdown()


if __name__ == "__main__":
    unittest.main()
