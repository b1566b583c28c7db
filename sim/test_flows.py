"""sim/flows.py's statistics on fixed inputs: nearest-rank percentiles, server intake, bursts."""

import os
import tempfile
import unittest

import flows

HEADER = "kind,phase,src,dst,bytes,layer,posted_us,finished_us\n"


def push(src, dst, size, layer, posted, fct=10.0):
    return {"phase": "push", "src": src, "dst": dst, "bytes": size, "layer": layer,
            "posted": posted, "fct": fct}


class PercentileTest(unittest.TestCase):
    def test_nearest_rank(self):
        values = list(range(1, 101))
        self.assertEqual(flows.percentile(values, 99), 99)
        self.assertEqual(flows.percentile(values, 50), 50)
        self.assertEqual(flows.percentile(values, 100), 100)

    def test_small_samples_take_the_top_rank(self):
        self.assertEqual(flows.percentile([3.0, 7.0], 99), 7.0)
        self.assertEqual(flows.percentile([5.0], 1), 5.0)


class ServerLoadsTest(unittest.TestCase):
    def test_bytes_per_iteration(self):
        # Two workers, two iterations; server 9 takes 300 bytes per iteration, server 8 takes 100.
        pushes = []
        for iteration in range(2):
            t = 1000.0 * iteration
            pushes += [push(1, 9, 100, 0, t), push(2, 9, 50, 1, t), push(2, 9, 150, 2, t),
                       push(1, 8, 100, 3, t)]
        loads, iterations = flows.server_loads(pushes)
        self.assertEqual(iterations, 2)
        self.assertEqual(loads, {9: 300.0, 8: 100.0})

    def test_equal_slices_of_one_layer_do_not_double_the_iterations(self):
        # One layer cut into two equal slices that both went to server 9, over three iterations,
        # plus two other slices: the usual count per key is 3, not 6.
        pushes = []
        for iteration in range(3):
            pushes += [push(1, 9, 64, 5, iteration), push(1, 9, 64, 5, iteration),
                       push(1, 9, 10, 6, iteration), push(1, 8, 20, 7, iteration)]
        loads, iterations = flows.server_loads(pushes)
        self.assertEqual(iterations, 3)
        self.assertEqual(loads[9], 138.0)

    def test_no_pushes(self):
        pull = dict(push(1, 9, 100, 0, 0.0), phase="pull")
        self.assertEqual(flows.server_loads([pull]), ({}, 0))


class LargestBurstsTest(unittest.TestCase):
    def test_window_counts_pushes_posted_together(self):
        pushes = [push(w, 9, 10, 0, 100.0) for w in range(4)]  # four at once
        pushes += [push(w, 9, 10, 1, 140.0) for w in range(3)]  # three more 40 us later
        pushes += [push(w, 9, 10, 2, 300.0) for w in range(5)]  # five, alone
        pushes += [push(w, 8, 10, 3, 100.0) for w in range(2)]
        self.assertEqual(flows.largest_bursts(pushes, 50.0), {9: 7, 8: 2})
        self.assertEqual(flows.largest_bursts(pushes, 39.0), {9: 5, 8: 2})
        self.assertEqual(flows.largest_bursts(pushes, 0.0), {9: 5, 8: 2})

    def test_window_edge_is_inclusive(self):
        pushes = [push(1, 9, 10, 0, 0.0), push(2, 9, 10, 0, 50.0), push(3, 9, 10, 0, 100.5)]
        self.assertEqual(flows.largest_bursts(pushes, 50.0), {9: 2})

    def test_pulls_are_not_counted(self):
        pull = dict(push(9, 1, 100, 0, 0.0), phase="pull")
        self.assertEqual(flows.largest_bursts([pull], 50.0), {})


