"""The dlcp Python module without torch: stores, the communicator over numpy, errors."""

import threading
import time
import unittest

import numpy as np

import dlcp


def run_ranks(world_size, body):
    """Runs body(rank, communicator) on one thread per rank over an in-process store."""
    store = dlcp.HashStore()
    results, errors = {}, []

    def rank_main(rank):
        try:
            with dlcp.Communicator(store, rank, world_size) as communicator:
                results[rank] = body(rank, communicator)
        except Exception as error:  # reported by the test thread
            errors.append(error)

    threads = [threading.Thread(target=rank_main, args=(rank,)) for rank in range(world_size)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    if errors:
        raise errors[0]
    return results


class CommunicatorTest(unittest.TestCase):
    def test_collectives_over_numpy(self):
        def body(rank, comm):
            values = np.full(50000, rank + 1.0, dtype=np.float32)
            result = comm.allreduce(values, op="average", layer=1, num_layers=4).wait()
            root_values = np.arange(100, dtype=np.float32) * (rank == 0)
            comm.broadcast(root_values, 0).wait()
            gathered = np.zeros(3 * comm.size, dtype=np.float32)
            comm.allgather(np.full(3, float(rank), dtype=np.float32), gathered).wait()
            comm.barrier()
            return values, result, root_values, gathered

        results = run_ranks(3, body)
        for values, result, root_values, gathered in results.values():
            np.testing.assert_array_equal(values, np.full(50000, 2.0, dtype=np.float32))
            self.assertEqual(result.entries, 50000)
            self.assertEqual(result.delivered_fraction, 1.0)
            np.testing.assert_array_equal(root_values, np.arange(100, dtype=np.float32))
            np.testing.assert_array_equal(gathered, [0, 0, 0, 1, 1, 1, 2, 2, 2])

    def test_lossy_allreduce_reports_loss_and_stays_consistent(self):
        store = dlcp.HashStore()
        results = {}

        def rank_main(rank):
            options = dlcp.communicator_options(
                mtu=1500, protected_share=0.0, drop_rate=0.1, drop_seed=rank + 7
            )
            with dlcp.Communicator(store, rank, 2, options) as comm:
                values = np.random.default_rng(rank).standard_normal(200000).astype(np.float32)
                result = comm.allreduce(values, op="average", loss_budget=0.2).wait()
                results[rank] = (values, result)

        threads = [threading.Thread(target=rank_main, args=(rank,)) for rank in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        self.assertEqual(len(results), 2)
        np.testing.assert_array_equal(results[0][0], results[1][0])
        fractions = [result.delivered_fraction for _, result in results.values()]
        self.assertTrue(all(0.7 < fraction < 1.0 for fraction in fractions), fractions)

    def test_buffers_must_be_float32_and_contiguous(self):
        def body(rank, comm):
            with self.assertRaisesRegex(TypeError, "float32"):
                comm.allreduce(np.zeros(4, dtype=np.float64))
            with self.assertRaisesRegex(ValueError, "C-contiguous"):
                comm.allreduce(np.zeros(8, dtype=np.float32)[::2])
            return True

        self.assertEqual(run_ranks(1, body), {0: True})

    def test_counters_say_what_this_host_offers_its_senders(self):
        store = dlcp.HashStore()
        offered = {}
        reports = {}

        def rank_main(rank):
            # Rank 0 sets its receive rate; rank 1 leaves it to detection, which finds no speed
            # on loopback and falls back to max_rate.
            options = dlcp.communicator_options(receive_rate=5e7 if rank == 0 else 0.0)
            with dlcp.Communicator(store, rank, 2, options) as comm:
                counters = comm.counters()
                offered[rank] = counters["receive_rate_bytes_per_s"]
                # Nothing sent yet: no rate report has come back.
                reports[rank] = (counters["rate_reports"], counters["rate_reports_congested"])

        threads = [threading.Thread(target=rank_main, args=(rank,)) for rank in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        max_rate = dlcp.communicator_options().transport.rate.max_rate
        self.assertEqual(offered, {0: 5e7, 1: max_rate})
        self.assertEqual(reports, {0: (0, 0), 1: (0, 0)})


class OptionsTest(unittest.TestCase):
    def test_unknown_option_is_named(self):
        with self.assertRaisesRegex(dlcp.InvalidArgumentError, "unknown communicator option 'pa"):
            dlcp.communicator_options(pathz=2)

    def test_range_errors_come_from_cpp_with_the_field(self):
        # The C++ validate()'s message as it is: "<Struct>.<field> <requirement>, got <value>".
        with self.assertRaisesRegex(
            dlcp.InvalidArgumentError, r"^TransportOptions\.paths must be 1\.\.64, got 0$"
        ):
            dlcp.communicator_options(paths=0)
        with self.assertRaisesRegex(
            dlcp.InvalidArgumentError,
            r"^CollectiveOptions\.loss_budget must be within \[0, 1\], got 1\.5$",
        ):
            dlcp.collective_options(loss_budget=1.5)
        with self.assertRaisesRegex(
            dlcp.InvalidArgumentError,
            r"^CommunicatorOptions\.servers must be 0\.\.1 \(at least one worker\), got 2$",
        ):
            options = dlcp.communicator_options(servers=2)
            options.validate(2)

    def test_wrong_type_and_choice(self):
        with self.assertRaisesRegex(dlcp.InvalidArgumentError, "paths='x' has the wrong type"):
            dlcp.communicator_options(paths="x")
        with self.assertRaisesRegex(dlcp.InvalidArgumentError, "op='max' is not one of"):
            dlcp.collective_options(op="max")
        with self.assertRaisesRegex(dlcp.InvalidArgumentError, "unknown algorithm"):
            dlcp.communicator_options(algorithm="tree")

    def test_topology_and_host_id(self):
        options = dlcp.communicator_options(topology="hierarchical", host_id="rack1-node3")
        self.assertEqual(options.topology, dlcp._core.Topology.hierarchical)
        self.assertEqual(options.host_id, "rack1-node3")
        flat = dlcp.collective_options(topology="flat")
        self.assertEqual(flat.topology, dlcp._core.Topology.flat)
        self.assertIsNone(dlcp.collective_options().topology)
        with self.assertRaisesRegex(dlcp.InvalidArgumentError, "topology='tree'.*unknown topology"):
            dlcp.collective_options(topology="tree")
        # The parameter server runs by host too.
        dlcp.communicator_options(topology="hierarchical", servers=1).validate(2)

    def test_invalid_argument_is_also_a_value_error(self):
        self.assertTrue(issubclass(dlcp.InvalidArgumentError, ValueError))
        self.assertTrue(issubclass(dlcp.DeadlineError, TimeoutError))


def bfloat16(values):
    """Rounds float32 values (no NaNs) to the nearest bfloat16, ties to even."""
    bits = values.view(np.uint32).astype(np.uint64)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return rounded.astype(np.uint32).view(np.float32)


class WireTest(unittest.TestCase):
    """16-bit wire from Python: the result is the float32 average of the bf16-rounded inputs,
    rounded once more, on every rank; error feedback keeps each input's rounding error."""

    def test_bf16_allreduce_with_error_feedback(self):
        def input_of(rank):
            return np.random.default_rng(rank).standard_normal(40000).astype(np.float32)

        def body(rank, comm):
            values = input_of(rank)
            residual = np.zeros_like(values)
            comm.allreduce(values, error_feedback=residual, op="average", wire="bf16").wait()
            return values, residual

        results = run_ranks(2, body)
        expected = bfloat16((bfloat16(input_of(0)) + bfloat16(input_of(1))) / np.float32(2))
        for rank, (values, residual) in results.items():
            np.testing.assert_array_equal(values, expected)
            np.testing.assert_array_equal(residual, input_of(rank) - bfloat16(input_of(rank)))

    def test_wire_errors_name_the_option(self):
        with self.assertRaisesRegex(dlcp.InvalidArgumentError, "wire='fp8'.*fp32, bf16 or fp16"):
            dlcp.collective_options(wire="fp8")

        def body(rank, comm):
            values = np.ones(100, dtype=np.float32)
            with self.assertRaisesRegex(dlcp.InvalidArgumentError, "needs a 16-bit wire"):
                comm.allreduce(values, error_feedback=np.zeros(100, dtype=np.float32))
            with self.assertRaisesRegex(dlcp.InvalidArgumentError, "allreduce only"):
                comm.broadcast(values, 0, wire="bf16")
            with self.assertRaisesRegex(ValueError, "error_feedback holds 50 entries"):
                comm._impl.allreduce_slices(values, [(0, 100, 0, 0.0)], 1,
                                            dlcp.collective_options(wire="bf16"),
                                            lambda works: None, np.zeros(50, dtype=np.float32))
            comm.barrier()
            return True

        self.assertEqual(run_ranks(2, body), {0: True, 1: True})


class SlicesTest(unittest.TestCase):
    """allreduce_slices, the hook's collective: per-slice options and a completion callback."""

    def test_each_slice_is_reduced_and_the_callback_sees_every_result(self):
        done = {}

        def body(rank, comm):
            values = np.full(30000, rank + 1.0, dtype=np.float32)
            finished = threading.Event()

            def on_done(works):
                done[rank] = (threading.get_ident(), [r.entries for r in works.wait()])
                finished.set()

            options = dlcp.collective_options(op="average")
            slices = [(0, 10000, 0, 0.0), (10000, 15000, 1, 0.0), (25000, 5000, 1, 0.0)]
            comm._impl.allreduce_slices(values, slices, 2, options, on_done)
            self.assertTrue(finished.wait(30))
            return values

        results = run_ranks(2, body)
        for rank in range(2):
            np.testing.assert_array_equal(results[rank], np.full(30000, 1.5, dtype=np.float32))
            thread, entries = done[rank]
            self.assertNotEqual(thread, threading.get_ident())  # the completion thread
            self.assertEqual(entries, [10000, 15000, 5000])

    def test_bad_slices_are_refused_before_anything_is_posted(self):
        def body(rank, comm):
            values = np.zeros(100, dtype=np.float32)
            options = dlcp.collective_options()
            with self.assertRaisesRegex(ValueError, r"slice \[90, 110\) does not fit"):
                comm._impl.allreduce_slices(values, [(0, 10, 0, 0.0), (90, 20, 0, 0.0)], 1,
                                            options, lambda works: None)
            with self.assertRaises(dlcp.InvalidArgumentError):
                comm._impl.allreduce_slices(values, [(0, 10, 0, 1.5)], 1, options,
                                            lambda works: None)
            with self.assertRaises(TypeError):
                comm._impl.allreduce_slices(values, [(0, 10, 0, 0.0)], 1, options, None)
            comm.barrier()  # nothing half-posted: the ranks still agree
            return True

        self.assertEqual(run_ranks(2, body), {0: True, 1: True})

    def test_close_runs_pending_callbacks_first(self):
        calls = []

        def body(rank, comm):
            values = np.ones(200000, dtype=np.float32)
            comm._impl.allreduce_slices(values, [(0, 200000, 0, 0.0)], 1,
                                        dlcp.collective_options(), lambda works: calls.append(rank))
            comm.close()  # returns only after the callback ran
            return len([c for c in calls if c == rank])

        self.assertEqual(run_ranks(2, body), {0: 1, 1: 1})


class DictStore:
    """The methods CallbackStore calls, over a dict (as dlcp/torch/store.py over torch's)."""

    def __init__(self):
        self.values, self.lock = {}, threading.Lock()

    def set(self, key, value):
        with self.lock:
            self.values[key] = bytes(value)

    def get(self, key):
        self.wait([key], 5000)
        with self.lock:
            return self.values[key]

    def add(self, key, delta):
        with self.lock:
            value = int(self.values.get(key, b"0")) + delta
            self.values[key] = str(value).encode()
            return value

    def check(self, keys):
        with self.lock:
            return all(key in self.values for key in keys)

    def wait(self, keys, timeout_ms):
        deadline = time.monotonic() + timeout_ms / 1000
        while not self.check(keys):
            if time.monotonic() > deadline:
                raise RuntimeError(f"Wait timeout for {keys}")
            time.sleep(0.001)


class CallbackStoreTest(unittest.TestCase):
    def test_callback_store_carries_a_job(self):
        store = dlcp.CallbackStore(DictStore(), timeout_ms=5000)
        results = {}

        def rank_main(rank):
            with dlcp.Communicator(store, rank, 2) as comm:
                values = np.full(1000, rank + 1.0, dtype=np.float32)
                comm.allreduce(values).wait()
                results[rank] = values[0]

        threads = [threading.Thread(target=rank_main, args=(rank,)) for rank in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        self.assertEqual(results, {0: 3.0, 1: 3.0})

    def test_callback_store_errors_become_dlcp_errors(self):
        store = dlcp.CallbackStore(DictStore(), timeout_ms=100)
        with self.assertRaises(dlcp.DeadlineError) as caught:
            store.wait(["never"], timeout_ms=50)
        self.assertIn("never", str(caught.exception))
        broken = dlcp.CallbackStore(object())
        with self.assertRaises(dlcp.PeerLostError) as caught:
            broken.set("key", b"value")
        self.assertIn("set('key')", str(caught.exception))
class StoreTest(unittest.TestCase):
    def test_tcp_store_round_trip_and_deadline(self):
        server = dlcp.TcpStore.serve_or_connect("127.0.0.1", 0, True, timeout_ms=2000)
        client = dlcp.TcpStore("127.0.0.1", server.port, timeout_ms=2000)
        client.set("key", b"\x00value")
        self.assertEqual(server.get("key"), b"\x00value")
        self.assertEqual(client.add("counter", 5), 5)
        self.assertTrue(server.check(["key", "counter"]))
        prefixed = dlcp.PrefixStore("job", client)
        prefixed.set("a", b"1")
        self.assertEqual(server.get("job/a"), b"1")
        with self.assertRaises(dlcp.DeadlineError) as caught:
            client.wait(["missing"], timeout_ms=100)
        self.assertIn("missing", str(caught.exception))


if __name__ == "__main__":
    unittest.main()
