"""The example plugin pip-installed for real, and the command line driven in that environment.

Once per module: ``examples/plugin`` and a broken plugin made here (one entry point whose import fails,
one that registers a built-in's name) are built into wheels by the interpreter running the suite
(``pip wheel --no-build-isolation``: setuptools and wheel come from the ``test`` extra), then installed
with ``pip install --no-deps`` into a new virtual environment that sees the running interpreter's
site-packages (the engine's dependencies) and this checkout first on its path. It works the same
whether the suite runs in a venv or in the system interpreter, and uses no network. Every command
then runs as ``<venv>/bin/python -m policy_scheduler.cli``.
"""

from __future__ import annotations

import json
import os
import shutil
import site
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from policy_scheduler.offline.examples import default_cluster_path

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "plugin"
CLUSTER = ["--cluster", str(default_cluster_path()), "--cluster", str(EXAMPLE / "cluster")]
POLICY = ["--policy-config-file", str(EXAMPLE / "policy.json")]
RACK_REASON = "node(s) didn't match the pod's rack annotation"

EXAMPLE_SOURCE = {
    "distribution": "policy-scheduler-example-plugin",
    "version": "0.1.0",
    "entry_point": "policy_scheduler.predicates:rack-annotation",
    "value": "policy_scheduler_example_plugin:register_predicates",
}
BROKEN_IMPORT = ("plugin policy_scheduler.predicates:gpu-rack = broken_plugin.gpu:register "
                 "(policy-scheduler-broken-plugin 1.0) failed to load: "
                 "ModuleNotFoundError: No module named 'policy_scheduler_gpu_support'")
BROKEN_DUPLICATE = ("plugin policy_scheduler.predicates:strict-resources = broken_plugin.strict:register "
                    "(policy-scheduler-broken-plugin 1.0) failed to load: "
                    'RegistryError: predicate "PodFitsResources" is already registered (built-in); '
                    "a plugin cannot replace it")

BROKEN_FILES = {
    "pyproject.toml": """
        [build-system]
        requires = ["setuptools>=61", "wheel"]
        build-backend = "setuptools.build_meta"
        """,
    "setup.cfg": """
        [metadata]
        name = policy-scheduler-broken-plugin
        version = 1.0

        [options]
        packages = broken_plugin

        [options.entry_points]
        policy_scheduler.predicates =
            gpu-rack = broken_plugin.gpu:register
            strict-resources = broken_plugin.strict:register
        """,
    "broken_plugin/__init__.py": "",
    "broken_plugin/gpu.py": """
        import policy_scheduler_gpu_support  # not installed: the import fails

        def register(registry):
            registry.register_fit_predicate("GpuRack", policy_scheduler_gpu_support.gpu_rack)
        """,
    "broken_plugin/strict.py": """
        def strict(pod, meta, node_info):
            return True, []

        def register(registry):
            registry.register_fit_predicate("StrictResources", strict)
            registry.register_fit_predicate("PodFitsResources", strict)  # taken: the plugin is refused
        """,
}


def _build_backend_available() -> bool:
    import importlib.util

    try:
        import setuptools
    except ImportError:
        return False
    major, minor = (int(x) for x in setuptools.__version__.split(".")[:2])
    return (major, minor) >= (70, 1) or importlib.util.find_spec("wheel") is not None