class SenderBacklogsTest(unittest.TestCase):
    def message(self, src, dst, posted, fct):
        return {"phase": "reduce-scatter", "src": src, "dst": dst, "bytes": 3600, "layer": 49,
                "posted": posted, "fct": fct}

    def test_a_run_of_overlapping_ever_slower_messages(self):
        # 1 -> 2: posted every 3 us while the one before is unfinished, each slower: a run of 4,
        # then a message posted after the last one finished starts afresh.
        messages = [self.message(1, 2, t, fct) for t, fct in
                    ((0.0, 5.0), (3.0, 9.0), (6.0, 14.0), (9.0, 20.0), (100.0, 5.0))]
        length, first, last = flows.sender_backlogs(messages)[(1, 2)]
        self.assertEqual(length, 4)
        self.assertEqual((first["posted"], last["fct"]), (0.0, 20.0))

    def test_overlap_without_growth_is_no_backlog(self):
        # Overlapping but not getting slower (a healthy ring step), and one lone message.
        messages = [self.message(1, 2, t, fct) for t, fct in ((0.0, 5.0), (3.0, 5.0), (6.0, 4.0))]
        messages.append(self.message(3, 4, 0.0, 50.0))
        self.assertEqual(flows.sender_backlogs(messages), {})

    def test_peers_are_apart(self):
        # Alternating destinations, each message slower than the last: to each peer, every one is
        # posted after the one before it to that peer finished.
        messages = [self.message(1, 2 + i % 2, 3.0 * i, 2.0 + i) for i in range(6)]
        self.assertEqual(flows.sender_backlogs(messages), {})


class IterationsTest(unittest.TestCase):
    def test_rank_within_each_phase_ends_and_layer(self):
        # A ring hop posts two steps per iteration: four flows over two iterations, listed out of
        # order; a push of another layer once per iteration.
        ring = [dict(push(1, 2, 8, 7, t), phase="reduce-scatter") for t in (30.0, 0.0, 10.0, 20.0)]
        pushes = [push(1, 9, 8, 3, 5.0), push(1, 9, 8, 3, 25.0)]
        self.assertEqual(flows.iterations_of(ring + pushes, 2), [1, 0, 0, 1, 0, 1])
        self.assertEqual(flows.iterations_of(ring + pushes, 1), [0] * 6)

    def test_phase_spans(self):
        fl = [push(1, 9, 8, 3, 0.0, fct=50.0), push(2, 9, 8, 3, 10.0, fct=20.0),
              dict(push(9, 1, 8, 3, 60.0, fct=5.0), phase="pull"),
              push(1, 9, 8, 3, 100.0, fct=7.0)]
        spans = flows.phase_spans(fl, [0, 0, 0, 1])
        self.assertEqual(spans, {(0, "push"): (0.0, 50.0), (0, "pull"): (60.0, 65.0),
                                 (1, "push"): (100.0, 107.0)})

    def test_pull_tails(self):
        # Server 9, iteration 0: pushes end at 50 us; one pull ends before (not counted), two
        # after. Iteration 1: the pull ends before the last push. Server 8 only pulls.
        fl = [push(1, 9, 8, 3, 0.0, fct=50.0), push(2, 9, 8, 3, 10.0, fct=20.0),
              dict(push(9, 1, 100, 3, 20.0, fct=20.0), phase="pull"),
              dict(push(9, 1, 300, 4, 45.0, fct=30.0), phase="pull"),
              dict(push(9, 2, 500, 4, 60.0, fct=40.0), phase="pull"),
              push(1, 9, 8, 3, 200.0, fct=10.0), dict(push(9, 1, 7, 3, 201.0, fct=2.0),
                                                      phase="pull"),
              dict(push(8, 1, 9, 3, 0.0), phase="pull")]
        tails = flows.pull_tails(fl, [0, 0, 0, 0, 0, 1, 1, 0])
        self.assertEqual(tails, {(0, 9): (50.0, 100.0, 800), (1, 9): (210.0, 203.0, 0)})

    def test_counts_that_do_not_split_are_refused(self):
        pushes = [push(1, 9, 8, 3, t) for t in (0.0, 1.0, 2.0)]
        with self.assertRaises(SystemExit):
            flows.iterations_of(pushes, 2)


class ReadTest(unittest.TestCase):
    def write(self, text):
        f = tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False)
        self.addCleanup(os.unlink, f.name)
        f.write(text)
        f.close()
        return f.name

    def test_kinds_and_completion_times(self):
        path = self.write(HEADER + "gradient,push,3,9,4096,12,100.5,350.5\n"
                          "background,-,1,2,1000,0,10,20\n")
        gradient = flows.read(path)
        self.assertEqual(len(gradient), 1)
        self.assertEqual(gradient[0]["fct"], 250.0)
        self.assertEqual(gradient[0]["posted"], 100.5)
        self.assertEqual((gradient[0]["src"], gradient[0]["dst"]), (3, 9))
        self.assertEqual(len(flows.read(path, "background")), 1)

    def test_other_files_are_refused(self):
        with self.assertRaises(SystemExit):
            flows.read(self.write("a,b\n1,2\n"))
        with self.assertRaises(SystemExit):
            flows.read(self.write(HEADER))  # no gradient flows


if __name__ == "__main__":
    unittest.main()
