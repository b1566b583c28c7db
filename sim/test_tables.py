"""sim/tables.py's ablation and long-link tables on fixed documents: settings, changes, gains against
DCTCP and the shares of the budget and parity."""

import unittest

import tables


def result(mean_ms, p99_us, background_p99_us=1000.0, refused=0, marks=0, resent=0):
    return {
        "iteration_ms": {"mean": mean_ms},
        "gradient_fct_us": {"p99": p99_us},
        "background_fct_us": {"p99": background_p99_us},
        "switch": {"dropped_drop_eligible": refused, "ce_marked": marks},
        "dlcp": {"retransmitted_packets": resent},
    }


def document(config_changes, results, seed=1):
    config = {"hosts": 16, "collective": "ring_allreduce", "seed": seed, "mark_per_queue": True,
              "dlcp_ecn_capable": True, "dlcp_drop_precedence": True,
              "dlcp_receiver_share": True, "eligible_threshold": "queue"}
    config.update(config_changes)
    return {"config": config, "results": results}


class AblatedTest(unittest.TestCase):
    def test_names_follow_the_keys_turned_off(self):
        queue = {"eligible_threshold": "queue"}
        self.assertEqual(tables.ablated({"dlcp_ecn_capable": True, **queue}), [])
        # best_effort_shared is written only when false; absent means on.
        self.assertEqual(
            tables.ablated({"dlcp_drop_precedence": False, "best_effort_shared": False, **queue}),
            ["precedence", "best-effort-sharing"])
        self.assertEqual(tables.ablated({"mark_per_queue": False, **queue}), ["queue-marking"])

    def test_dlcp_switch_options_follow_the_ablations(self):
        self.assertEqual(tables.ablated({"eligible_threshold": "queue"}), [])
        self.assertEqual(
            tables.ablated({"eligible_threshold": "port", "best_effort_shared": False}),
            ["best-effort-sharing", "eligible-threshold port"])

    def test_shared_band_pacing_is_named_only_when_set(self):
        queue = {"eligible_threshold": "queue"}
        self.assertEqual(tables.ablated({"dlcp_pacing": "peer", **queue}), [])
        self.assertEqual(tables.ablated({"dlcp_pacing": "shared_band", **queue}),
                         ["dlcp-pacing shared-band"])
        self.assertEqual(
            tables.ablated({"dlcp_pacing": "shared_band", "eligible_threshold": "port"}),
            ["eligible-threshold port", "dlcp-pacing shared-band"])

    def test_a_document_without_the_threshold_key_compared_the_port(self):
        self.assertEqual(tables.ablated({"dlcp_drop_precedence": True}),
                         ["eligible-threshold port"])


class ArithmeticTest(unittest.TestCase):
    def test_change_is_signed_percent(self):
        self.assertEqual(tables.change(4.0, 8.0), "-50.0%")
        self.assertEqual(tables.change(9.0, 8.0), "+12.5%")
        self.assertEqual(tables.change(8.0, 8.0), "+0.0%")

    def test_versus_dctcp_as_dlcp_sim_computes_it(self):
        # The stored ring document: dlcp 7.92578 ms and 53.607 us, DCTCP 17.1215 ms and 42.163 us
        # give dlcp-sim's own 2.16023x and -27.1423%.
        speedup, lower = tables.versus_dctcp(result(7.92578, 53.607), result(17.1215, 42.163))
        self.assertAlmostEqual(speedup, 2.16023, places=5)
        self.assertAlmostEqual(lower, -27.1423, places=4)