@pytest.fixture(scope="module")
def venv(tmp_path_factory) -> Path:
    assert _build_backend_available(), (
        "building the example plugin offline needs setuptools with wheel (pip install -e '.[test]')"
    )
    tmp = tmp_path_factory.mktemp("plugin-venv")
    # Build from copies, so the source tree gets no build/ or egg-info.
    example = shutil.copytree(EXAMPLE, tmp / "example-plugin", ignore=shutil.ignore_patterns(
        "tests", "cluster", "__pycache__", "build", "*.egg-info", ".pytest_cache"))
    broken = tmp / "broken-plugin"
    for name, text in BROKEN_FILES.items():
        (broken / name).parent.mkdir(parents=True, exist_ok=True)
        (broken / name).write_text(textwrap.dedent(text))
    # Wheels built by the interpreter running the suite, whose build backend the test extra installs
    # (a venv or the system interpreter alike); installing a wheel then needs no backend.
    wheels = tmp / "wheels"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "--no-index",
         "--disable-pip-version-check", "-w", str(wheels), str(example), str(broken)],
        check=True, capture_output=True, text=True, cwd=tmp,
    )
    env_dir = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env_dir)], check=True)
    python = env_dir / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             check=True, capture_output=True, text=True).stdout.strip()
    # The venv sees what the running interpreter sees (the engine's dependencies and pip), after its own
    # site-packages, with this checkout first of all (an installed copy of policy-scheduler elsewhere
    # must not win). .pth files run in name order; an "import" line runs, so the running
    # interpreter's site directories are added with their own .pth files processed.
    (Path(purelib) / "00_policy_scheduler_checkout.pth").write_text(f"{ROOT}\n")
    site_dirs = [*site.getsitepackages(), *([site.getusersitepackages()] if site.ENABLE_USER_SITE else [])]
    (Path(purelib) / "01_suite_site_packages.pth").write_text(
        f"import site; list(map(site.addsitedir, {site_dirs!r}))\n")
    subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--disable-pip-version-check",
         *map(str, sorted(wheels.glob("*.whl")))],
        check=True, capture_output=True, text=True, cwd=tmp,
    )
    return python


def cli(python: Path, *args: str, check_exit: int | None = 0) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    result = subprocess.run([str(python), "-m", "policy_scheduler.cli", *args], capture_output=True, text=True,
                            env=env, cwd=python.parent, timeout=60)
    if check_exit is not None:
        assert result.returncode == check_exit, result.stdout + result.stderr
    return result


def warnings_of(result: subprocess.CompletedProcess) -> list[str]:
    return [line for line in result.stderr.splitlines() if line.startswith("W ")]


def test_the_venv_runs_this_checkout_and_the_installed_plugin(venv):
    code = ("import policy_scheduler, policy_scheduler_example_plugin as p; "
            "print(policy_scheduler.__file__); print(p.__file__)")
    out = subprocess.run([str(venv), "-c", code], check=True, capture_output=True, text=True, cwd=venv.parent).stdout
    engine, plugin = out.splitlines()
    assert Path(engine).is_relative_to(ROOT)
    assert not Path(plugin).is_relative_to(ROOT)  # the installed copy, not the source directory


def test_listings_show_the_distribution_of_each_name(venv):
    result = cli(venv, "predicates", "-o", "json")
    rows = {row["name"]: row for row in json.loads(result.stdout)}
    assert rows["PodAnnotationMatchesNodeLabel"]["source"] == EXAMPLE_SOURCE
    assert rows["PodAnnotationMatchesNodeLabel"]["providers"] == ["ExampleProvider"]
    assert rows["PodFitsResources"]["source"] == "built-in"  # the duplicate was refused
    assert "StrictResources" not in rows and "GpuRack" not in rows
    # The broken plugins are warnings naming entry point and distribution; the command goes on.
    assert [w.split("] ", 1)[1] for w in warnings_of(result)] == [
        f"{BROKEN_IMPORT}; continuing without it", f"{BROKEN_DUPLICATE}; continuing without it"
    ]

    priorities = {row["name"]: row for row in json.loads(cli(venv, "priorities", "-o", "json").stdout)}
    assert priorities["PreferLabelledRack"]["source"]["entry_point"] == "policy_scheduler.priorities:labelled-rack"
    assert priorities["PreferLabelledRack"]["weight"] == 1
    providers = json.loads(cli(venv, "providers", "-o", "json").stdout)
    assert providers["ExampleProvider"]["source"]["distribution"] == "policy-scheduler-example-plugin"
    assert providers["DefaultProvider"]["source"] == "built-in"
    assert set(providers["ExampleProvider"]["predicates"]) == set(providers["DefaultProvider"]["predicates"]) | {
        "PodAnnotationMatchesNodeLabel"}

    table = cli(venv, "predicates").stdout
    assert ("PodAnnotationMatchesNodeLabel  [ExampleProvider]  from policy-scheduler-example-plugin 0.1.0 "
            "(policy_scheduler.predicates:rack-annotation)") in table.splitlines()


