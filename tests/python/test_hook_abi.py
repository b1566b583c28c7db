"""dlcp's PyTorch integration needs no libtorch ABI: the backend and the DDP communication hook
run on dlcp._core and torch's Python API, with any dlcp._torch made unimportable (earlier releases
had a libtorch extension of that name), no module imports one, and _core links no libtorch."""

import ast
import glob
import os
import subprocess
import tempfile
import unittest

import torch

from test_ddp import launch

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE = os.path.join(HERE, "..", "..", "python", "dlcp")


def module_level_imports(source):
    """(module, name) of every import that runs when the module is imported: at top level or
    under a top-level if/try, not inside a function."""
    found = []
    pending = list(ast.parse(source).body)
    while pending:
        node = pending.pop()
        if isinstance(node, ast.Import):
            found += [(alias.name, None) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            module = "." * node.level + (node.module or "")
            found += [(module, alias.name) for alias in node.names]
        elif isinstance(node, (ast.If, ast.Try, ast.With)):
            for field in ("body", "orelse", "finalbody", "handlers"):
                pending += getattr(node, field, [])
        elif isinstance(node, ast.ExceptHandler):
            pending += node.body
    return found


def imports_extension(source):
    return any(
        module.endswith("_torch") or name == "_torch" for module, name in module_level_imports(source)
    )


def hook_modules():
    """The hook's module and every dlcp module it imports, transitively (package files)."""
    seen, pending = set(), [os.path.join(PACKAGE, "torch", "hook.py")]
    while pending:
        path = os.path.normpath(pending.pop())
        if path in seen or not os.path.exists(path):
            continue
        seen.add(path)
        with open(path) as file:
            imports = module_level_imports(file.read())
        directory = os.path.dirname(path)
        for module, name in imports:
            if not module.startswith("."):
                continue
            dots = len(module) - len(module.lstrip("."))
            base = directory
            for _ in range(dots - 1):
                base = os.path.dirname(base)
            parts = [p for p in module.lstrip(".").split(".") if p]
            target = os.path.join(base, *parts)
            pending.append(target + ".py")
            if name:
                pending.append(os.path.join(target, name + ".py"))
    return sorted(seen)


class HookAbiTest(unittest.TestCase):
    def test_the_import_check_sees_every_form(self):
        self.assertTrue(imports_extension("from .. import _torch\n"))
        self.assertTrue(imports_extension("import dlcp._torch\n"))
        self.assertTrue(imports_extension("try:\n    from dlcp import _torch\nexcept ImportError:\n    pass\n"))
        self.assertFalse(imports_extension("def f():\n    from .. import _torch\n"))
        self.assertFalse(imports_extension("from .. import _core\n"))

    def test_no_hook_module_imports_the_extension(self):
        modules = hook_modules()
        names = [os.path.basename(path) for path in modules]
        for expected in ("hook.py", "store.py", "options.py", "layers.py", "metrics.py"):
            self.assertIn(expected, names)
        for path in modules:
            with open(path) as file, self.subTest(module=path):
                self.assertFalse(imports_extension(file.read()), f"{path} imports dlcp._torch")

    def test_no_package_module_imports_the_extension(self):
        modules = glob.glob(os.path.join(PACKAGE, "**", "*.py"), recursive=True)
        self.assertIn("process_group.py", [os.path.basename(path) for path in modules])
        for path in modules:
            with open(path) as file, self.subTest(module=path):
                self.assertFalse(imports_extension(file.read()), f"{path} imports dlcp._torch")

    def test_core_links_no_libtorch(self):
        import dlcp._core

        needed = subprocess.run(["readelf", "-d", dlcp._core.__file__], capture_output=True,
                                text=True, check=True).stdout
        self.assertIn("NEEDED", needed)
        self.assertNotIn("torch", needed)

    def test_hook_trains_without_the_extension(self):
        with tempfile.TemporaryDirectory() as output:
            ranks = launch(2, None, output, worker="hook_worker.py")
        resynced = [parameters["resynced"] for parameters, _ in ranks]
        for rank, (parameters, report) in enumerate(ranks):
            with self.subTest(rank=rank, check="the backend works with no extension"):
                self.assertFalse(report["extension_loaded"])
                self.assertEqual(report["backend_error"], "")
                self.assertEqual(report["backend_sum"], 3.0)
            with self.subTest(rank=rank, check="budget 0 matches gloo"):
                torch.testing.assert_close(parameters["hook"], parameters["gloo"],
                                           rtol=1e-5, atol=1e-6)
                self.assertEqual(report["hook"]["delivered_fraction"], 1.0)
                self.assertGreater(report["hook"]["buckets"], 0)
                # Through dlcp's transport: UDP, or shared memory between ranks of one host.
                transport = report["hook"]["transport"]
                self.assertGreater(transport["datagrams_sent"] + transport["local_messages_sent"], 0)
            with self.subTest(rank=rank, check="lossy hook loses within its budget"):
                self.assertLess(report["hook_lossy"]["delivered_fraction"], 1.0)
                self.assertGreater(report["hook_lossy"]["delivered_fraction"], 0.85)
                self.assertGreater(report["hook_lossy"]["resyncs"], 0)
                self.assertTrue(torch.equal(resynced[rank], resynced[0]))


if __name__ == "__main__":
    unittest.main()