class AblationRowsTest(unittest.TestCase):
    def test_rows_compare_with_the_setting_without_ablations_and_its_dctcp(self):
        reference = document({}, {"dlcp": result(8.0, 50.0), "dctcp": result(16.0, 40.0)})
        alone = document({"best_effort_shared": False},
                         {"dlcp": result(4.0, 6.0, refused=3, marks=1234, resent=5)})
        other_seed = document({}, {"dlcp": result(2.0, 10.0)}, seed=2)
        per_port = document({"eligible_threshold": "port"}, {"dlcp": result(6.0, 40.0)})
        paced = document({"dlcp_pacing": "shared_band"}, {"dlcp": result(8.0, 30.0)})
        rows = tables.ablation_rows(
            [("a", alone), ("b", reference), ("c", other_seed), ("d", per_port), ("e", paced)])
        self.assertEqual(rows, [
            "| ring_allreduce | 16 | 1 | none | 8.00 | 50 | 1000 | 0 | 0 | 0 | 2.00x | -25.0% |",
            "| ring_allreduce | 16 | 1 | `best-effort-sharing` | 4.00 (-50.0%) | 6 (-88.0%) "
            "| 1000 | 3 | 1,234 | 5 | 4.00x | 85.0% |",
            "| ring_allreduce | 16 | 1 | `dlcp-pacing shared-band` | 8.00 (+0.0%) | 30 (-40.0%) "
            "| 1000 | 0 | 0 | 0 | 2.00x | 25.0% |",
            "| ring_allreduce | 16 | 1 | `eligible-threshold port` | 6.00 (-25.0%) | 40 (-20.0%) "
            "| 1000 | 0 | 0 | 0 | 2.67x | 0.0% |",
            "| ring_allreduce | 16 | 2 | none | 2.00 | 10 | 1000 | 0 | 0 | 0 | - | - |",
        ])

    def test_a_setting_without_its_reference_is_refused(self):
        alone = document({"best_effort_shared": False}, {"dlcp": result(4.0, 6.0)})
        with self.assertRaises(SystemExit) as raised:
            tables.ablation_rows([("alone.json", alone)])
        self.assertIn("alone.json: no document without ablations", str(raised.exception))

    def test_two_documents_for_one_setting_are_refused(self):
        first = document({}, {"dlcp": result(8.0, 50.0)})
        with self.assertRaises(SystemExit) as raised:
            tables.ablation_rows([("a.json", first), ("b.json", first)])
        self.assertIn("b.json: a second document with `none`", str(raised.exception))


def iteration_result(p50, p99, fct_p99=5000.0, rounds=3, wall_s=10.0):
    return {"iteration_ms": {"p50": p50, "p99": p99, "mean": p50},
            "gradient_fct_us": {"p99": fct_p99}, "dlcp": {"missing_reports": rounds},
            "wall_s": wall_s}


def two_site_document(results, rtt_ms=10, budget=0.01, parity=0, seed=1):
    config = {"hosts": 16, "collective": "parameter_server", "seed": seed, "loss_budget": budget,
              "long_link": {"rtt_ms": rtt_ms, "gbps": 200, "random_loss": 0, "burst_loss": 0.01,
                            "burst_length": 4}}
    if parity:
        config["dlcp_parity_members"] = parity
    return {"config": config, "results": results}


class LongLinkRowsTest(unittest.TestCase):
    def test_shares_are_the_time_without_the_mechanism_over_the_time_with_it(self):
        base = two_site_document({"dlcp": iteration_result(40.0, 80.0, rounds=1234),
                                  "dctcp": iteration_result(100.0, 160.0, fct_p99=20000.0,
                                                            wall_s=30.0)})
        no_budget = two_site_document({"dlcp": iteration_result(50.0, 80.0)}, budget=0)
        parity = two_site_document({"dlcp": iteration_result(32.0, 100.0)}, parity=8)
        two_ms = two_site_document({"dlcp": iteration_result(5.0, 6.0)}, rtt_ms=2)
        rows = tables.long_link_rows(
            [("p", parity), ("n", no_budget), ("b", base), ("t", two_ms)])
        self.assertEqual(rows, [
            "| 16 | ps | 2 | 1% in bursts of 4 | 1 | 5.00 / 6.00 | - | 5000 | - | 3 | - | - | - "
            "| 10 |",
            "| 16 | ps | 10 | 1% in bursts of 4 | 1 | 40.00 / 80.00 | 100.00 / 160.00 | 5000 "
            "| 20000 | 1,234 | 2.50x | 1.25x / 1.00x | 1.25x / 0.80x | 10 / 30 |",
        ])

    def test_loss_patterns_read_as_the_docs_write_them(self):
        self.assertEqual(tables.loss_pattern(
            {"burst_loss": 0.01, "burst_length": 4, "random_loss": 0}), "1% in bursts of 4")
        self.assertEqual(tables.loss_pattern(
            {"burst_loss": 0, "burst_length": 4, "random_loss": 0.005}), "0.5% random")

    def test_a_setting_without_its_base_document_is_refused(self):
        with self.assertRaises(SystemExit) as raised:
            tables.long_link_rows(
                [("n.json", two_site_document({"dlcp": iteration_result(1, 2)}, budget=0))])
        self.assertIn("n.json: no document with the default budget", str(raised.exception))


if __name__ == "__main__":
    unittest.main()