def test_simulate_with_a_policy_naming_the_plugin(venv):
    result = cli(venv, "simulate", *CLUSTER, *POLICY, "--scheduler-name", "rack-scheduler", "-o", "json")
    placements = {p["pod"]: p for p in json.loads(result.stdout)["placements"]}
    assert placements["racked/wants-rack-b"]["node"] == "rack-b-01"
    assert placements["racked/any-rack"]["node"] in {"rack-a-01", "rack-b-01"}  # PreferLabelledRack
    assert placements["racked/wants-rack-c"]["node"] is None
    assert placements["racked/wants-rack-c"]["error"] == (
        f"0/14 nodes are available: 1 NodeNotReady, 1 NodeUnschedulable, 14 {RACK_REASON}, 3 PodToleratesNodeTaints."
    )


def test_explain_shows_the_plugin_reason_and_score(venv):
    table = cli(venv, "explain", "racked/wants-rack-c", *CLUSTER, *POLICY).stdout
    assert f"14 {RACK_REASON}" in table.splitlines()[0]
    assert f"PodAnnotationMatchesNodeLabel: {RACK_REASON}" in table
    data = json.loads(cli(venv, "explain", "racked/wants-rack-b", *CLUSTER, *POLICY, "-o", "json").stdout)
    assert data["host"] == "rack-b-01"
    nodes = data["nodes"]
    assert nodes["rack-a-01"]["predicates"]["PodAnnotationMatchesNodeLabel"]["reasons"] == [RACK_REASON]


def test_the_plugin_provider_by_name(venv):
    result = cli(venv, "simulate", *CLUSTER, "--algorithm-provider", "ExampleProvider",
                 "--scheduler-name", "rack-scheduler", "-o", "json")
    placements = {p["pod"]: p["node"] for p in json.loads(result.stdout)["placements"]}
    assert placements["racked/wants-rack-b"] == "rack-b-01"
    assert placements["racked/wants-rack-c"] is None
    data = json.loads(cli(venv, "explain", "racked/any-rack", *CLUSTER, "--algorithm-provider", "ExampleProvider",
                          "-o", "json").stdout)
    assert data["host"] in {"rack-a-01", "rack-b-01"}


def test_a_name_only_a_failed_plugin_could_have_provided_is_fatal(venv, tmp_path):
    policy = tmp_path / "strict.json"
    policy.write_text(json.dumps({"kind": "Policy", "apiVersion": "v1", "predicates": [{"name": "StrictResources"}]}))
    result = cli(venv, "simulate", *CLUSTER, "--policy-config-file", str(policy), check_exit=2)
    [error] = [line for line in result.stderr.splitlines() if not line.startswith("W ")]
    assert error == (f"error: {policy}: couldn't create scheduler from policy: Invalid configuration: Predicate type "
                     f"not found for StrictResources; {BROKEN_IMPORT}; {BROKEN_DUPLICATE}")
    assert result.stdout == ""

    result = cli(venv, "policy", "validate", str(policy), check_exit=2)
    assert "predicates[0].name: Invalid configuration: Predicate type not found for StrictResources; " \
           f"{BROKEN_IMPORT}; {BROKEN_DUPLICATE}" in result.stderr

    # run stops at start-up, exit 1, before it talks to the (unreachable) API server.
    result = cli(venv, "run", "--master", "http://127.0.0.1:9", "--leader-elect=false", "--port=-1",
                 "--policy-config-file", str(policy), check_exit=1)
    assert "Predicate type not found for StrictResources; plugin policy_scheduler.predicates:gpu-rack" in result.stderr
